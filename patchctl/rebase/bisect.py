"""The binary searches of ``rebase-pin --bisect`` and of a landing: along the first-parent
line from the old pin to the new one, the first commit at which a patch stops applying, or
starts to reverse-apply (the patch landed), each probe an index-only ``git apply --check``
with the earlier patches that touch the same files."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from patchctl import gitrepo
from patchctl.errors import GitError
from patchctl.model.grades import UPSTREAM
from patchctl.rebase.engine import BROKEN, DROPPED, Progress, Source, Step, apply_priors
from patchctl.rebase.results import Bisect, Commit, Landing
from patchctl.textout import count


class Searcher:
    """Binary searches along the first-parent line from the old pin to the new one."""

    def __init__(self, index: gitrepo.TempIndex, repo: Path, old: str, new: str,
                 sources: Sequence[Source], progress: Progress | None) -> None:
        self.index, self.repo, self.old, self.new = index, repo, old, new
        self.sources = list(sources)
        self.progress = progress
        self.line = [old, *gitrepo.first_parent_path(repo, old, new)]

    @property
    def commits(self) -> int:
        return len(self.line) - 1

    @property
    def bound(self) -> int:
        return math.ceil(math.log2(self.commits)) + 2 if self.commits > 1 else 2

    def _probe(self, commit: str, source: Source, *, reverse: bool) -> bool:
        self.index.read_tree(commit)
        # Only earlier patches that touch the same files can change the answer.
        paths = {p for f in source.patch.files for p in f.paths}
        apply_priors(self.index, [p for p in self.sources if p.index < source.index and
                                   paths & {q for f in p.patch.files for q in f.paths}])
        return self.index.apply([source.path], strip=source.strip, reverse=reverse,
                                check_only=True).ok

    def _first_change(self, source: Source, *, reverse: bool) -> tuple[int | None, int, str | None]:
        """The first position on the line where the probe's answer flips from the old pin's."""
        start = not reverse  # at the old pin it applies, and does not reverse-apply
        lo, hi = 0, len(self.line) - 1
        checks = 2
        if self._probe(self.line[lo], source, reverse=reverse) != start:
            what = "does not apply" if start else "already reverse-applies"
            return None, 1, f"{what} at {self.old[:12]}, where the search starts, either"
        if self._probe(self.line[hi], source, reverse=reverse) == start:
            return None, checks, "its state at the new pin depends on the rebased patches " \
                "before it, not on one upstream commit"
        while hi - lo > 1:
            mid = (lo + hi) // 2
            checks += 1
            if self.progress:
                left = count(hi - lo, "commit")
                self.progress(f"bisect {source.name}: check {checks}, {left} left")
            if self._probe(self.line[mid], source, reverse=reverse) == start:
                lo = mid
            else:
                hi = mid
        return hi, checks, None

    def first_bad(self, source: Source) -> Bisect:
        pos, checks, note = self._first_change(source, reverse=False)
        return Bisect(self._commit(pos), checks, self.commits, self.bound, note)

    def landing(self, source: Source) -> Landing:
        """The upstream commit that carries this patch: same patch-id, else the first commit
        after which it reverse-applies."""
        paths = sorted({p for f in source.patch.files for p in f.paths})
        try:
            ids = gitrepo.range_patch_ids(self.repo, self.old, self.new, paths)
        except GitError:
            ids = {}  # a mirror without some blobs: the reverse-apply search still works
        pid = gitrepo.patch_id(self.repo, source.patch.text)
        if pid and pid in ids:
            commit = ids[pid]
            return Landing(Commit(commit, gitrepo.subject(self.repo, commit)), "patch-id")
        pos, checks, _ = self._first_change(source, reverse=True)
        return Landing(self._commit(pos), "reverse-apply" if pos else "unknown", checks)

    def _commit(self, pos: int | None) -> Commit | None:
        if pos is None:
            return None
        return Commit(self.line[pos], gitrepo.subject(self.repo, self.line[pos]))


def name_and_bisect(steps: Sequence[Step], searcher: Searcher | None, *, bisect: bool) -> int:
    """Name the landing commit of upstream patches; with ``bisect``, the breaking commit of
    the others. Returns the number of bisect checks made."""
    checks = 0
    for step in steps:
        r = step.result
        if r.grade == UPSTREAM:
            if r.landed is None:  # a landing by reference is named already
                r.landed = searcher.landing(step.source) if searcher else \
                    Landing(None, "unknown")
            r.change = DROPPED
        elif bisect and r.grade in BROKEN:
            if searcher is None:
                r.bisect = Bisect(None, 0, 0, 0, "the new pin does not descend from the old one")
            else:
                r.bisect = searcher.first_bad(step.source)
                checks += r.bisect.checks
    return checks
