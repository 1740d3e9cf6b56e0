"""The burden report: per patch, the upstream commits of the window on the lines it stands
on, its files, and its library and test lines; for the stack, the distinct commits.

The window is the ``days`` before the pin's committer date. Every pin file the stack
stands on is blamed once, all its patches' lines together (``gitrepo.blame_recent``);
a patch whose row the cache holds is not blamed at all. A patch with a hunk that does
not match the pin (past a file's end, a file the pin lacks) is not counted, with a note
that says which hunk: a measure reports the rest (``verify`` is the check). A shallow
upstream cut inside the window is refused: blame would put every older line on the cut.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from patchctl import gitrepo
from patchctl.burden import MAX_DAYS, cache, lines
from patchctl.burden.cache import BurdenCache, Row
from patchctl.errors import InputError
from patchctl.model import patchfile, schemas
from patchctl.model.patchfile import FileDiff, Hunk, Patch
from patchctl.model.stack import Pin, Stack
from patchctl.textout import count
from patchctl.untrusted import printable

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
    skipped: str = ""  # why it is not counted: a hunk that does not match the pin

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
    grafts = _history(repo, pin, since, days)
    calls = 3 + bool(grafts)  # rev-parse for the git dir, the pin's date, is it shallow
    entries = stack.series()
    # the upstream is part of the key: a shallow clone's history ends at its grafts
    cache = BurdenCache(stack.root, [_code_key(), pin.commit, days, list(pin.tests), str(repo),
                                     grafts], cache_dir=cache_dir)
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
                          commits=r.commits, skipped=r.skipped)
              for i, (e, r) in enumerate(zip(entries, rows, strict=True), start=1)]
    named = {c for p in report for c in p.commits}
    commits = sorted((cache.commit(c) for c in named), key=lambda c: (-c.time, c.id))
    return BurdenReport(
        stack=str(stack.root), upstream=str(repo), pin=pin, pin_date=_iso(pin_time), days=days,
        since=_iso(since), test_paths=list(pin.tests), patches=report, commits=commits,
        files=files, cached=cached, git_calls=calls,
        seconds=round(time.perf_counter() - started, 4))


def _code_key() -> str:
    """The source of what computes a row: another version of it is another cache."""
    from patchctl.gitrepo import blame

    h = hashlib.sha256()
    for module in (lines, blame, patchfile, cache):
        h.update(Path(module.__file__ or "").read_bytes())
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()


def _window(stack: Stack, upstream: Path, days: int) -> tuple[Pin, Path, int]:
    """The pin, the upstream's git dir and the pin's committer time."""
    if not 0 <= days <= MAX_DAYS:
        raise InputError(f"--days {days}: give 0 to {MAX_DAYS} days")
    pin = stack.pin()
    repo = gitrepo.git_dir(upstream)
    pin_time = gitrepo.committer_time(repo, pin.commit)
    if pin_time is None:
        raise InputError(f"pin {pin.commit} is not in upstream {repo}; "
                         "fetch it there or fix stack/upstream.toml")
    return pin, repo, pin_time


def _history(repo: Path, pin: Pin, since: int, days: int) -> list[str]:
    """The upstream's shallow grafts (none for a full clone); InputError when the pin
    reaches one inside the window, where git blame would see a root commit that changed
    every older line."""
    grafts = gitrepo.shallow_grafts(repo)
    cut = gitrepo.reached_since(repo, pin.commit, grafts, since) if grafts else []
    if cut:
        raise InputError(
            f"upstream {repo} is a shallow clone: its history ends at {cut[0].id[:12]} "
            f"({_iso(cut[0].time)[:10]}), inside the {count(days, 'day')} before the pin "
            f"(since {_iso(since)[:10]}), so older lines cannot be told from new ones; fetch "
            f"the rest (`git -C {repo} fetch --unshallow`) or give a full clone with --upstream")
    return grafts


Spot = tuple[FileDiff, Hunk, str, set[int]]  # a hunk, the pin path and lines it stands on


def _compute(repo: Path, pin: Pin, patches: Sequence[Patch], todo: Sequence[int], since: int,
             progress: Progress | None) -> tuple[dict[int, Row], int]:
    """The rows of the patches at positions ``todo``, and how many git calls that took."""
    written = lines.writers(patches)
    spots = {k: list(lines.hunks(k, patches[k], written)) for k in todo}
    skipped, calls = _unmatched(repo, pin, spots)
    stands: dict[int, dict[str, set[int]]] = {}
    wanted: dict[str, set[int]] = {}
    for k in todo:
        stands[k] = {}
        for _, _, path, found in spots[k] if k not in skipped else ():
            if found:
                stands[k].setdefault(path, set()).update(found)
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
                      [blame.commits[c] for c in shown], skipped.get(k, ""))
    return out, calls + len(wanted)


def _unmatched(repo: Path, pin: Pin, spots: dict[int, list[Spot]]) -> tuple[dict[int, str],
                                                                            int]:
    """Why each patch with a hunk that stands on lines the pin lacks is not counted (a path
    that is no file there, a line past its end, line 0), and how many git calls that took:
    git blame would fail on the whole file, for every patch on it."""
    paths = sorted({path for per in spots.values() for _, _, path, found in per if found})
    if not paths:
        return {}, 0
    sizes = gitrepo.line_counts(repo, pin.commit, paths)
    out: dict[int, str] = {}
    for k, per in spots.items():
        for _, h, path, found in per:
            size, first, last = sizes.get(path), min(found or [1]), max(found or [1])
            if found and (size is None or first < 1 or last > size):
                at = "" if size is None else \
                    f"lines {first}-{last} of {printable(path)}, which has {count(size, 'line')}"
                out[k] = (f"its hunk `@@ -{h.source_start},{h.source_length} "
                          f"+{h.target_start},{h.target_length} @@` (patch line {h.line}) stands "
                          f"on {at or printable(path) + ', which is no file'} at the pin "
                          "(`patchctl verify` says why)")
                break
    return out, 2  # ls-tree, cat-file


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
    one ``git blame`` per pin file, as a cold ``burden`` run. A patch not counted there
    (a hunk that does not match the pin) has no commits here either."""
    pin, repo, pin_time = _window(stack, upstream, days)
    since = pin_time - days * 86400
    _history(repo, pin, since, days)
    patches = [patchfile.parse_patch(patchfile.patch_bytes(stack.patches_dir / e.name),
                                     path=stack.patches_dir / e.name, name=e.name, strip=e.strip)
               for e in stack.series()]
    written = lines.writers(patches)
    spots = {k: list(lines.hunks(k, patch, written)) for k, patch in enumerate(patches)}
    skipped, _ = _unmatched(repo, pin, spots)
    wanted: dict[str, set[int]] = {}
    for k, per in spots.items():
        for _, _, path, found in per if k not in skipped else ():
            wanted.setdefault(path, set()).update(found)
    blame = gitrepo.blame_recent(repo, pin.commit, {p: lines.ranges(n) for p, n in
                                                    sorted(wanted.items()) if n}, since=since)
    out = []
    for k, per in spots.items():
        for f, h, path, found in per:
            hits = {c for n in found if k not in skipped
                    and (c := blame.lines.get(path, {}).get(n)) is not None}
            out.append(HunkBurden(k + 1, f.source or path, h.line, h.source_start,
                                  sorted(hits, key=lambda c: (-blame.commits[c].time, c))))
    return out, blame.commits


def _row(patch: Patch, pin: Pin, standing: int, commits: list[gitrepo.BlamedCommit],
         skipped: str) -> Row:
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
               commits=[c.id for c in commits], skipped=skipped, known=tuple(commits))


def _iso(seconds: int) -> str:
    # not fromtimestamp: the C library's range ends before MAX_DAYS does on some systems
    when = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=seconds)
    return when.isoformat().replace("+00:00", "Z")
