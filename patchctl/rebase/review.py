"""What a rebase-pin tells the person resolving or reviewing it.

- ``explain``: for a conflicting patch, per file, the upstream commits between
  the two pins that changed the lines its hunks touch (rebase/linetrack.py);
- ``recheck``: the rebased stack, before anything is written: every patch
  applies at the new pin on the ones before it, the whole stack reverses to
  the pin's tree, and each patch stays inside its ``Scope:``;
- ``range_diff``: the stack before and after as two commit series, compared
  with ``git range-diff`` (what a reviewer of a refreshed patch reads).

All of it is index-only: commits and trees go to a temporary object directory.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from patchctl import gitrepo
from patchctl.errors import GitError, StackError
from patchctl.model.lint import lint_patch
from patchctl.model.patchfile import Patch
from patchctl.rebase import linetrack
from patchctl.toolout import reason

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
            cause.note = f"its history is not readable here ({reason(e.stderr)})"
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
                                f"{reason(run.stderr)}")
                return problems
        for (patch, _), path in reversed(list(zip(patches, files, strict=True))):
            run = index.apply([path], strip=patch.strip, reverse=True)
            if not run.ok:
                problems.append(f"{patch.name} does not reverse at {new[:12]}: "
                                f"{reason(run.stderr)}")
                return problems
        if index.write_tree() != pin_tree:
            problems.append(f"the stack does not reverse to the tree of {new[:12]}")
    return problems


def range_diff(upstream: Path, old: tuple[str, Sequence[tuple[Patch, str]]],
               new: tuple[str, Sequence[tuple[Patch, str]]],
               grades: Mapping[str, str] | None = None) -> str:
    """``git range-diff`` of the stack on the old pin against the stack on the new pin;
    each side is (pin, patches in series order). A patch keeps its name across a rebase,
    so each old patch is compared with the new patch of its name (one ``range-diff`` per
    pair: git's own matching would show a reworked patch as dropped plus new, or pair it
    with another), and a dropped one is shown as removed. ``grades``: a patch's grade by
    name, shown after its pair's line (a patch placed by a rule, not a line merge). Raises
    StackError if a side does not apply (the caller has classified them, so it does)."""
    with tempfile.TemporaryDirectory(prefix="patchctl-range-diff-") as tmp, \
            gitrepo.temp_index(upstream) as index:
        old_commits = _commit_series(index, Path(tmp) / "old", *old)
        new_commits = _commit_series(index, Path(tmp) / "new", *new)
        new_at = {p.name: (i, c) for i, ((p, _), c) in enumerate(zip(new[1], new_commits,
                                                                       strict=True), 1)}
        out: list[str] = []
        for i, ((patch, _), (parent, commit)) in enumerate(zip(old[1], old_commits,
                                                              strict=True), 1):
            if patch.name not in new_at:  # dropped (git refuses an empty range)
                out.append(f"{i}:  {commit[:7]} < -:  ------- {patch.subject or patch.name}\n")
                continue
            j, (new_parent, new_commit) = new_at[patch.name]
            text = index.range_diff((parent, commit), (new_parent, new_commit))
            first, _, rest = text.partition("\n")
            first = re.sub(r"^1:", f"{i}:", first)
            first = re.sub(r"(\s[=!<>]\s+)1:", rf"\g<1>{j}:", first)
            if (grades or {}).get(patch.name):
                first += f"  [{(grades or {})[patch.name]}]"
            out.append(first + "\n" + rest)
        return "".join(out)


def _commit_series(index: gitrepo.TempIndex, tmp: Path, pin: str,
                   patches: Sequence[tuple[Patch, str]]) -> list[tuple[str, str]]:
    """Each patch committed on the ones before it, from ``pin``: (parent, commit) pairs."""
    tmp.mkdir()
    index.read_tree(pin)
    tip, out = pin, []
    for (patch, _), path in zip(patches, _write(tmp, patches), strict=True):
        run = index.apply([path], strip=patch.strip)
        if not run.ok:
            why = run.error.message if run.error else "git apply failed"
            raise StackError(f"{patch.name} does not apply for the range-diff: {why}")
        message = (patch.subject or patch.name) + (f"\n\n{patch.body}" if patch.body else "")
        commit = index.commit(index.write_tree(), tip, message)
        out.append((tip, commit))
        tip = commit
    return out


def _write(tmp: Path, patches: Sequence[tuple[Patch, str]]) -> list[Path]:
    paths = []
    for i, (_, text) in enumerate(patches, 1):
        path = tmp / f"{i:04d}.patch"
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
        paths.append(path)
    return paths
