"""Index-only verification: every patch applies and reverses at fuzz 0 on the pin.

The pin's tree is read into a temporary index; patches are applied with
``git apply --cached`` and reversed in reverse order, and the final tree id
must equal the pin's. No work tree is checked out, so a partial clone works
and the whole proof costs a handful of git processes. When the stack is clean,
one ``git apply`` call carries all patches each way (the floor); only a
failure falls back to one call per patch, to say which patch and hunk broke.
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath

from patchctl import gitrepo
from patchctl.errors import InputError, StackError
from patchctl.fingerprint import fingerprint
from patchctl.lint import ERROR, WARNING, Finding, lint_patch
from patchctl.patchfile import Patch, read_patch
from patchctl.stack import Pin, SeriesEntry, Stack

SCHEMA = "patchctl.verify/1"

EXACT, OFFSET, FAILED, IRREVERSIBLE, SKIPPED, INVALID = (
    "exact", "offset", "failed", "irreversible", "skipped", "invalid"
)
BAD_GRADES = {FAILED, IRREVERSIBLE, SKIPPED, INVALID}

_WS = re.compile(r"^(?P<file>.+?):(?P<line>\d+): (?P<what>[^:]+?)\.$")
_FAILED_AT = re.compile(r"^error: patch failed: (?P<file>.+):(?P<line>\d+)$")
_ERROR = re.compile(r"^error: (.*)$")


@dataclass(frozen=True)
class HunkOffset:
    file: str
    hunk: int  # 1-based within its file diff
    offset: int  # lines
    line: int  # where it applied in the upstream file


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
    offsets: list[HunkOffset] = field(default_factory=list)
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
    git_calls: int
    seconds: float

    @property
    def ok(self) -> bool:
        return all(p.ok(self.strict) for p in self.patches) and not any(
            f.severity == ERROR or self.strict for f in self.findings
        )

    def to_dict(self) -> dict:
        data = asdict(self)
        data = {"schema": SCHEMA, "ok": self.ok, "git_version": gitrepo.version(), **data}
        for p, d in zip(self.patches, data["patches"], strict=True):
            d["ok"] = p.ok(self.strict)
        return data


Progress = Callable[[str], None]


def verify(
    stack: Stack,
    upstream: Path,
    *,
    strict: bool = False,
    progress: Progress | None = None,
) -> VerifyReport:
    started = time.perf_counter()
    pin = stack.pin()
    entries = stack.series()
    reports, patches = _load(stack, entries)
    found = gitrepo.commit_and_tree(upstream, pin.commit)
    if found is None:
        raise InputError(f"pin {pin.commit} is not in upstream {upstream}; "
                         "fetch it there or fix stack/upstream.toml")
    repo, pin_tree = found
    calls = 2  # rev-parse for the git dir and the pin's tree; ls-tree for symlinks

    links = frozenset(gitrepo.symlinks_among(repo, pin.commit, _ancestors(patches.values())))
    for report in reports:
        patch = patches.get(report.index)
        if patch is not None:
            report.findings += lint_patch(patch, upstream_symlinks=links)

    run = _Run(repo, reports, patches, progress)
    with gitrepo.temp_index(repo) as index:
        run.index = index
        index.read_tree(pin_tree)
        mode = "batched"
        done = len(patches) == len(reports) and run.batched(pin_tree)
        if not done:
            mode = "per-patch"
            index.read_tree(pin_tree)
            run.per_patch(pin_tree)
        calls += index.calls

    stack_findings: list[Finding] = []
    if run.reversed_tree is not None and run.reversed_tree != pin_tree:
        stack_findings.append(Finding(ERROR, "reverse",
                                      f"reversing the stack gives tree {run.reversed_tree}, "
                                      f"not the pin's tree {pin_tree}"))
    fp, lock_state = None, "unknown"
    if len(patches) == len(reports):
        fp = fingerprint(pin.commit, [patches[r.index] for r in reports])
        lock_state, finding = _check_lock(stack, fp, pin, [patches[r.index] for r in reports])
        if finding:
            stack_findings.append(finding)
    return VerifyReport(
        stack=str(stack.root),
        upstream=str(upstream),
        pin=pin,
        pin_tree=pin_tree,
        reversed_tree=run.reversed_tree,
        fingerprint=fp,
        lock=lock_state,
        patches=reports,
        findings=stack_findings,
        strict=strict,
        mode=mode,
        git_calls=calls,
        seconds=round(time.perf_counter() - started, 4),
    )


def _load(stack: Stack, entries: Sequence[SeriesEntry]):
    reports: list[PatchReport] = []
    patches: dict[int, Patch] = {}
    for i, entry in enumerate(entries, start=1):
        path = stack.patches_dir / entry.name
        if not path.is_file():
            raise StackError(f"{stack.series_path}:{entry.line}: series names {entry.name!r}, "
                             f"but {path} is missing or not a file")
        report = PatchReport(index=i, name=entry.name, path=str(path))
        try:
            patch = read_patch(path, name=entry.name, strip=entry.strip)
        except StackError as e:
            report.grade = INVALID
            report.failure = Failure(reason=str(e).removeprefix(f"{entry.name}: "))
        else:
            patches[i] = patch
            report.concern, report.upstream_status = patch.concern, patch.upstream_status
            report.files, report.added, report.removed = (
                len(patch.files), patch.added, patch.removed)
            report.digest = patch.digest
        reports.append(report)
    return reports, patches


def _ancestors(patches) -> list[str]:
    seen: dict[str, None] = {}
    for patch in patches:
        for f in patch.files:
            for path in f.paths:
                if path.startswith("/") or ".." in path.split("/"):
                    continue  # lint reports it; git would refuse to even list it
                for parent in PurePosixPath(path).parents:
                    if str(parent) != ".":
                        seen[str(parent)] = None
                seen[path] = None
    return list(seen)


class _Run:
    """The apply/reverse passes over one temporary index."""

    def __init__(self, repo, reports, patches, progress) -> None:
        self.repo = repo
        self.reports: list[PatchReport] = reports
        self.patches: dict[int, Patch] = patches
        self.progress = progress
        self.index: gitrepo.TempIndex
        self.reversed_tree: str | None = None

    def _groups(self, reports: Sequence[PatchReport]) -> list[list[PatchReport]]:
        """Runs of consecutive patches with the same strip level (one git call each)."""
        runs = itertools.groupby(reports, key=lambda r: self.patches[r.index].strip)
        return [list(run) for _, run in runs]

    def _apply(self, reports: Sequence[PatchReport], *, reverse: bool = False):
        strip = self.patches[reports[0].index].strip
        files = [self.patches[r.index].path for r in reports]
        return self.index.apply(files, strip=strip, reverse=reverse)

    def batched(self, pin_tree: str) -> bool:
        if self.progress:
            self.progress(f"applying {len(self.reports)} patches in one pass")
        inverses = [self.patches[r.index].reversed_diff() for r in self.reports]
        if len({self.patches[r.index].strip for r in self.reports}) <= 1 and all(
            inverse is not None for inverse in inverses
        ):
            return self._round_trip(pin_tree, inverses)
        outputs = []
        for group in self._groups(self.reports):
            run = self._apply(group)
            if not run.ok:
                return False
            outputs.append((group, run))
        for group in reversed(self._groups(self.reports)):
            if not self._apply(list(reversed(group)), reverse=True).ok:
                return False
        reversed_tree = self.index.write_tree()
        if reversed_tree != pin_tree:
            return False
        for group, run in outputs:
            self._read_verbose(group, run)
        for r in self.reports:
            r.grade = OFFSET if r.offsets else EXACT
        self.reversed_tree = reversed_tree
        return True

    def _round_trip(self, pin_tree: str, inverses: list[str | None]) -> bool:
        """One `git apply`: the stack forward, then each patch's inverse, last first.

        git applies a list of patches in memory, in order, and writes the index
        once, so the whole proof is one process and, when clean, writes no new
        object at all (the final contents are the pin's).
        """
        if not self.reports:
            self.reversed_tree = self.index.write_tree()
            return self.reversed_tree == pin_tree
        # All inverses in one file, last patch first: git applies a patch that
        # names a file twice in sequence, and one file is much cheaper than N.
        inverse_file = self.index.path.parent / "inverse.patch"
        inverse_file.write_text("".join(i or "" for i in reversed(inverses)), encoding="utf-8",
                                errors="surrogateescape")
        files = [self.patches[r.index].path for r in self.reports] + [inverse_file]
        run = self.index.apply(files, strip=self.patches[self.reports[0].index].strip)
        if not run.ok:
            return False
        reversed_tree = self.index.write_tree()
        if reversed_tree != pin_tree:
            return False
        self._read_verbose(self.reports, run)
        for r in self.reports:
            r.grade = OFFSET if r.offsets else EXACT
        self.reversed_tree = reversed_tree
        return True

    def per_patch(self, pin_tree: str) -> None:
        applied: list[PatchReport] = []
        broken = False
        for r in self.reports:
            if r.grade == INVALID:
                broken = True
                continue
            if broken:
                r.grade = SKIPPED
                r.failure = Failure(reason="not checked: an earlier patch failed")
                continue
            if self.progress:
                self.progress(f"[{r.index}/{len(self.reports)}] {r.name}")
            run = self._apply([r])
            if run.ok:
                self._read_verbose([r], run)
                r.grade = OFFSET if r.offsets else EXACT
                applied.append(r)
            else:
                r.grade = FAILED
                r.failure = self._explain(r, run.stderr)
                broken = True
        if broken:
            return
        for r in reversed(applied):
            run = self._apply([r], reverse=True)
            if not run.ok:
                r.grade = IRREVERSIBLE
                failure = self._explain(r, run.stderr)
                r.failure = Failure(reason=f"does not reverse cleanly: {failure.reason}",
                                    file=failure.file, hunk=failure.hunk, line=failure.line,
                                    upstream_line=failure.upstream_line)
                return
        self.reversed_tree = self.index.write_tree()
        if self.reversed_tree != pin_tree and applied:
            # Every patch reversed, yet the tree differs: one of them reversed at a
            # different place than it applied. Find it by reversing each on its own.
            self._blame_reversal(applied, pin_tree)

    def _blame_reversal(self, applied: list[PatchReport], pin_tree: str) -> None:
        self.index.read_tree(pin_tree)
        before = pin_tree
        for r in applied:
            self._apply([r])
            after = self.index.write_tree()
            self._apply([r], reverse=True)
            if self.index.write_tree() != before:
                r.grade = IRREVERSIBLE
                r.failure = Failure(reason="applies, but reversing it does not restore the tree "
                                    "(a hunk matched elsewhere; widen its context)")
                return
            self.index.read_tree(after)
            before = after

    def _read_verbose(self, reports: Sequence[PatchReport], run: gitrepo.ApplyRun) -> None:
        """Map `git apply -v` output back to patches: offsets and whitespace warnings."""
        targets = [(r, f) for r in reports for f in self.patches[r.index].files]
        for h in run.offsets():
            if h.file_index < len(targets):  # later file diffs are the generated inverses
                report, fdiff = targets[h.file_index]
                report.offsets.append(HunkOffset(file=fdiff.path, hunk=h.hunk, offset=h.offset,
                                                 line=h.line))
        by_path = {str(self.patches[r.index].path): r for r in reports}
        for line in run.stderr.splitlines():
            if (m := _WS.match(line)) and m.group("file") in by_path:
                report = by_path[m.group("file")]
                report.findings.append(Finding(WARNING, "whitespace",
                                               f"adds whitespace error: {m.group('what')}",
                                               int(m.group("line"))))

    def _explain(self, report: PatchReport, stderr: str) -> Failure:
        return explain_failure(self.patches[report.index], stderr)


def explain_failure(patch: Patch, stderr: str) -> Failure:
    """Why ``git apply`` refused ``patch``: the file, hunk and line, from its stderr."""
    errors = [m.group(1) for ln in stderr.splitlines() if (m := _ERROR.match(ln))]
    for line in stderr.splitlines():
        m = _FAILED_AT.match(line)
        if not m:
            continue
        path, at = m.group("file"), int(m.group("line"))
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
    reason = next((e for e in errors if not e.startswith("while searching")), None)
    reason = reason or (stderr.strip().splitlines() or ["git apply failed"])[-1]
    file = next((f.path for f in patch.files if f.path in reason), None)
    at_line = next((f.line for f in patch.files if f.path == file), None)
    return Failure(reason=reason, file=file, line=at_line)


def _check_lock(stack: Stack, fp: str, pin: Pin, patches: list[Patch]):
    from patchctl.fingerprint import make_lock
    from patchctl.stack import render_lock

    try:  # the lock is ours and canonical: equal text means current, no TOML parse needed
        if stack.lock_path.read_text(encoding="utf-8") == render_lock(make_lock(pin, patches)):
            return "current", None
    except (OSError, UnicodeDecodeError):
        pass
    lock = stack.lock()
    if lock is None:
        return "missing", Finding(ERROR, "lock", f"{stack.lock_path} is missing; "
                                  "write it with `patchctl lock`")
    if lock.fingerprint == fp:
        return "current", None
    changed = [p.name for p, lp in zip(patches, lock.patches, strict=False)
               if (lp.file, lp.digest) != (p.name, p.digest)]
    if lock.pin != pin.commit:
        why = "the pin changed"
    elif len(lock.patches) != len(patches):
        why = f"the series has {len(patches)} patches, the lock {len(lock.patches)}"
    else:
        why = "changed: " + ", ".join(changed) if changed else "the patch order changed"
    return "stale", Finding(ERROR, "lock", f"{stack.lock_path.name} is stale ({why}); "
                            "run `patchctl lock` after reviewing the change")
