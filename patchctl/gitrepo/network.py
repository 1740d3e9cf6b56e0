"""Fetching from an upstream over the network: the one home of every ``git fetch`` patchctl
starts, which ends, with an answer, whatever the server does.

A fetch is a partial one (``--filter=blob:none``: a llama.cpp pin costs its trees and
commits, the blobs come later, lazily) only from a server that speaks git's own protocol.
A plain ("dumb") HTTP server, a static host of a bare repository, cannot filter, and git
2.39 in a partial clone that fetches from one recurses without bound (each object the
walker looks up starts a lazy fetch, which walks again). So an http(s) URL is asked first
how it answers, and a plain one is fetched whole, never as a partial clone. Every fetch
runs in a process group of its own that its deadline, a flood of processes (``procs``) or
an interrupt ends whole.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

from patchctl import procs
from patchctl.errors import EnvironmentFailure, InputError
from patchctl.gitrepo.core import (
    _argv,
    _decode,
    _git_failures,
    network_timeout,
    refuse_option,
    resolve_commit,
    run_git,
    user_config_env,
)
from patchctl.toolout import reason

# A transfer under 1 byte/s for a minute fails instead of waiting for the deadline.
_STALL = {"GIT_HTTP_LOW_SPEED_LIMIT": "1", "GIT_HTTP_LOW_SPEED_TIME": "60"}
_NOT_THERE = ("not our ref", "couldn't find remote ref", "no such remote ref")


def answers_plain_http(url: str) -> bool:
    """Whether ``url`` is an http(s) server that answers without git's protocol (a static
    file host): asked with one ``git ls-remote`` outside any repository, whose packet
    trace is empty when the server spoke plain HTTP."""
    if not url.lower().startswith(("http://", "https://")):
        return False
    with tempfile.TemporaryDirectory(prefix="patchctl-probe-") as nowhere:
        argv = _argv(["ls-remote", "--end-of-options", url, "HEAD"], None)
        env = user_config_env() | _STALL | {"GIT_TRACE_PACKET": "1", "LC_ALL": "C"}
        with _git_failures(["ls-remote", url], network_timeout()):
            done = procs.run(argv, env=env, cwd=nowhere, timeout=network_timeout())
    said = _decode(done.stderr)
    if done.returncode != 0:
        raise EnvironmentFailure(f"cannot reach upstream {url}: {reason(said)}; check the URL "
                                 "and network, or pass --upstream PATH")
    return "packet:" not in said


def is_partial(repo: Path) -> bool:
    """Whether ``repo`` fetches missing objects lazily (a promisor remote is configured)."""
    r = run_git(["config", "--get-regexp", r"^remote\..*\.promisor$"], repo=repo, check=False)
    return any(line.split()[-1] == "true" for line in r.stdout.splitlines())


def fetch(repo: Path, url: str, refs: Sequence[str], *, partial: bool,
          progress: Callable[[str], None] | None = None) -> bool:
    """Fetch ``refs`` from the remote ``origin`` of ``repo`` (whose URL is ``url``, for
    messages); ``partial``: without blobs. False when the server has none of ``refs``;
    EnvironmentFailure when the fetch fails otherwise, stalls past the network timeout
    (``$PATCHCTL_NETWORK_TIMEOUT``), or floods."""
    args = ["fetch", "--progress", "--no-tags", *(["--filter=blob:none"] if partial else []),
            "--end-of-options", "origin", *refs]
    argv = _argv(args, repo)
    # The user's config is read here on purpose (proxies, credentials, insteadOf); the
    # fixed values of every other git call still apply.
    env = user_config_env() | _STALL | {"LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}
    timeout = network_timeout()
    with tempfile.TemporaryFile() as err:
        shown = _Progress(err, progress)
        with _git_failures(args, timeout):
            done = procs.run(argv, env=env, timeout=timeout, stdout=subprocess.DEVNULL,
                             stderr=err, tick=shown.tick)
        said = _decode(_tail(err.fileno()))
    if done.returncode == 0:
        return True
    if any(s in said.lower() for s in _NOT_THERE):
        return False
    raise EnvironmentFailure(f"cannot fetch from {url}: {reason(said)}; check the URL and "
                             "network, or pass --upstream PATH")


def _tail(fd: int, limit: int = 1 << 20) -> bytes:
    """The last ``limit`` bytes of the file at ``fd``, read without moving its offset."""
    size = os.fstat(fd).st_size
    return os.pread(fd, min(size, limit), max(0, size - limit))


class _Progress:
    """git's progress lines (``Receiving objects:  45% ...``, ended by CR) from its spooled
    stderr, the newest one shown each tick. Read with pread: git writes through the same
    open file, so its offset must not move."""

    def __init__(self, err: IO[bytes], progress: Callable[[str], None] | None) -> None:
        self._fd, self._progress = err.fileno(), progress

    def tick(self) -> None:
        if self._progress is None:
            return
        lines = _decode(_tail(self._fd, 4096)).replace("\r", "\n").split("\n")
        if last := next((ln.strip() for ln in reversed(lines) if ln.strip()), None):
            self._progress(f"fetching: {last}")


_HEX = re.compile(r"^[0-9a-f]{4,40}$")


def fetch_ref(repo: Path, ref: str) -> str | None:
    """Fetch ``ref`` (commit id, tag or branch) from the origin of ``repo`` (the cache
    clone, or a clone the user passed); its commit id, or None when origin lacks it or
    there is no origin. A partial clone stays one, unless the server answers as plain
    HTTP; a whole clone is not made partial by it.

    ``ref`` must be a commit id or a well-formed ref name (never an option: it follows
    ``--end-of-options``); the fetch has the network timeout."""
    refuse_option(ref, "ref")
    if not _HEX.match(ref) and run_git(["check-ref-format", "--allow-onelevel", ref],
                                       check=False).returncode != 0:
        raise InputError(f"{ref!r} is neither a commit id nor a valid ref name")
    url = run_git(["config", "--get", "remote.origin.url"], repo=repo, check=False).stdout.strip()
    if not url:
        return None
    partial = is_partial(repo) and not answers_plain_http(url)
    if not fetch(repo, url, [ref], partial=partial):
        return None
    return resolve_commit(repo, "FETCH_HEAD")
