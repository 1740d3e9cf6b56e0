"""The burden report: per patch, the upstream commits of the window on the lines it stands
on, its files, and its library and test lines; for the stack, the distinct commits.

The window is the ``days`` before the pin's committer date. Every pin file the stack
stands on is blamed once, all its patches' lines together (``gitrepo.blame_recent``);
a patch whose row the cache holds is not blamed at all.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from patchctl import gitrepo
from patchctl.burden import lines
from patchctl.burden.cache import BurdenCache, Row
from patchctl.errors import InputError
from patchctl.model import patchfile, schemas
from patchctl.model.patchfile import Patch
from patchctl.model.stack import Pin, Stack
from patchctl.textout import count

DEFAULT_DAYS = 90
Progress = Callable[[str], None]


@dataclass
class PatchBurden:
    index: int
    name: str
    files: int  # file diffs
    library_added: int
    library_removed: int
    test_added: int
    test_removed: int
    lines: int  # the pin's lines it stands on
    commits: list[str]  # upstream commits of the window on those lines, newest first

    @property
    def library(self) -> int:
        return self.library_added + self.library_removed

    @property
    def tests(self) -> int:
        return self.test_added + self.test_removed


@dataclass
class BurdenReport:
    stack: str
    upstream: str
    pin: Pin
    pin_date: str  # the pin's committer date, UTC ISO 8601
    days: int
    since: str  # the window's start, UTC ISO 8601
    test_paths: list[str]
    patches: list[PatchBurden]
    commits: list[gitrepo.BlamedCommit]  # every commit any patch names, newest first
    files: int  # distinct paths over the stack (a file two patches change counts once)
    cached: int  # patches whose row came from the cache
    git_calls: int
    seconds: float

    @property
    def total(self) -> int:
        """Distinct upstream commits over the stack (one that hits two patches counts once)."""
        return len({c for p in self.patches for c in p.commits})

    def commit(self, commit_id: str) -> gitrepo.BlamedCommit | None:
        return next((c for c in self.commits if c.id == commit_id), None)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["pin"] = {"name": self.pin.name, "url": self.pin.url, "commit": self.pin.commit}
        for p, d in zip(self.patches, data["patches"], strict=True):
            d["library"], d["tests"] = p.library, p.tests
        return {"schema": schemas.BURDEN, "total": self.total, **data}


def burden(stack: Stack, upstream: Path, *, days: int = DEFAULT_DAYS,
           progress: Progress | None = None, cache_dir: Path | None = None) -> BurdenReport:
    started = time.perf_counter()
    pin, repo, pin_time = _window(stack, upstream, days)
    since = pin_time - days * 86400
    calls = 2  # rev-parse for the git dir, the pin's date
    entries = stack.series()
    cache = BurdenCache(stack.root, pin=pin.commit, days=days, tests=pin.tests,
                        cache_dir=cache_dir)
    texts = [patchfile.patch_bytes(stack.patches_dir / e.name) for e in entries]
    keys = cache.keys([(e.strip, t) for e, t in zip(entries, texts, strict=True)])
    rows = cache.rows(keys) if keys is not None else None
    cached = len(entries)
    if rows is None:  # something changed: parse every patch (the earlier ones map lines)
        patches = [patchfile.parse_patch(t, path=stack.patches_dir / e.name, name=e.name,
                                         strip=e.strip)
                   for e, t in zip(entries, texts, strict=True)]
        keys = cache.learn([(e.strip, t) for e, t in zip(entries, texts, strict=True)],
                           [[p for f in patch.files for p in f.paths] for patch in patches])
        found = {k: r for k in keys if (r := cache.row(k)) is not None}
        todo = [k for k, key in enumerate(keys) if key not in found]
        cached = len(entries) - len(todo)
        new, blamed = _compute(repo, pin, patches, todo, since, progress)
        calls += blamed
        for k, row in new.items():
            cache.put(keys[k], row)
            found[keys[k]] = row
        rows = [found[key] for key in keys]
    files = len(cache.stack_paths([(e.strip, t) for e, t in zip(entries, texts, strict=True)]))
    cache.save()
    report = [PatchBurden(index=i, name=e.name, files=r.files,
                          library_added=r.library_added, library_removed=r.library_removed,
                          test_added=r.test_added, test_removed=r.test_removed, lines=r.lines,
                          commits=r.commits)
              for i, (e, r) in enumerate(zip(entries, rows, strict=True), start=1)]
    named = {c for p in report for c in p.commits}
    commits = sorted((cache.commit(c) for c in named), key=lambda c: (-c.time, c.id))
    return BurdenReport(
        stack=str(stack.root), upstream=str(repo), pin=pin, pin_date=_iso(pin_time), days=days,
        since=_iso(since), test_paths=list(pin.tests), patches=report, commits=commits,
        files=files, cached=cached, git_calls=calls,
        seconds=round(time.perf_counter() - started, 4))


def _window(stack: Stack, upstream: Path, days: int) -> tuple[Pin, Path, int]:
    """The pin, the upstream's git dir and the pin's committer time."""
    if days < 0:
        raise InputError(f"--days {days}: give 0 or more days")
    pin = stack.pin()
    repo = gitrepo.git_dir(upstream)
    pin_time = gitrepo.committer_time(repo, pin.commit)
    if pin_time is None:
        raise InputError(f"pin {pin.commit} is not in upstream {repo}; "
                         "fetch it there or fix stack/upstream.toml")
    return pin, repo, pin_time


def _compute(repo: Path, pin: Pin, patches: Sequence[Patch], todo: Sequence[int], since: int,
             progress: Progress | None) -> tuple[dict[int, Row], int]:
    """The rows of the patches at positions ``todo``, and how many git calls that took."""
    written = lines.writers(patches)
    stands = {k: lines.standing(k, patches[k], written) for k in todo}
    wanted: dict[str, set[int]] = {}
    for per_file in stands.values():
        for path, found in per_file.items():
            wanted.setdefault(path, set()).update(found)
    if progress and wanted:
        progress(f"blaming {count(len(wanted), 'file')} for {count(len(todo), 'patch')}")
    blame = gitrepo.blame_recent(repo, pin.commit, {p: lines.ranges(n) for p, n in
                                                    sorted(wanted.items())}, since=since)
    out = {}
    for k in todo:
        hits = {c for path, found in stands[k].items() for n in found
                if (c := blame.lines[path].get(n)) is not None}
        shown = sorted(hits, key=lambda c: (-blame.commits[c].time, c))
        out[k] = _row(patches[k], pin, sum(len(n) for n in stands[k].values()),
                      [blame.commits[c] for c in shown])
    return out, len(wanted)


@dataclass
class HunkBurden:
    patch: int  # series position, 1-based
    path: str
    line: int  # the hunk's `@@` line in the patch file
    source_start: int  # its first pre-image line, as the patches before it left the file
    commits: list[str]  # upstream commits of the window on the pin lines it stands on


def hunk_burden(stack: Stack, upstream: Path, *, days: int = DEFAULT_DAYS) -> tuple[
        list[HunkBurden], dict[str, gitrepo.BlamedCommit]]:
    """Each hunk's commits, so a patch's burden can be traced to where it sits. Not cached:
    one ``git blame`` per pin file, as a cold ``burden`` run."""
    pin, repo, pin_time = _window(stack, upstream, days)
    patches = [patchfile.parse_patch(patchfile.patch_bytes(stack.patches_dir / e.name),
                                     path=stack.patches_dir / e.name, name=e.name, strip=e.strip)
               for e in stack.series()]
    written = lines.writers(patches)
    spots: list[tuple[HunkBurden, str, set[int]]] = []
    wanted: dict[str, set[int]] = {}
    for k, patch in enumerate(patches):
        for f in patch.files:
            if f.source is None or f.binary:
                continue
            for h in f.hunks:
                pin_path, found = f.source, set()
                for n in lines.old_side([h]):
                    if (at := lines.to_pin(f.source, n, k, written)) is not None:
                        pin_path = at[0]
                        found.add(at[1])
                wanted.setdefault(pin_path, set()).update(found)
                spots.append((HunkBurden(k + 1, f.source, h.line, h.source_start, []),
                              pin_path, found))
    blame = gitrepo.blame_recent(repo, pin.commit, {p: lines.ranges(n) for p, n in
                                                    sorted(wanted.items()) if n},
                                 since=pin_time - days * 86400)
    for spot, pin_path, found in spots:
        hits = {c for n in found if (c := blame.lines.get(pin_path, {}).get(n)) is not None}
        spot.commits = sorted(hits, key=lambda c: (-blame.commits[c].time, c))
    return [s for s, _, _ in spots], blame.commits


def _row(patch: Patch, pin: Pin, standing: int, commits: list[gitrepo.BlamedCommit]) -> Row:
    counts = {True: [0, 0], False: [0, 0]}
    for f in patch.files:
        side = counts[pin.is_test(f.path)]
        for h in f.hunks:
            for text in h.lines:
                if text[:1] == "+":
                    side[0] += 1
                elif text[:1] == "-":
                    side[1] += 1
    return Row(files=len(patch.files), library_added=counts[False][0],
               library_removed=counts[False][1], test_added=counts[True][0],
               test_removed=counts[True][1], lines=standing,
               commits=[c.id for c in commits], known=tuple(commits))


def _iso(seconds: int) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).isoformat().replace("+00:00", "Z")
