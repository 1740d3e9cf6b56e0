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
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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


def locate(repo: Path, env: Mapping[str, str], current: str, patch: Patch) -> Located | None:
    """Where each hunk of ``patch`` matches at fuzz 0 in ``current`` (its own file, as
    ``git apply`` looks), and the hunks that match nowhere there; None when the patch has a
    change no strategy here re-places (binary, rename, new or deleted file) or its files
    cannot be read."""
    if any(
        f.binary or f.source is None or f.target is None or f.source != f.target or not f.hunks
        for f in patch.files
    ):
        return None
    paths = sorted({f.path for f in patch.files})
    try:
        blobs = gitrepo.read_blobs(repo, current, paths, env=dict(env))
    except (GitError, gitrepo.MissingFiles):  # what it cannot read it does not follow
        return None
    out = Located({}, [], {})
    for f in patch.files:
        image = out.images[f.path] = image_lines(blobs[f.path][1]) if f.path in blobs else []
        for n, h in enumerate(f.hunks, 1):
            found = match_hunk(image, h)
            if found is None:
                out.lost.append((f.path, n, h))
            else:
                out.placed.setdefault(f.path, []).append((found[0], h))
    return out


def follow(
    repo: Path, env: Mapping[str, str], tree: str, current: str, span: str, located: Located
) -> Found | None:
    """A patch ``located`` at ``current`` re-targeted where its lost hunks' lines went (see
    the module's docstring); None when no hunk of it lost its lines, or one's lines are
    nowhere whole (its conflict is not a move). ``span``: the upstream range (``old..new``)
    where the commit that moved the lines is looked for."""
    placed, lost = {p: list(hs) for p, hs in located.placed.items()}, located.lost
    if not lost:
        return None
    moved: list[MovedHunk] = []
    for path, n, h in lost:
        pre = [ln[1:] + "\n" for ln in h.lines if ln[:1] in (" ", "-")]
        if sum(map(says_something, pre)) < MIN_LINES:
            return Found(moved, refused=f"{path} hunk #{n}: too few lines to find it by")
        places = _places(repo, env, tree, current, pre)
        if not places:
            return None  # its lines changed, not (only) moved: a conflict as any other
        if len(places) > 1:
            where = ", ".join(f"{p}:{at + 1}" for p, at in places[:4])
            return Found(moved, refused=f"{path} hunk #{n}: ambiguous: its lines are at {where}")
        to, at = places[0]
        ref = gitrepo.first_adding(repo, span, max(pre, key=len).rstrip("\n"), to)
        moved.append(
            MovedHunk(
                path, n, to, at + 1, ref.commit if ref else None, ref.subject if ref else None
            )
        )
        placed.setdefault(to, []).append((at, h))
    return Found(moved, diff=placed_diff(placed))


def _places(
    repo: Path, env: Mapping[str, str], tree: str, current: str, pre: list[str]
) -> list[tuple[str, int]]:
    """Every (file, 0-based line) of the tree where ``pre`` stands whole."""
    key = max(pre, key=len).rstrip("\n")
    files = sorted({hit.path for hit in gitrepo.grep_fixed(repo, tree, [key], whole_words=False)})
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
