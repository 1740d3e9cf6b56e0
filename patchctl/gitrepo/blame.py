"""Which recent commits last changed given lines of files at one commit (``burden``).

One ``git blame --incremental`` per file, every range of that file as its own ``-L``,
so a file that many patches stand on is blamed once. ``--since`` stops the walk at
the window's edge: a line last changed before it is blamed on the boundary commit
(``boundary`` in git's output) and counts as old, and git never walks years of a
long file's history to name a commit the caller would throw away. The files are
blamed side by side, one git process per core.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from patchctl.gitrepo.core import run_git
from patchctl.untrusted import printable

_ENTRY = re.compile(r"^([0-9a-f]{40}|[0-9a-f]{64}) \d+ (\d+) (\d+)$")


@dataclass(frozen=True)
class BlamedCommit:
    id: str
    subject: str
    time: int  # committer time, seconds since the epoch


@dataclass(frozen=True)
class Blame:
    """Per path, each blamed line that a commit of the window last changed -> that commit's
    id; and the commits themselves. Lines older than the window are left out."""

    lines: dict[str, dict[int, str]]
    commits: dict[str, BlamedCommit]


def blame_recent(repo: Path, commit: str, ranges: Mapping[str, Sequence[tuple[int, int]]], *,
                 since: int, jobs: int | None = None) -> Blame:
    """Blame the inclusive 1-based line ``ranges`` of each path at ``commit``, counting only
    commits whose committer time is ``since`` or later."""
    paths = [p for p in ranges if ranges[p]]
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(paths) or 1))
    lines: dict[str, dict[int, str]] = {}
    commits: dict[str, BlamedCommit] = {}

    def one(path: str) -> str:
        args = ["blame", "--incremental", f"--since=@{since}"]
        for a, b in ranges[path]:
            args += ["-L", f"{a},{b}"]
        return run_git([*args, commit, "--", path], repo=repo).stdout

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for path, text in zip(paths, pool.map(one, paths), strict=True):
            lines[path] = _parse(text, commits, since)
    return Blame(lines, commits)


def committer_time(repo: Path, commit: str) -> int | None:
    """``commit``'s committer time (seconds since the epoch), None when it is not there."""
    r = run_git(["log", "-1", "--format=%ct", "--end-of-options", f"{commit}^{{commit}}"],
                repo=repo, check=False)
    return int(r.stdout.strip()) if r.returncode == 0 and r.stdout.strip().isdigit() else None


def _parse(text: str, commits: dict[str, BlamedCommit], since: int) -> dict[int, str]:
    """git's incremental format: an entry line (commit, original line, final line, count),
    the commit's headers the first time it appears (``boundary`` marks the window's edge),
    and ``filename`` last."""
    found: dict[int, str] = {}
    seen: dict[str, dict[str, str]] = {}
    current: str | None = None
    start = count = 0
    for line in text.split("\n"):
        m = _ENTRY.match(line)
        if m:
            current, start, count = m.group(1), int(m.group(2)), int(m.group(3))
            seen.setdefault(current, {})
            continue
        if current is None:
            continue
        key, _, value = line.partition(" ")
        if key != "filename":
            seen[current][key] = value
            continue
        headers = seen[current]
        when = int(headers.get("committer-time", "0") or 0)
        if "boundary" not in headers and when >= since:
            if current not in commits:
                commits[current] = BlamedCommit(current, printable(headers.get("summary", "")),
                                                when)
            for n in range(start, start + count):
                found[n] = current
        current = None
    return found
