"""The upstream resolver over real transports: smart HTTP on 127.0.0.1, bundles."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.builders import Upstream, git


@pytest.fixture
def http_upstream(tmp_path: Path, upstream: Upstream):
    """`git http-backend` behind Python's CGI server on 127.0.0.1 (a real smart-HTTP remote)."""
    # The CGI child runs as `nobody` when the tests run as root, and pytest's tmp
    # dirs are private: serve from a world-readable temp dir instead.
    root = Path(tempfile.mkdtemp(prefix="patchctl-www-"))
    root.chmod(0o755)
    repos = root / "repos"
    subprocess.run(["git", "clone", "-q", "--bare", str(upstream.path), str(repos / "up.git")],
                   check=True)
    for key, value in (("uploadpack.allowFilter", "true"),
                       ("uploadpack.allowAnySHA1InWant", "true")):
        git(repos / "up.git", "config", key, value)
    cgi = root / "cgi-bin"
    cgi.mkdir(parents=True)
    script = cgi / "git"
    # Run as root, the CGI server drops to `nobody`: trust the repo and use a neutral HOME.
    script.write_text(
        "#!/bin/sh\n"
        f"export GIT_PROJECT_ROOT={repos} GIT_HTTP_EXPORT_ALL=1 HOME=/tmp\n"
        "export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=safe.directory GIT_CONFIG_VALUE_0='*'\n"
        "exec git http-backend\n"
    )
    script.chmod(0o755)
    for p in [root, *root.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o005 | (0o010 if p.is_dir() else 0))
    server = subprocess.Popen([sys.executable, str(Path(__file__).with_name("git_http_server.py")),
                               str(root)], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        yield f"http://127.0.0.1:{port}/cgi-bin/git/up.git"
    finally:
        server.kill()
        server.wait()
        shutil.rmtree(root, ignore_errors=True)


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
    """Bug (issue 9.8): a stalled git:// upstream hung forever (only HTTP had a limit)."""
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
