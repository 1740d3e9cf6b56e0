"""Follow moved code: a conflicting patch whose lines upstream moved to another place.

Upstream moves code between files often; a patch whose own lines are unchanged but moved
is a conflict for every line-based merge. For a patch that conflicts at the new pin, each
hunk whose pre-image (its context and removed lines) no longer matches in its own file
(at fuzz 0, where the patch is tried) is looked for across the new pin's tree: candidate
files by ``git grep -F`` of its longest line, then an exact match of the whole pre-image
in each (as ``git apply`` matches, model/patchfile.py). A hunk found at exactly one place
is re-targeted there. Found nowhere, the patch stays a conflict; found at two or more
places (ambiguous), it stays a conflict and the places are named. The re-targeted patch
must then apply and reverse at the new pin and stay in its Scope (engine.classify); its
``moved`` hunks name the upstream commit that brought the lines to their new place
(``git log -S``). A hunk whose pre-image has under two lines that say something is never
followed: too little to prove a place.

A file upstream renamed is followed first, as git's own merges follow it: when the patch's
file is gone at the new pin and git's rename detection over the range names its new path
(gitrepo.renamed_paths), each hunk is tried in the renamed file as ``git apply`` tries it in
its own (fuzz 0, nearest the line its header says), and only the hunks that do not match
there are looked for across the tree. The rename proves the file, ``git apply``'s match the
place, so such a hunk needs no two lines to be found by.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from patchctl import gitrepo
from patchctl.errors import GitError
from patchctl.model.patchfile import Hunk, Patch, image_lines, match_hunk

MIN_LINES = 2  # lines of a pre-image that say something (not blank, not only punctuation)


@dataclass(frozen=True)
class MovedHunk:
    file: str  # where the hunk stood at the old pin
    hunk: int  # its number in that file, from 1
    to: str  # the file it stands in at the new pin
    line: int  # the line there its pre-image starts at
    commit: str | None  # the upstream commit that brought the lines there
    subject: str | None


@dataclass
class Found:
    """A re-targeted patch (``diff``: its whole diff) or why none (``refused``)."""

    hunks: list[MovedHunk]
    diff: str | None = None
    refused: str | None = None


Placed = dict[str, list[tuple[int, Hunk]]]  # path -> (0-based line, hunk) at the new pin
Lost = list[tuple[str, int, Hunk]]  # (path, hunk number from 1, hunk) matching nowhere


def says_something(line: str) -> bool:
    """A line that can prove a place: not blank, not only punctuation."""
    return any(c.isalnum() for c in line)


@dataclass
class Located:
    placed: Placed  # the hunks that match where they are tried
    lost: Lost  # the others
    images: dict[str, list[str]]  # each file's lines at the new pin (model/patchfile.py)
    renamed: dict[str, str] = field(default_factory=dict)  # a file upstream renamed: its
    # path at the new pin -> the patch's path (placed, lost and images use the new one)
    followed: list[tuple[str, int, str, int, Hunk]] = field(default_factory=list)  # hunks
    # placed in a renamed file: (the patch's path, hunk number, new path, 0-based line, hunk)


def locate(
    repo: Path,
    env: Mapping[str, str],
    current: str,
    patch: Patch,
    renames: Mapping[str, str] | None = None,
) -> Located | None:
    """Where each hunk of ``patch`` matches at fuzz 0 in ``current`` (its own file, as
    ``git apply`` looks; for a file ``current`` lacks that ``renames`` maps to a new path,
    the renamed file), and the hunks that match nowhere there; None when the patch has a
    change no strategy here re-places (binary, rename, new or deleted file) or its files
    cannot be read."""
    if any(
        f.binary or f.source is None or f.target is None or f.source != f.target or not f.hunks
        for f in patch.files
    ):
        return None
    renames = renames or {}
    paths = sorted({p for f in patch.files for p in (f.path, renames.get(f.path, f.path))})
    try:
        blobs = gitrepo.read_blobs(repo, current, paths, env=dict(env))
    except (GitError, gitrepo.MissingFiles):  # what it cannot read it does not follow
        return None
    out = Located({}, [], {})
    for f in patch.files:
        where = f.path
        if f.path not in blobs and renames.get(f.path) in blobs:
            where = renames[f.path]
            out.renamed[where] = f.path
        image = out.images[where] = image_lines(blobs[where][1]) if where in blobs else []
        for n, h in enumerate(f.hunks, 1):
            found = match_hunk(image, h)
            if found is None:
                out.lost.append((where, n, h))
                continue
            out.placed.setdefault(where, []).append((found[0], h))
            if where != f.path:
                out.followed.append((f.path, n, where, found[0], h))
    return out


def follow(
    repo: Path,
    env: Mapping[str, str],
    search: gitrepo.LineSearch,
    current: str,
    span: str,
    located: Located,
) -> Found | None:
    """A patch ``located`` at ``current`` re-targeted where its lost hunks' lines went (see
    the module's docstring); None when no hunk of it lost its lines or was followed into a
    renamed file, or one's lines are nowhere whole (its conflict is not a move). ``span``:
    the upstream range (``old..new``) where the commit that moved the lines is looked for;
    ``search``: the new pin's tree, where they are looked for."""
    search.files([_key(_pre(h)) for _, _, h in located.lost if _pre(h)])
    placed, lost = {p: list(hs) for p, hs in located.placed.items()}, located.lost
    if not lost and not located.followed:
        return None
    moved = [_moved(repo, span, path, n, to, at, h) for path, n, to, at, h in located.followed]
    for where, n, h in lost:
        path = located.renamed.get(where, where)
        pre = _pre(h)
        if sum(map(says_something, pre)) < MIN_LINES:
            return Found(moved, refused=f"{path} hunk #{n}: too few lines to find it by")
        places = _places(repo, env, search, current, pre)
        if not places:
            return None  # its lines changed, not (only) moved: a conflict as any other
        if len(places) > 1:
            where = ", ".join(f"{p}:{at + 1}" for p, at in places[:4])
            return Found(moved, refused=f"{path} hunk #{n}: ambiguous: its lines are at {where}")
        to, at = places[0]
        moved.append(_moved(repo, span, path, n, to, at, h))
        placed.setdefault(to, []).append((at, h))
    return Found(sorted(moved, key=lambda m: (m.file, m.hunk)), diff=placed_diff(placed))


