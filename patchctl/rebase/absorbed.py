"""What a merge took as already there: the part of a patch's change its rebased form no
longer makes.

A clean three-way merge takes an edit that upstream made identically (the same lines
removed, the same lines added, at the same place) once: the rebased patch then no longer
makes it, and every check at the new pin (applies, reverses at fuzz 0) still passes. That
is right for a fix upstream took in part, and wrong where the same text means another
thing on each side: a count of entries (``static_assert(COUNT == 83)`` bumped by the patch
for its own entry and by upstream for another), a version, an index. Only a person can
tell, so it is never passed as a plain grade: it is named, file, hunks and lines, in the
report, ``--json`` and the range-diff, and it is a doubted move (rebase/results.py): the
rebase stops there for a person to judge, who may take it as it stands.

The test is on the patch's net change, which no choice of diff alignment alters: per line
of text, how many more times it stands after the patch than before (added minus removed,
over all its files, so a hunk re-targeted to another file counts the same). The old patch
and its rebased form change the same lines when, and only when, the two agree line by
line. Nothing here runs git but ``gitrepo``'s read of the new pin's files.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from patchctl import gitrepo
from patchctl.errors import GitError, InputError
from patchctl.model.patchfile import Patch


@dataclass(frozen=True)
class Absorbed:
    """Lines of one file of the old patch whose change the rebased patch does not make."""

    file: str  # the file the old patch changes them in
    hunks: list[int]  # its hunks there holding them, from 1
    lines: list[str]  # as in the old patch: "-removed", "+added"
    there: bool  # every line it added stands in the file at the new pin already: upstream
    # made the same edit (a convergent change); False: lost otherwise


def net(patch: Patch) -> Counter[str]:
    """Per line of text: the times the patch adds it minus the times it removes it."""
    out: Counter[str] = Counter()
    for f in patch.files:
        for h in f.hunks:
            for ln in h.lines:
                if ln[:1] == "+":
                    out[ln[1:]] += 1
                elif ln[:1] == "-":
                    out[ln[1:]] -= 1
    return out


def lost_lines(old: Patch, new: Patch) -> list[tuple[str, list[int], list[str]]]:
    """The old patch's +/- lines whose change ``new`` does not make: per file of ``old``
    (file, its hunks holding them, the lines). Empty when both make the same net change."""
    owed = net(old)
    owed.subtract(net(new))  # > 0: a line the old patch adds more often (or removes less)
    out: list[tuple[str, list[int], list[str]]] = []
    for f in old.files:
        hunks: list[int] = []
        lines: list[str] = []
        for number, h in enumerate(f.hunks, 1):
            for ln in h.lines:
                sign = {"+": 1, "-": -1}.get(ln[:1], 0)
                if sign and owed[ln[1:]] * sign > 0:
                    owed[ln[1:]] -= sign
                    lines.append(ln)
                    if not hunks or hunks[-1] != number:
                        hunks.append(number)
        if lines:
            out.append((f.path, hunks, lines))
    return out


def find(repo: Path, env: dict[str, str], base: str, old: Patch, new: Patch) -> list[Absorbed]:
    """What ``new`` (the rebased ``old``, made on tree ``base``) no longer changes, each
    file's lines marked ``there`` when the new pin (``base``) already holds what they
    added. Empty when ``new`` makes the same net change as ``old``."""
    lost = lost_lines(old, new)
    if not lost:
        return []
    try:
        blobs = gitrepo.read_blobs(repo, base, sorted({f for f, _, _ in lost}), env=env)
    except (GitError, InputError):  # a blob the mirror lacks: said, not proven there
        blobs = {}
    out = []
    for file, hunks, lines in lost:
        text = (
            blobs[file][1].decode("utf-8", "surrogateescape").split("\n") if file in blobs else []
        )
        have = Counter(text)
        added = Counter(ln[1:] for ln in lines if ln[:1] == "+")
        there = bool(text) and all(have[ln] >= n for ln, n in added.items())
        out.append(Absorbed(file, hunks, lines, there))
    return out


def describe(a: Absorbed) -> str:
    """One line for the report."""
    which = ", ".join(f"#{h}" for h in a.hunks)
    hunks = f"hunk {which}" if len(a.hunks) == 1 else f"hunks {which}"
    why = (
        (
            "upstream made the same edit, so the rebased patch no longer makes it; check "
            "the patch still holds without it (a count, a version, an index: the same text "
            "can mean another thing on each side)"
        )
        if a.there
        else "the rebased patch no longer makes this change"
    )
    return f"{a.file} {hunks}: {why}"


def tag(found: list[Absorbed]) -> str:
    """The range-diff's mark: the files and lines it names, short."""
    return "already upstream in part: " + ", ".join(
        f"{a.file} " + ", ".join(f"#{h}" for h in a.hunks) for a in found
    )
