"""A pin fetch ends, with an answer, whatever the server does: plain ("dumb") HTTP, a smart
server that stalls or dies mid-pack, one under load. Each test runs under a watchdog that
counts the processes patchctl has started and fails the test (killing them) past a small
number: before, a plain-HTTP server set off thousands of git processes."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from patchctl import procs
from tests.builders import Upstream, git
from tests.git_http_server import serving

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                                reason="the watchdog counts processes through /proc")


class Watch:
    """The most processes below this one seen at once (the server's aside)."""

    def __init__(self, limit: int) -> None:
        self.limit, self.peak, self.blown = limit, 0, False


def _descendants(root: int, skip: set[int]) -> list[int]:
    """The live processes below ``root`` (zombies that an earlier test left unreaped aside)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_bytes()
            except OSError:
                continue
            state, ppid = stat[stat.rfind(b")") + 2:].split()[:2]
            if state != b"Z":
                children.setdefault(int(ppid), []).append(int(name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in skip:
                found.append(child)
                todo.append(child)
    return found


@contextlib.contextmanager
def watchdog(limit: int, *, spare: Iterator[int] | None = None) -> Iterator[Watch]:
    """Counts this process's descendants ten times a second; past ``limit`` kills them all
    (by group) and marks the watch blown, which fails the test at the end of the block."""
    watch, stop = Watch(limit), threading.Event()
    skip = set(spare or ())

    def look() -> None:
        while not stop.wait(0.05):
            found = _descendants(os.getpid(), skip)
            watch.peak = max(watch.peak, len(found))
            if len(found) > limit or watch.blown:
                watch.blown = True
                for pid in found:
                    _kill(pid)

    thread = threading.Thread(target=look, daemon=True)
    thread.start()
    try:
        yield watch
    finally:
        stop.set()
        thread.join()
    assert not watch.blown, f"more than {limit} processes at once (peak {watch.peak})"


def _kill(pid: int) -> None:
    """``pid`` and, where it leads a group of its own, that group; never this process's
    own group (a git started without a group of its own is in it)."""
    with contextlib.suppress(OSError):
        if os.getpgid(pid) == pid != os.getpgrp():
            os.killpg(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)


def _existing() -> set[int]:
    """What runs below this process before the command: the test servers, and whatever an
    earlier test left; none of it is counted."""
    return set(_descendants(os.getpid(), set()))


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PATCHCTL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PATCHCTL_NETWORK_TIMEOUT", "20")
    return tmp_path / "cache"


def _promisor(repo: Path) -> str:
    return subprocess.run(["git", "-C", str(repo), "config", "remote.origin.promisor"],
                          capture_output=True, text=True, check=False).stdout.strip()


def test_a_plain_http_upstream_is_fetched_whole(cli, project, upstream: Upstream,
                                                 cache: Path) -> None:
    """`verify --upstream http://...` of a static host of a bare repository started an
    unbounded cascade of git processes: the pin is now fetched whole, with no promisor."""
    with serving(upstream.path, "dumb") as url, watchdog(12, spare=_existing()) as w:
        r = cli("-C", str(project), "verify", "--upstream", url)
    assert r.code == 0, r.err
    (clone,) = (cache / "upstreams").iterdir()
    assert _promisor(clone) == ""
    print(f"process peak: {w.peak}")


def test_a_partial_cache_whose_server_turned_plain_stops_with_an_answer(
        cli, project, upstream: Upstream, cache: Path) -> None:
    """A cache made as a partial clone while the server spoke git's protocol, then asked
    for blobs when it answers as plain HTTP (the test suite's CGI server did so under
    load): the lazy fetch recursed without bound. The flood is stopped whole."""
    with serving(upstream.path, "smart") as smart, serving(upstream.path, "dumb") as plain:
        from patchctl.gitrepo import upstream_cache_dir

        repo = upstream_cache_dir(plain)
        repo.parent.mkdir(parents=True)
        git(repo.parent, "init", "-q", "--bare", repo.name)
        git(repo, "remote", "add", "origin", smart)
        git(repo, "fetch", "-q", "--filter=blob:none", "origin", _pin(project))
        git(repo, "remote", "set-url", "origin", plain)
        assert _promisor(repo) == "true"
        with watchdog(procs.MAX_PROCESSES + 40, spare=_existing()) as w:
            began = time.monotonic()
            r = cli("-C", str(project), "verify", "--upstream", plain)
            took = time.monotonic() - began
    assert r.code == 3, (r.code, r.out, r.err)
    assert "processes running at once" in r.err and "dumb" in r.err
    assert len(r.err.strip().splitlines()) == 1
    assert took < 60
    print(f"process peak: {w.peak}, {took:.1f} s")


def test_rebase_pin_on_a_partial_cache_whose_server_turned_plain_stops_with_an_answer(
        cli, project, upstream: Upstream, cache: Path) -> None:
    """The same cache under `rebase-pin --check`, which reads more of the upstream than
    verify (the new pin's tree, renames, the lines it searches, the blobs a merge needs):
    the first read that needs a lazy fetch sets off the same flood, which is stopped whole
    with the one-line answer, and nothing of it outlives the command."""
    from tests.builders import commit_all

    tiny = upstream.path / "src" / "tiny.c"
    tiny.write_text("/* a later upstream commit */\n" + tiny.read_text())
    later = commit_all(upstream.path, "tiny : a later commit")
    with serving(upstream.path, "smart") as smart, serving(upstream.path, "dumb") as plain:
        from patchctl.gitrepo import upstream_cache_dir

        repo = upstream_cache_dir(plain)
        repo.parent.mkdir(parents=True)
        git(repo.parent, "init", "-q", "--bare", repo.name)
        git(repo, "remote", "add", "origin", smart)
        git(repo, "fetch", "-q", "--filter=blob:none", "origin", _pin(project), later)
        git(repo, "remote", "set-url", "origin", plain)
        servers = _existing()
        with watchdog(procs.MAX_PROCESSES + 40, spare=servers) as w:
            began = time.monotonic()
            r = cli("-C", str(project), "rebase-pin", later, "--check", "--upstream", plain)
            took = time.monotonic() - began
        left = _descendants(os.getpid(), servers)  # nothing of the command outlives it
    assert r.code == 3, (r.code, r.out, r.err)  # a lazy fetch set off the flood
    assert "processes running at once" in r.err and len(r.err.strip().splitlines()) == 1
    assert took < 60 and left == [], left
    print(f"process peak: {w.peak}, {took:.1f} s, exit {r.code}")


def _pin(project: Path) -> str:
    text = (project / "stack" / "upstream.toml").read_text()
    return text.split('commit = "', 1)[1].split('"', 1)[0]


@pytest.mark.parametrize("mode", ["stall", "die"])
def test_a_smart_server_that_fails_mid_pack(cli, project, upstream: Upstream, cache: Path,
                                            monkeypatch: pytest.MonkeyPatch,
                                            mode: str) -> None:
    """A server that stops sending a pack (silent, or the connection closed): one line,
    exit 3, within the network timeout, and nothing left running."""
    monkeypatch.setenv("PATCHCTL_NETWORK_TIMEOUT", "4")
    with serving(upstream.path, mode) as url, watchdog(12, spare=(before := _existing())) as w:
        began = time.monotonic()
        r = cli("-C", str(project), "verify", "--upstream", url)
        took = time.monotonic() - began
        time.sleep(0.2)
        left = _descendants(os.getpid(), before)
    assert r.code == 3, (r.code, r.err)
    assert len(r.err.strip().splitlines()) == 1
    assert ("made no end in 4 s" if mode == "stall" else "cannot fetch from") in r.err
    assert took < 15 and left == []
    print(f"process peak: {w.peak}, {took:.1f} s")


def test_the_smart_server_under_load(project, upstream: Upstream, tmp_path: Path) -> None:
    """Several verifies at once, each its own patchctl process and cache, against one
    smart server: every one fetches as a partial clone and passes, none floods."""
    env = {**os.environ, "PATCHCTL_NETWORK_TIMEOUT": "60"}
    with serving(upstream.path) as url, watchdog(60, spare=_existing()) as w:
        runs = [subprocess.Popen(
            [sys.executable, "-m", "patchctl", "-C", str(project), "verify", "--upstream",
             url], env={**env, "PATCHCTL_CACHE_DIR": str(tmp_path / f"cache{i}")},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(6)]
        results = [(p.wait(timeout=120), p.stderr.read() if p.stderr else "") for p in runs]
    assert [code for code, _ in results] == [0] * 6, results
    for i in range(6):
        (clone,) = (tmp_path / f"cache{i}" / "upstreams").iterdir()
        assert _promisor(clone) == "true"
    print(f"process peak: {w.peak}")
