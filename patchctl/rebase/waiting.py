"""Whether a conflicting patch conflicts only because an earlier one was left out.

When a patch conflicts at the new pin, rebase-pin leaves it out and grades the rest
without it; a later patch whose lines stand on the left-out patch's lines then
conflicts too, though nothing upstream did touches it: it cannot be graded until the
earlier patch has a new form. Counting it as a conflict of its own overstates what a
person will meet. The rule, sound in the direction that matters (a patch with a
conflict of its own is never called waiting):

A conflicting patch is ``waiting`` on the left-out patches L when

1. at least one of its hunks stands on L: at the old pin, with the whole old stack
   before it applied, the hunk's pre-image (context and removed lines) covers a line
   that a patch of L wrote last; and
2. every other hunk of it applies at fuzz 0 where the patch is tried at the new pin
   (the new pin plus the patches before it that went on; L left out), each file it
   creates is absent there, and it has no binary, rename or mode-only change.

Only (1)'s hunks are left ungraded, and they stand on text that exists only in a patch
a person is about to resolve; a resolution that keeps that patch's lines lets them
apply (--continue grades them again then). A line L deleted, rather than wrote, is not
tracked: a hunk standing on a deletion fails (2) and stays a conflict, which over-counts
but never hides one. Everything is read from two trees in two git calls; the hunks are
matched in Python as ``git apply`` matches them (model/patchfile.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from patchctl import gitrepo
from patchctl.errors import GitError
from patchctl.model.patchfile import Hunk, Patch, apply_hunks, image_lines, match_hunk


class Patched(Protocol):
    """A patch of the old stack and its place in the series (engine.Source)."""

    @property
    def index(self) -> int: ...

    @property
    def patch(self) -> Patch: ...


def waits_on(
    repo: Path,
    env: Mapping[str, str],
    old: str,
    current: str,
    priors: Sequence[Patched],
    left_out: Mapping[int, str],
    patch: Patch,
) -> list[str]:
    """The names of the left-out patches (series index -> name) that ``patch`` waits on;
    empty when its conflict is its own. ``priors``: the old stack before it, in order;
    ``current``: the tree it was tried on at the new pin."""
    if not left_out or any(
        f.binary or (f.source is not None and (not f.hunks or f.source != f.target))
        for f in patch.files
    ):
        return []
    paths = sorted({f.path for f in patch.files})
    try:
        then = gitrepo.read_blobs(repo, old, paths, env=dict(env))
        now = gitrepo.read_blobs(repo, current, paths, env=dict(env))
    except (GitError, gitrepo.MissingFiles):
        return []  # a tree this clone cannot read: no proof, so a conflict
    hit: set[int] = set()
    for f in patch.files:
        if f.source is None:  # a new file stands on nothing; it must be new there too
            if f.path in now:
                return []
            continue
        tags = _tagged(then[f.path][1] if f.path in then else None, priors, f.path)
        if tags is None:
            return []
        own = _standing(tags, f.hunks, set(left_out), hit)
        if own is None:
            return []
        if own and (f.path not in now or apply_hunks(now[f.path][1], own) is None):
            return []
    return [left_out[i] for i in sorted(hit)]


def _tagged(
    data: bytes | None, priors: Sequence[Patched], path: str
) -> list[tuple[str, int | None]] | None:
    """The file at the old pin with each of ``priors`` applied (as the old stack has it),
    each line with the series index of the patch that wrote it last (None: upstream's);
    None when a prior's hunk does not match (it cannot be proven, so nothing is)."""
    lines: list[tuple[str, int | None]] = (
        [(ln, None) for ln in image_lines(data)] if data is not None else []
    )
    for p in priors:
        for f in p.patch.files:
            if f.target != path and f.source != path:
                continue
            if f.target != path or f.source not in (None, path) or f.binary:
                return None  # renamed or deleted by the stack: not followed
            if f.source is None:
                lines = []
            for h in f.hunks:
                found = match_hunk([ln for ln, _ in lines], h)
                if found is None:
                    return None
                at, pre, post = found
                lines[at : at + len(pre)] = _rewrite(lines[at : at + len(pre)], h, post, p.index)
    return lines


def _rewrite(
    before: list[tuple[str, int | None]], hunk: Hunk, post: list[str], index: int
) -> list[tuple[str, int | None]]:
    """The hunk's post-image lines, context keeping its tag, added lines tagged ``index``."""
    out: list[tuple[str, int | None]] = []
    old = iter(before)
    for line in (ln for ln in hunk.lines if ln[:1] in (" ", "-", "+")):
        if line[:1] == " ":
            out.append(next(old))
        elif line[:1] == "-":
            next(old)
        else:
            out.append((post[len(out)], index))
    return out


def _standing(
    tags: list[tuple[str, int | None]], hunks: Sequence[Hunk], left_out: set[int], hit: set[int]
) -> list[Hunk] | None:
    """The hunks that do not stand on a left-out patch's lines (they must apply by
    themselves); adds to ``hit`` those that the others stand on. None when a hunk does not
    match the old stack's file (it is not the file the patch was made on)."""
    own: list[Hunk] = []
    image = [ln for ln, _ in tags]
    for h in hunks:
        found = match_hunk(image, h)
        if found is None:
            return None
        at, pre, post = found
        on = {t for _, t in tags[at : at + len(pre)] if t is not None and t in left_out}
        hit |= on
        if not on:
            own.append(h)
        image[at : at + len(pre)] = post
        tags[at : at + len(pre)] = [(ln, None) for ln in post]
    return own
