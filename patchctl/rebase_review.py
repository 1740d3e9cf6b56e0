"""What a rebase-pin tells the person resolving or reviewing it.

- ``explain``: for a conflicting patch, per file, the upstream commits between
  the two pins that changed the lines its hunks touch (linetrack.py);
- ``recheck``: the rebased stack, before anything is written: every patch
  applies at the new pin on the ones before it, the whole stack reverses to
  the pin's tree, and each patch stays inside its ``Scope:``;
- ``range_diff``: the stack before and after as two commit series, compared
  with ``git range-diff`` (what a reviewer of a refreshed patch reads).

All of it is index-only: commits and trees go to a temporary object directory.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from patchctl import gitrepo, linetrack
from patchctl.errors import GitError
from patchctl.lint import lint_patch
from patchctl.patchfile import Patch

MAX_CAUSES = 8  # commits listed per file; the rest are counted


@dataclass(frozen=True)
class CauseCommit:
    id: str
    subject: str


@dataclass
class Cause:
    """Why ``patch`` conflicts in ``file``: the upstream commits that changed its lines."""

    patch: str
    file: str
    commits: list[CauseCommit] = field(default_factory=list)
    note: str | None = None


def search_base(upstream: Path, old: str, new: str) -> str | None:
    """Where a search along NEW's first-parent line starts: the old pin when NEW descends
    from it, else their merge-base (a release branch); None without shared history."""
    if gitrepo.is_ancestor(upstream, old, new):
        return old
    return gitrepo.merge_base(upstream, old, new)


def explain(upstream: Path, old: str, new: str, patch: Patch,
            files: Sequence[str]) -> list[Cause]:
    base = search_base(upstream, old, new)
    causes: list[Cause] = []
    for f in patch.files:
        if f.source is None or f.path not in files:
            continue  # a new file cannot conflict on lines upstream changed
        cause = Cause(patch.name, f.path)
        causes.append(cause)
        if base is None:
            cause.note = "the pins share no history"
            continue
        try:
            changes = gitrepo.file_changes(upstream, base, new, f.path)
        except GitError as e:
            cause.note = f"its history is not readable here ({gitrepo.last_line(e.stderr)})"
            continue
        ranges = linetrack.hunk_ranges([(h.source_start, h.source_length) for h in f.hunks])
        cause.commits = [CauseCommit(t.commit, t.subject)
                         for t in linetrack.touching(ranges, changes)]
        if not cause.commits:
            cause.note = (f"no upstream commit changed the patch's lines ({len(changes)} "
                          "changed the file elsewhere)")
    return causes


def recheck(upstream: Path, new: str, patches: Sequence[tuple[Patch, str]]) -> list[str]:
    """Problems of the rebased stack at ``new`` (empty: it is sound). ``patches`` are the
    new stack in series order: each parsed patch with its text."""
    problems: list[str] = []
    for patch, _ in patches:
        problems += [f"{patch.name}: {f.message}" for f in lint_patch(patch) if f.code == "scope"]
    with tempfile.TemporaryDirectory(prefix="patchctl-recheck-") as tmp, \
            gitrepo.temp_index(upstream) as index:
        files = _write(Path(tmp), patches)
        pin_tree = gitrepo.tree_of(upstream, new)
        index.read_tree(new)
        for (patch, _), path in zip(patches, files, strict=True):
            run = index.apply([path], strip=patch.strip)
            if not run.ok:
                problems.append(f"{patch.name} does not apply at {new[:12]}: "
                                f"{gitrepo.last_line(run.stderr)}")
                return problems
        for (patch, _), path in reversed(list(zip(patches, files, strict=True))):
            run = index.apply([path], strip=patch.strip, reverse=True)
            if not run.ok:
                problems.append(f"{patch.name} does not reverse at {new[:12]}: "
                                f"{gitrepo.last_line(run.stderr)}")
                return problems
        if index.write_tree() != pin_tree:
            problems.append(f"the stack does not reverse to the tree of {new[:12]}")
    return problems


def range_diff(upstream: Path, old: tuple[str, Sequence[tuple[Patch, str]]],
               new: tuple[str, Sequence[tuple[Patch, str]]]) -> str:
    """``git range-diff`` of the stack on the old pin against the stack on the new pin;
    each side is (pin, patches in series order). Raises GitError if a side does not
    apply (the caller has classified them, so it does)."""
    with tempfile.TemporaryDirectory(prefix="patchctl-range-diff-") as tmp, \
            gitrepo.temp_index(upstream) as index:
        tips = []
        for side, (pin, patches) in (("old", old), ("new", new)):
            (Path(tmp) / side).mkdir()
            tip = pin
            index.read_tree(pin)
            for (patch, _), path in zip(patches, _write(Path(tmp) / side, patches), strict=True):
                run = index.apply([path], strip=patch.strip)
                if not run.ok:
                    raise GitError(["git", "apply", str(path)], run.returncode, run.stderr)
                message = (patch.subject or patch.name) + (f"\n\n{patch.body}" if patch.body
                                                           else "")
                tip = index.commit(index.write_tree(), tip, message)
            tips.append((pin, tip))
        return index.range_diff(tips[0], tips[1])


def _write(tmp: Path, patches: Sequence[tuple[Patch, str]]) -> list[Path]:
    paths = []
    for i, (_, text) in enumerate(patches, 1):
        path = tmp / f"{i:04d}.patch"
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
        paths.append(path)
    return paths
