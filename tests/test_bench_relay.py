"""The benches' relay (bench/_relay.py) and its `--link RTT_MS:MBIT` model (issue 35,
item 3), measured against a real echo server on 127.0.0.1."""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from _relay import Link, Relays, parse_link, start_echo


@pytest.fixture
def echo_port() -> Iterator[int]:
    srv = start_echo()
    yield srv.getsockname()[1]
    srv.close()


def round_trip(port: int, size: int) -> float:
    """Seconds from sending `size` bytes to having them all back."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        t0 = time.perf_counter()
        s.sendall(b"x" * size)
        got = 0
        while got < size:
            chunk = s.recv(1 << 16)
            assert chunk, "the relay closed early"
            got += len(chunk)
        return time.perf_counter() - t0


def relayed(link: Link | None, port: int, size: int) -> float:
    relays = Relays(link)
    try:
        rport, counter = relays.add(port)
        seconds = round_trip(rport, size)
    finally:
        relays.close()
    assert counter.up == size
    return seconds


def test_link_adds_its_round_trip(echo_port: int) -> None:
    """A 64-byte round trip through a 100 ms link takes its 100 ms (each direction
    half of it), and without a link the relay adds no such delay."""
    assert relayed(None, echo_port, 64) < 0.05
    seconds = relayed(Link(100, 1000), echo_port, 64)
    assert 0.1 <= seconds < 0.6, seconds


def test_link_paces_at_its_bandwidth(echo_port: int) -> None:
    """400 KB through an 8 Mbit/s (1 MB/s) link without delay cannot all come back
    before it has been serialised: 0.4 s (the two directions overlap); a loopback
    relay without the model takes milliseconds."""
    size = 400_000
    seconds = relayed(Link(0, 8), echo_port, size)
    assert 0.4 <= seconds < 3.2, seconds


@pytest.mark.parametrize("text", ["", "40", "40:", ":100", "a:b", "-1:100", "40:0", "40:nan"])
def test_bad_link_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="RTT_MS:MBIT"):
        parse_link(text)


def test_link_parses() -> None:
    assert parse_link("0.5:1000") == Link(0.5, 1000.0)
    assert str(parse_link("40:100")) == "40 ms round trip, 100 Mbit/s each way"
