"""Why a patch conflicts: the upstream commits that changed the lines its hunks touch.

A patch's hunks name line ranges of the file at the old pin (their pre-image,
context included). Walking the file's first-parent history from the old pin to
the new one, oldest first, each commit's zero-context hunks either overlap a
range (the commit is part of the answer) or only move it; each range is carried
forward through every commit, so later commits are matched against where the
lines are by then. This is ``git log -L`` run forward from the old pin, in one
``git log`` call per file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from patchctl.gitrepo import FileChange

Hunk = tuple[int, int, int, int]  # old start, old length, new start, new length


@dataclass(frozen=True)
class Touch:
    commit: str
    subject: str


def touching(ranges: Sequence[tuple[int, int]], changes: Sequence[FileChange]) -> list[Touch]:
    """The changes, oldest first, whose hunks touch one of ``ranges`` (inclusive 1-based
    line ranges of the file before the first change)."""
    current = [(a, b) for a, b in ranges if a <= b]
    hits: list[Touch] = []
    for change in changes:
        if any(_overlaps(h, a, b) for h in change.hunks for a, b in current):
            hits.append(Touch(change.commit, change.subject))
        current = [(_move(a, change.hunks, end=False), _move(b, change.hunks, end=True))
                   for a, b in current]
    return hits


def _overlaps(hunk: Hunk, a: int, b: int) -> bool:
    old_start, old_len = hunk[0], hunk[1]
    if old_len == 0:  # an insertion after line old_start: inside the range, not at its edges
        return a <= old_start < b
    return old_start <= b and old_start + old_len - 1 >= a


def _move(line: int, hunks: Sequence[Hunk], *, end: bool) -> int:
    """Where ``line`` is after the change; a line the change rewrote maps to the edge of
    its replacement (the first line for a range's start, the last for its end)."""
    delta = 0
    for old_start, old_len, new_start, new_len in hunks:
        if old_len == 0:
            if old_start < line:
                delta += new_len
            continue
        old_end = old_start + old_len - 1
        if old_end < line:
            delta += new_len - old_len
        elif old_start <= line:
            if new_len == 0:
                return new_start if end else new_start + 1
            return new_start + new_len - 1 if end else new_start
    return line + delta


def hunk_ranges(hunks: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """(source start, source length) of a patch's hunks as inclusive line ranges."""
    return [(start, start + length - 1) for start, length in hunks if length > 0]
