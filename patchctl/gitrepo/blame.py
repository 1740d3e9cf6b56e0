"""Which recent commits last changed given lines of files at one commit (``burden``).

One ``git blame --incremental`` per file, every range of that file as its own ``-L``,
so a file that many patches stand on is blamed once (past ``MAX_RANGES``, the closest
ranges are blamed as one, lines between included, so the command line stays bounded).
``--since`` stops the walk at the window's edge, and git never walks years of a long
file's history to name a commit the caller would throw away; ``--root`` makes a root
commit a commit like any other, so the committer time alone decides what counts. The
files are blamed side by side, one git process per core.

A shallow clone's grafts look like root commits to git: ``shallow_roots`` names them, so
the caller can refuse a window that reaches past one (blame would put every older line
on the graft).
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
_ID = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
# git reads ``--since=@N`` as seconds only when N has 9 digits or more (date.c: shorter
# numbers are days, years...); an earlier window start is "no limit" to us anyway
FIRST_SINCE = 100_000_000  # 1973-03-03T09:46:40Z
MAX_RANGES = 1000  # -L options on one command line (about 16 KB of it)


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
    commits whose committer time is ``since`` or later (lines outside ``ranges`` may be
    reported too, where ranges were merged)."""
    paths = [p for p in ranges if ranges[p]]
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(paths) or 1))
    lines: dict[str, dict[int, str]] = {}
    commits: dict[str, BlamedCommit] = {}

    def one(path: str) -> str:
        args = ["blame", "--incremental", "--root"]
        if since >= FIRST_SINCE:
            args.append(f"--since=@{since}")
        for a, b in bounded(ranges[path]):
            args += ["-L", f"{a},{b}"]
        return run_git([*args, commit, "--", path], repo=repo).stdout

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for path, text in zip(paths, pool.map(one, paths), strict=True):
            lines[path] = _parse(text, commits, since)
    return Blame(lines, commits)


def bounded(ranges: Sequence[tuple[int, int]],
            limit: int = MAX_RANGES) -> list[tuple[int, int]]:
    """Sorted ``ranges`` as at most ``limit`` ranges: past it, every gap between two ranges
    as small as the smallest ones that must go is blamed too (the caller ignores its lines).
    200,000 one-line ranges a line apart become one range."""
    runs = sorted(ranges)
    if len(runs) <= limit:
        return runs
    gaps = sorted(runs[i][0] - runs[i - 1][1] for i in range(1, len(runs)))
    widest = gaps[len(runs) - limit - 1]  # joining every gap up to this one is enough
    out = [runs[0]]
    for a, b in runs[1:]:
        if a - out[-1][1] <= widest:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def line_counts(repo: Path, commit: str, paths: Sequence[str]) -> dict[str, int]:
    """How many lines each of ``paths`` has at ``commit`` as ``git blame`` counts them (a
    last line without a newline is one); paths that are not a file there are left out."""
    from patchctl.gitrepo.read import read_blobs

    return {p: data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
            for p, (_, data) in read_blobs(repo, commit, paths).items()}


def shallow_grafts(repo: Path) -> list[str]:
    """The commits where a shallow clone's history is cut (sorted); none in a full clone."""
    r = run_git(["rev-parse", "--is-shallow-repository", "--git-path", "shallow"], repo=repo)
    flag, _, where = r.stdout.strip().partition("\n")
    if flag != "true":
        return []
    from patchctl import fsutil

    shallow = Path(where) if Path(where).is_absolute() else repo / where
    # git's own file, but an upstream is input: bounded, regular, each line an id or nothing
    text = fsutil.read_regular(shallow, limit=1 << 24).decode("ascii", "replace")
    return sorted({line for line in text.split() if _ID.match(line)})


def reached_since(repo: Path, commit: str, ids: Sequence[str], since: int) -> list[BlamedCommit]:
    """Those of ``ids`` that ``commit`` reaches whose committer time is ``since`` or later,
    newest first (the walk stops at older commits)."""
    limit = [f"--max-age={since}"] if since > 0 else []
    listed = run_git(["log", "--format=%H %ct %s", *limit, "--end-of-options", commit],
                     repo=repo).stdout
    wanted, out = set(ids), []
    for line in listed.split("\n"):
        sha, _, rest = line.partition(" ")
        if sha in wanted:
            when, _, subject = rest.partition(" ")
            out.append(BlamedCommit(sha, printable(subject), int(when)))
    return out


def committer_time(repo: Path, commit: str) -> int | None:
    """``commit``'s committer time (seconds since the epoch), None when it is not there."""
    r = run_git(["log", "-1", "--format=%ct", "--end-of-options", f"{commit}^{{commit}}"],
                repo=repo, check=False)
    return int(r.stdout.strip()) if r.returncode == 0 and r.stdout.strip().isdigit() else None


def _parse(text: str, commits: dict[str, BlamedCommit], since: int) -> dict[int, str]:
    """git's incremental format: an entry line (commit, original line, final line, count),
    the commit's headers the first time it appears, and ``filename`` last."""
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
        if when >= since:  # a boundary (the window's edge) is older; a root is not one
            if current not in commits:
                commits[current] = BlamedCommit(current, printable(headers.get("summary", "")),
                                                when)
            for n in range(start, start + count):
                found[n] = current
        current = None
    return found
