"""Index-only verification: every patch applies and reverses at fuzz 0 on the pin.

The pin's tree is read into a temporary index; patches are applied with
``git apply --cached`` and reversed in reverse order, and the final tree id
must equal the pin's. No work tree is checked out, so a partial clone works
and the whole proof costs a handful of git processes. When the stack is clean,
one ``git apply`` call carries all patches each way (the floor); only a
failure falls back to one call per patch, to say which patch and hunk broke.
A large stack is proven in parts that share no path, side by side on the cores
it may use (``partition``), each part one call each way on its own index.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import itertools
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchctl import gitrepo, tomlwrite
from patchctl.errors import InputError, StackError
from patchctl.model import fingerprint, grades, schemas
from patchctl.model import stack as stackmodel
from patchctl.model.finding import ERROR, WARNING, Finding
from patchctl.model.grades import EXACT, FAILED, INVALID, IRREVERSIBLE, SKIPPED
from patchctl.model.stack import Pin, SeriesEntry, Stack
from patchctl.textout import count
from patchctl.verify import partition

if TYPE_CHECKING:
    from patchctl.model.patchfile import Patch
    from patchctl.verify.parsecache import ParseCache, Summary

BAD_GRADES = {FAILED, IRREVERSIBLE, SKIPPED, INVALID}


@dataclass(frozen=True)
class Failure:
    reason: str
    file: str | None = None
    hunk: int | None = None
    line: int | None = None  # line of the hunk header in the patch file
    upstream_line: int | None = None


@dataclass
class PatchReport:
    index: int
    name: str
    path: str
    concern: str | None = None
    upstream_status: str | None = None
    files: int = 0
    added: int = 0
    removed: int = 0
    digest: str | None = None
    grade: str = SKIPPED
    offsets: list[gitrepo.HunkOffset] = field(default_factory=list)
    failure: Failure | None = None
    findings: list[Finding] = field(default_factory=list)

    def ok(self, strict: bool) -> bool:
        if self.grade in BAD_GRADES or any(f.severity == ERROR for f in self.findings):
            return False
        return not strict or (
            self.grade == EXACT and not any(f.severity == WARNING for f in self.findings)
        )


@dataclass
class VerifyReport:
    stack: str
    upstream: str
    pin: Pin
    pin_tree: str
    reversed_tree: str | None
    fingerprint: str | None
    lock: str  # current | stale | missing | unknown
    patches: list[PatchReport]
    findings: list[Finding]  # stack-level
    strict: bool
    mode: str  # batched | per-patch
    parts: int  # batched: how many parts of the series were proven at once (1: all in one)
    git_calls: int
    seconds: float

    @property
    def ok(self) -> bool:
        return all(p.ok(self.strict) for p in self.patches) and not any(
            f.severity == ERROR or self.strict for f in self.findings
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data = {"schema": schemas.VERIFY, "ok": self.ok, "git_version": gitrepo.version(), **data}
        for p, d in zip(self.patches, data["patches"], strict=True):
            d["ok"] = p.ok(self.strict)
        return data


Progress = Callable[[str], None]
# a batched forward pass split into its patches, and git's whitespace warnings
_Graded = tuple[list[tuple[PatchReport, gitrepo.Applied]],
                list[tuple[PatchReport, Finding]]]


def verify(
    stack: Stack,
    upstream: Path,
    *,
    strict: bool = False,
    progress: Progress | None = None,
) -> VerifyReport:
    # A verify makes some ten small objects per patch, all alive until the report is
    # out: the cyclic collector would walk them again and again and find nothing.
    with _collector_paused():
        return _verify(stack, upstream, strict=strict, progress=progress)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _verify(stack: Stack, upstream: Path, *, strict: bool,
            progress: Progress | None) -> VerifyReport:
    started = time.perf_counter()
    pin = stack.pin()
    entries = stack.series()
    found = gitrepo.commit_and_tree(upstream, pin.commit)
    if found is None:
        raise InputError(f"pin {pin.commit} is not in upstream {upstream}; "
                         "fetch it there or fix stack/upstream.toml")
    repo, pin_tree = found
    calls = 1  # rev-parse for the git dir and the pin's tree

    # the patch files as git gets them: plain strings (2,000 pathlib joins cost ~10 ms
    # before git can start); check_patch_name's names are already normalized paths.
    root = str(stack.patches_dir)
    files = [f"{root}/{e.name}" for e in entries]
    batch = bool(entries) and len({e.strip for e in entries}) == 1
    cores = partition.cores() if batch and len(entries) >= partition.MIN_PATCHES else 1
    fp, lock, lock_finding = None, "unknown", None
    with contextlib.ExitStack() as scope:
        indexes: list[gitrepo.TempIndex] = []

        def prove(bins: list[list[int]]) -> list[tuple[list[int], gitrepo.RoundTrip]]:
            """Start git on each bin of the series, on an index of its own; back once git
            runs on each (parsing here before that would only hold the threads up)."""
            while len(indexes) < len(bins):
                indexes.append(scope.enter_context(gitrepo.temp_index(repo)))
            if progress:
                at_once = f" in {len(bins)} parts at once" if len(bins) > 1 else ""
                progress(f"applying {count(len(entries), 'patch')}{at_once}")
            trips = [(b, ix.round_trip_in_background([files[i] for i in b],
                                                     strip=entries[0].strip, base=pin_tree))
                     for b, ix in zip(bins, indexes, strict=False)]
            return [(b, trip.running()) for b, trip in trips]

        # git proves the stack on threads while the patches are parsed and linted here:
        # a clean stack costs the batched floor, not floor + parsing. A large one goes
        # in the parts the last run split it into, kept only if they still hold.
        whole = [list(range(len(entries)))]
        kept, kept_key = partition.read_plan(stack.root) if cores > 1 else (None, None)
        guess = kept if kept is not None and 1 < len(kept) <= cores else None
        trips = prove(guess or whole) if batch else []
        graded = None
        try:
            reports, patches, cache = _load(stack, entries)
            links, listed = gitrepo.tree_symlinks(repo, pin_tree)  # once per pin tree
            calls += listed
            for report in reports:
                patch = patches.get(report.index)
                if patch is not None:
                    report.findings += patch.lint(links)
            whole_stack = len(patches) == len(reports)
            if whole_stack:
                ordered = [patches[r.index] for r in reports]
                fp = fingerprint.fingerprint(pin.commit, ordered)  # the stack's
                lock, lock_finding = _check_lock(stack, pin, ordered, cache)
                # the split kept for these very patches is the one they would give again
                if cores > 1 and (kept is None or kept_key != partition.plan_key(
                        cache.contents(), cores, kept)):
                    group_of = partition.groups([(p.paths, p.in_place) for p in ordered])
                    plan = partition.split(group_of, [p.files for p in ordered], cores)
                    partition.keep_plan(stack.root, plan,
                                        partition.plan_key(cache.contents(), cores, plan))
                    if guess is not None and not partition.holds(guess, group_of):
                        for _, trip in trips:  # proves another split: start again
                            trip.wait()
                        trips = prove(plan or whole)
            cache.save()
            run = _Run(repo, reports, patches, progress)
            if trips and whole_stack:
                graded = run.prepare([(b, t.forward_run()) for b, t in trips])
        finally:
            for _, trip in trips:
                trip.wait()
        if not trips or graded is None or not run.take([t for _, t in trips], graded, pin_tree):
            if not indexes:
                indexes.append(scope.enter_context(gitrepo.temp_index(repo)))
            run.index = indexes[0]
            run.index.read_tree(pin_tree)
            run.run(pin_tree, batch=not trips)
        mode = "batched" if run.batched else "per-patch"
        parts = len(trips) if run.batched and trips else 1
        calls += sum(ix.calls for ix in indexes)

    stack_findings: list[Finding] = []
    if run.reversed_tree is not None and run.reversed_tree != pin_tree:
        stack_findings.append(Finding(ERROR, "reverse",
                                      f"reversing the stack gives tree {run.reversed_tree}, "
                                      f"not the pin's tree {pin_tree}"))
    if lock_finding:
        stack_findings.append(lock_finding)
    return VerifyReport(
        stack=str(stack.root),
        upstream=str(repo),  # its git directory, as git names it
        pin=pin,
        pin_tree=pin_tree,
        reversed_tree=run.reversed_tree,
        fingerprint=fp,
        lock=lock,
        patches=reports,
        findings=stack_findings,
        strict=strict,
        mode=mode,
        parts=parts,
        git_calls=calls,
        seconds=round(time.perf_counter() - started, 4),
    )


def _load(stack: Stack, entries: Sequence[SeriesEntry],
          ) -> tuple[list[PatchReport], dict[int, Summary], ParseCache]:
    """Each patch's report and summary (read through the parse cache; the caller saves
    it)."""
    from patchctl.verify.parsecache import ParseCache  # with json: once git runs

    cache = ParseCache(stack.root)
    reports: list[PatchReport] = []
    patches: dict[int, Summary] = {}
    root = str(stack.patches_dir)  # names are normalized paths: no pathlib join per patch
    for i, entry in enumerate(entries, start=1):
        path = f"{root}/{entry.name}"
        report = PatchReport(index=i, name=entry.name, path=path)
        try:
            patch = cache.read(path, name=entry.name, strip=entry.strip)
        except StackError as e:
            if not Path(path).is_file():  # checked only now: one stat less per patch
                raise StackError(f"{stack.series_path}:{entry.line}: series names "
                                 f"{entry.name!r}, but {path} is missing or not a file") from None
            report.grade = INVALID
            report.failure = Failure(reason=str(e).removeprefix(f"{entry.name}: "))
        else:
            patches[i] = patch
            report.concern, report.upstream_status = patch.concern, patch.upstream_status
            report.files, report.added, report.removed = (
                patch.files, patch.added, patch.removed)
            report.digest = patch.digest
        reports.append(report)
    return reports, patches, cache


class _Run:
    """The apply/reverse passes over one temporary index (gitrepo's apply_series)."""

    def __init__(self, repo: Path, reports: list[PatchReport], patches: dict[int, Summary],
                 progress: Callable[[str], None] | None) -> None:
        self.repo = repo
        self.reports: list[PatchReport] = reports
        self.patches: dict[int, Summary] = patches
        self.progress = progress
        self.index: gitrepo.TempIndex
        self.reversed_tree: str | None = None
        self.batched = False

    def _item(self, r: PatchReport) -> gitrepo.SeriesItem:
        p = self.patches[r.index]
        return gitrepo.SeriesItem(p.path, p.strip, p.files)

    def _grade(self, pairs: Sequence[tuple[PatchReport, gitrepo.Applied]],
               warnings: Sequence[tuple[PatchReport, Finding]] | None = None) -> None:
        for r, a in pairs:
            r.offsets = list(a.offsets)
            r.grade = grades.clean(r.offsets)
        for r, finding in self._warnings(pairs) if warnings is None else warnings:
            r.findings.append(finding)

    def prepare(self, forwards: Sequence[tuple[list[int], gitrepo.ApplyRun | None]],
                ) -> _Graded | None:
        """Each patch's part of the batched forward passes (one per part of the series:
        its patches' positions, and git's run) when all applied, and git's whitespace
        warnings (read while git reverses them); None when one did not apply or a patch
        could not be parsed."""
        if (any(f is None or not f.ok for _, f in forwards)
                or len(self.patches) != len(self.reports)):
            return None
        pairs: list[tuple[PatchReport, gitrepo.Applied]] = []
        for positions, forward in forwards:
            assert forward is not None
            reports = [self.reports[i] for i in positions]
            pairs += zip(reports, gitrepo.applied_from(forward, [self._item(r) for r in reports]),
                         strict=True)
        return pairs, self._warnings(pairs)

    def take(self, trips: Sequence[gitrepo.RoundTrip], graded: _Graded, pin_tree: str) -> bool:
        """Grade every patch from the background round trips (``prepare``'s result);
        False when they did not prove the stack (then ``run`` says which patch failed,
        one by one)."""
        if any(t.tree != pin_tree for t in trips):
            return False
        self._grade(*graded)
        self.reversed_tree = pin_tree
        self.batched = True
        return True

    def run(self, pin_tree: str, *, batch: bool = True) -> None:
        if self.progress:
            self.progress(f"applying {count(len(self.reports), 'patch')} one by one")
        valid = list(itertools.takewhile(lambda r: r.grade != INVALID, self.reports))
        forward = self.index.apply_series([self._item(r) for r in valid], base=pin_tree,
                                          batch=batch)
        pairs = list(zip(valid, forward.applied, strict=False))
        self._grade([(r, a) for r, a in pairs if a.ok])
        for r, a in pairs:
            if not a.ok:
                r.grade, r.failure = FAILED, self._explain(r, a.error)
        tried = len(forward.applied)
        for r in self.reports[tried:]:
            if r.grade != INVALID:
                r.grade = SKIPPED
                r.failure = Failure(reason="not checked: an earlier patch failed")
        if not forward.ok or len(valid) < len(self.reports):
            return
        applied = list(reversed(valid))
        after = self.index.write_tree()
        back = self.index.apply_series([self._item(r) for r in applied], reverse=True,
                                       base=after)
        if (failed := back.failed) is not None:
            r = applied[back.applied.index(failed)]
            r.grade = IRREVERSIBLE
            f = self._explain(r, failed.error)
            r.failure = Failure(reason=f"does not reverse cleanly: {f.reason}", file=f.file,
                                hunk=f.hunk, line=f.line, upstream_line=f.upstream_line)
            return
        self.batched = forward.batched and back.batched
        self.reversed_tree = self.index.write_tree()
        if self.reversed_tree != pin_tree and valid:
            # Every patch reversed, yet the tree differs: one of them reversed at a
            # different place than it applied. Find it by reversing each on its own.
            self._blame_reversal(valid, pin_tree)

    def _blame_reversal(self, applied: list[PatchReport], pin_tree: str) -> None:
        self.index.read_tree(pin_tree)
        before = pin_tree
        for r in applied:
            item = self._item(r)
            self.index.apply([item.path], strip=item.strip)
            after = self.index.write_tree()
            self.index.apply([item.path], strip=item.strip, reverse=True)
            if self.index.write_tree() != before:
                r.grade = IRREVERSIBLE
                r.failure = Failure(reason="applies, but reversing it does not restore the tree "
                                    "(a hunk matched elsewhere; widen its context)")
                return
            self.index.read_tree(after)
            before = after

    def _warnings(self, pairs: Sequence[tuple[PatchReport, gitrepo.Applied]],
                  ) -> list[tuple[PatchReport, Finding]]:
        """Whitespace warnings from `git apply`, mapped back to patches by file name
        (each git run read once, however many patches it carried)."""
        by_path = {str(self.patches[r.index].path): r for r, _ in pairs}
        runs = {id(a.run): a.run for _, a in pairs if a.run is not None}
        out = []
        for run in runs.values():
            last: dict[str, int] = {}  # patch file -> the line of its last warning
            for w in run.whitespace():
                report = by_path.get(w.file)
                if report is None:
                    continue
                line = _warned_line(w, last.get(w.file, 0))
                last[w.file] = line or last.get(w.file, 0)
                out.append((report, Finding(WARNING, "whitespace",
                                            f"adds whitespace error: {w.what}", line)))
        return out

    def _explain(self, report: PatchReport, error: gitrepo.ApplyError | None) -> Failure:
        return explain_failure(self.patches[report.index].patch(), error)


def _warned_line(w: gitrepo.WhitespaceWarning, after: int) -> int | None:
    """The line of its patch file that git warned of: git's own number where that line
    is the added line git shows (a run of one patch, or a git that numbers each file
    from 1), else the first such line after ``after`` (older gits count on across the
    files of a run); None if the file holds no such line."""
    try:
        lines = Path(w.file).read_text(encoding="utf-8", errors="surrogateescape").split("\n")
    except OSError:
        return None

    def shown(i: int) -> bool:
        return lines[i][:1] == "+" and w.text in (lines[i], lines[i][1:])

    if after < w.line <= len(lines) and shown(w.line - 1):
        return w.line
    return next((i + 1 for i in range(after, len(lines)) if shown(i)), None)


def explain_failure(patch: Patch, error: gitrepo.ApplyError | None) -> Failure:
    """git's error, pointed at the patch's own file diff and hunk where it can be."""
    error = error or gitrepo.ApplyError("git apply failed")
    if error.file is not None and error.line is not None:
        path, at = error.file, error.line
        for fdiff in patch.files:
            if path not in fdiff.paths:
                continue
            for n, hunk in enumerate(fdiff.hunks, start=1):
                if at in (hunk.source_start, hunk.target_start):
                    return Failure(reason=f"hunk #{n} of {path} does not apply at fuzz 0: "
                                   "its context or removed lines differ upstream",
                                   file=path, hunk=n, line=hunk.line, upstream_line=at)
            return Failure(reason=f"{path}: a hunk does not apply at line {at}", file=path,
                           line=fdiff.line, upstream_line=at)
    file = next((f.path for f in patch.files if f.path in error.message), None)
    line = next((f.line for f in patch.files if f.path == file), None)
    return Failure(reason=error.message, file=file, line=line)


def _check_lock(stack: Stack, pin: Pin, ordered: Sequence[Summary],
                cache: ParseCache) -> tuple[str, Finding | None]:
    """The lock's state: "current" at once when the parse cache saw this very lock text
    current for these very patches and pin (and this code), else ``lock_state``'s verdict
    on the lock ``patchctl lock`` would write (2,000 patches: ~10 ms less a run)."""
    text = stack.lock_text()
    seen = None if text is None else _lock_key(text, pin, cache)
    if seen is not None and seen == cache.lock:
        return "current", None
    state, why = fingerprint.lock_state(stack, fingerprint.make_lock(pin, ordered))
    if state == "missing":
        return "missing", Finding(ERROR, "lock", f"{stack.lock_path} is missing; "
                                  "write it with `patchctl lock`")
    if state == "current":
        cache.lock = seen
        return "current", None
    return "stale", Finding(ERROR, "lock", f"{stack.lock_path.name} is stale ({why}); "
                            "run `patchctl lock` after reviewing the change")


def _lock_key(text: str, pin: Pin, cache: ParseCache) -> str:
    """What a lock verdict is kept by: the lock's text, the pin, the patches (the parse
    cache's key of them) and the code that renders and judges a lock."""
    h = hashlib.sha256(f"{cache.contents()}\0{pin.name}\0{pin.commit}\0{text}".encode(
        "utf-8", "surrogateescape"))
    for module in (fingerprint, stackmodel, tomlwrite):
        h.update(Path(module.__file__ or "").read_bytes())
    return h.hexdigest()
