"""The benches' relay (bench/_relay.py) and its `--link RTT_MS:MBIT` model,
measured against a real echo server on 127.0.0.1."""

from __future__ import annotations

import contextlib
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from _relay import (
    Counter,
    Link,
    Relays,
    echo_rtt,
    link_fidelity,
    parse_link,
    parse_profile,
    profile_label,
    start_echo,
)


@pytest.fixture
def echo_port() -> Iterator[int]:
    srv = start_echo()
    yield srv.getsockname()[1]
    srv.close()


def relayed(link: Link | None, port: int, size: int) -> float:
    relays = Relays(link)
    try:
        rport, counter = relays.add(port)
        seconds = echo_rtt(rport, 1, size)[0]
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


def test_link_fidelity_measures_the_model_it_never_beats() -> None:
    """The bench's record of how closely the relays model a link: a 4 KiB round trip
    through a 10 ms, 100 Mbit/s link takes at least the model's 10 ms plus 0.33 ms of
    serialising each way (a relay that delivered early would make every design look
    faster than the network it claims), and the excess is what was measured above it."""
    f = link_fidelity(Link(10, 100), n=3)
    assert f["bytes"] == 4096
    assert f["model_rtt_ms"] == pytest.approx(10 + 2 * 4096 * 8 / 100e6 * 1e3, abs=1e-3)
    assert f["measured_rtt_ms"] >= f["model_rtt_ms"], f
    assert f["excess_ms"] == pytest.approx(f["measured_rtt_ms"] - f["model_rtt_ms"], abs=2e-3)


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


def test_relay_counts_requests_not_reads(echo_port: int) -> None:
    """Round trips per token are what a link's latency prices. Three
    request/reply exchanges on one connection count three, and a second connection's
    exchange one more; bytes alone would not tell three requests from one. A reply that
    comes back on another connection, as a chain's last stage answers its driver, is
    half a round trip per one-way trip: sent up two relays, back down a third, 1.5."""
    relays = Relays(None)
    try:
        rport, counter = relays.add(echo_port)
        echo_rtt(rport, 3)  # three exchanges on one connection
        echo_rtt(rport, 1)  # one on another
    finally:
        relays.close()
    assert counter.round_trips == 4, counter
    assert counter.up == counter.down == 4 * 64


@pytest.mark.parametrize(("text", "label"), [("loopback", "loopback"), ("1:1000", "1ms"),
                                             ("20:100", "20ms"), ("0.5:1000", "0.5ms")])
def test_profiles_parse_and_name_their_targets(text: str, label: str) -> None:
    assert profile_label(parse_profile(text)) == label


@contextlib.contextmanager
def two_links(**named: str | None) -> Iterator[tuple[socket.socket, socket.socket,
                                                     socket.socket, socket.socket, list[Counter]]]:
    """Two listening processes, each behind a relay given `named` (owner= or client=),
    one connection through each: (client end a, client end b, server end a, server end b,
    the relays' counters), all closed afterwards."""
    listeners = [socket.create_server(("127.0.0.1", 0)) for _ in range(2)]
    relays = Relays(None)
    try:
        (pa, ca), (pb, cb) = (relays.add(s.getsockname()[1], **named) for s in listeners)
        with socket.create_connection(("127.0.0.1", pa), timeout=30) as a, \
                socket.create_connection(("127.0.0.1", pb), timeout=30) as b:
            sa, sb = (s.accept()[0] for s in listeners)
            with sa, sb:
                yield a, b, sa, sb, [ca, cb]
    finally:
        relays.close()
        for s in listeners:
            s.close()


def test_relay_counts_a_reply_on_another_connection() -> None:
    """A direct chain's last stage answers its driver on a link of its own: the driver's
    request up one relay, the answer down a second, the next request up the first again
    are three one-way trips (1.5 round trips); two writes in a row, nothing reaching the
    writer between them, are one."""
    with two_links(owner="last stage", client="driver") as (a, b, sa, sb, counters):
        for _ in range(2):
            a.sendall(b"z" * 32)
            time.sleep(0.1)
        assert sa.recv(64)
        sb.sendall(b"r" * 8)  # the answer, on the other link
        assert b.recv(64)
        a.sendall(b"z" * 32)  # the next request, caused by the answer
        assert sa.recv(64)
    assert [c.trips for c in counters] == [2, 1], counters


@pytest.mark.parametrize(("owner", "trips"), [("last stage", 3), (None, 4)])
def test_what_one_process_sends_on_two_links_at_once_is_one_trip(owner: str | None,
                                                                 trips: int) -> None:
    """A ring's last stage feeds its first stage and answers its driver at once: with
    both its listeners' relays given one owner, the two writes are one trip, then the
    peer's next request another (3 in all with the first request); without an owner each
    write is a trip of its own (4)."""
    with two_links(owner=owner) as (a, b, sa, sb, counters):
        a.sendall(b"q" * 32)  # a request up relay a
        assert sa.recv(64)
        sa.sendall(b"t" * 8)  # the process answers on both links, back to back
        sb.sendall(b"r" * 8)
        assert a.recv(64) and b.recv(64)
        a.sendall(b"q" * 32)  # the next request
        assert sa.recv(64)
    assert sum(c.trips for c in counters) == trips, counters


@pytest.mark.parametrize(("client", "trips"), [("llama-bench", 3), (None, 4)])
def test_what_one_client_sends_on_two_connections_at_once_is_one_trip(client: str | None,
                                                                      trips: int) -> None:
    """llama-bench writes to each RPC server in turn before any answers: with both
    servers' relays given one client, the two writes are one trip, then the servers'
    answers one each (3); without a client each write is a trip of its own (4). The
    trips of such a run no longer depend on how the writes interleave."""
    with two_links(client=client) as (a, b, sa, sb, counters):
        a.sendall(b"g" * 32)  # the client writes to both, back to back
        b.sendall(b"g" * 32)
        assert sa.recv(64) and sb.recv(64)
        sa.sendall(b"r" * 8)  # each server answers, one after the other
        assert a.recv(64)
        sb.sendall(b"r" * 8)
        assert b.recv(64)
    assert sum(c.trips for c in counters) == trips, counters
