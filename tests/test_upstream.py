"""The upstream resolver over real transports: smart HTTP on 127.0.0.1, bundles."""

from __future__ import annotations

import json
import os

import pytest

from tests.builders import Upstream, git
from tests.git_http_server import serving


@pytest.fixture
def http_upstream(upstream: Upstream):
    """`git http-backend` on 127.0.0.1 (a real smart-HTTP remote)."""
    with serving(upstream.path) as url:
        yield url


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the CGI server needs fork")
def test_verify_fetches_only_the_pin_over_http(cli, project, tmp_path, http_upstream,
                                                monkeypatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("PATCHCTL_CACHE_DIR", str(cache))
    r = cli("-C", str(project), "verify", "--upstream", http_upstream, "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["ok"] is True
    (clone,) = (cache / "upstreams").iterdir()
    assert git(clone, "config", "remote.origin.partialclonefilter").strip() == "blob:none"
    assert git(clone, "rev-parse", "--is-bare-repository").strip() == "true"
    again = cli("-C", str(project), "verify", "--upstream", http_upstream)
    assert again.code == 0


def test_pin_missing_on_the_http_remote(cli, project, tmp_path, http_upstream,
                                        monkeypatch) -> None:
    monkeypatch.setenv("PATCHCTL_CACHE_DIR", str(tmp_path / "cache"))
    pin_file = project / "stack/upstream.toml"
    text = pin_file.read_text()
    old = text.split('commit = "', 1)[1].split('"', 1)[0]
    pin_file.write_text(text.replace(old, "1" * 40))
    r = cli("-C", str(project), "verify", "--upstream", http_upstream)
    assert r.code == 2, r.err
    assert "1111111111111111111111111111111111111111 is not in upstream" in r.err


def test_bundle_upstream(cli, project, upstream, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATCHCTL_CACHE_DIR", str(tmp_path / "cache"))
    bundle = tmp_path / "up.bundle"
    git(upstream.path, "bundle", "create", "-q", str(bundle), "master")
    assert cli("-C", str(project), "verify", "--upstream", str(bundle)).code == 0
    junk = tmp_path / "junk.bundle"
    junk.write_text("not a bundle\n")
    r = cli("-C", str(project), "verify", "--upstream", str(junk))
    assert r.code == 2 and "neither a git repository nor a git bundle" in r.err


@pytest.fixture
def stalled_server():
    """A git:// 'server' on 127.0.0.1 that accepts connections and never answers."""
    import socket
    import threading

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(sock.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield sock.getsockname()[1]
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    sock.close()


def test_a_stalled_git_protocol_upstream_times_out(cli, project, upstream, stalled_server,
                                                    monkeypatch) -> None:
    """Bug: a stalled git:// upstream hung forever (only HTTP had a limit)."""
    import time

    pin = project / "stack/upstream.toml"
    pin.write_text(pin.read_text().replace(f'url = "{upstream.path}"',
                                           f'url = "git://127.0.0.1:{stalled_server}/up.git"'))
    monkeypatch.setenv("PATCHCTL_NETWORK_TIMEOUT", "2")
    started = time.monotonic()
    r = cli("-C", str(project), "verify")
    assert time.monotonic() - started < 30
    assert r.code == 3, r.out + r.err
    assert "PATCHCTL_NETWORK_TIMEOUT" in r.err and len(r.err.strip().splitlines()) == 1