def _pre(h: Hunk) -> list[str]:
    """The hunk's pre-image: its context and removed lines, each with its newline."""
    return [ln[1:] + "\n" for ln in h.lines if ln[:1] in (" ", "-")]


def _moved(repo: Path, span: str, path: str, n: int, to: str, at: int, h: Hunk) -> MovedHunk:
    """Hunk ``n`` of ``path`` found at 0-based line ``at`` of ``to``, with the commit of
    ``span`` that brought its longest line there."""
    line = max(_pre(h), key=len, default="").rstrip("\n")
    ref = gitrepo.first_adding(repo, span, line, to) if line.strip() else None
    return MovedHunk(path, n, to, at + 1, ref.commit if ref else None, ref.subject if ref else None)


def search_keys(patch: Patch) -> list[str]:
    """The lines following ``patch``'s hunks may look for across the tree (one per hunk):
    ask for them together (gitrepo.LineSearch), one search of the tree for all."""
    return [_key(pre) for f in patch.files for h in f.hunks if (pre := _pre(h))]


def _key(pre: list[str]) -> str:
    """The line a pre-image is looked for by: its longest."""
    return max(pre, key=len).rstrip("\n")


def _places(
    repo: Path, env: Mapping[str, str], search: gitrepo.LineSearch, current: str, pre: list[str]
) -> list[tuple[str, int]]:
    """Every (file, 0-based line) of ``search``'s tree where ``pre`` stands whole."""
    key = _key(pre)
    files = sorted(search.files([key])[key])
    blobs = gitrepo.read_blobs(repo, current, files, env=dict(env)) if files else {}
    out = []
    for path in files:
        image = image_lines(blobs[path][1]) if path in blobs else []
        out += [
            (path, at)
            for at in range(len(image) - len(pre) + 1)
            if image[at : at + len(pre)] == pre
        ]
    return out


def placed_diff(placed: Placed) -> str:
    """A ``git diff`` of every file's hunks, each at its 0-based line of the new pin."""
    return "".join(
        _file_diff(p, sorted(hs, key=lambda x: x[0])) for p, hs in sorted(placed.items())
    )


def _file_diff(path: str, hunks: Sequence[tuple[int, Hunk]]) -> str:
    """A ``git diff`` of ``path`` with ``hunks`` (each at its 0-based line) in order."""
    out = [f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"]
    delta = 0
    for at, h in hunks:
        old = sum(ln[:1] in (" ", "-") for ln in h.lines)
        new = sum(ln[:1] in (" ", "+") for ln in h.lines)
        start = at + 1 if old else at
        out.append(f"@@ -{start},{old} +{start + delta},{new} @@\n")
        out += [ln + "\n" for ln in h.lines]
        delta += new - old
    return "".join(out)


def write_diff(diff: str) -> Path:
    """``diff`` in a temp file for ``git apply`` (the caller removes it)."""
    fd, name = tempfile.mkstemp(prefix="patchctl-moved-", suffix=".patch")
    with os.fdopen(fd, "wb") as out:
        out.write(diff.encode("utf-8", "surrogateescape"))
    return Path(name)
