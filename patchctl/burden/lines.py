"""The pin's lines a patch stands on: its hunks' context and removed lines, followed back
through the earlier patches of the stack to the file they came from at the pin.

No git: only the parsed diffs. A line an earlier patch added (or a file it created) is
the stack's own and leads to no upstream line; a renamed file is followed to its old
path. Line numbers are 1-based.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from patchctl.model.patchfile import FileDiff, Hunk, Patch

# path -> the (series position, file diff) of the patches that wrote that path, in order
Writers = dict[str, list[tuple[int, FileDiff]]]


def writers(patches: Sequence[Patch]) -> Writers:
    out: Writers = {}
    for k, patch in enumerate(patches):
        for f in patch.files:
            if f.target is not None:
                out.setdefault(f.target, []).append((k, f))
    return out


def standing(k: int, patch: Patch, written: Writers) -> dict[str, set[int]]:
    """pin path -> the pin's lines that patch ``k`` (its position in the series) stands on."""
    out: dict[str, set[int]] = {}
    for _, _, path, found in hunks(k, patch, written):
        if found:
            out.setdefault(path, set()).update(found)
    return out


def hunks(k: int, patch: Patch, written: Writers) -> Iterator[tuple[FileDiff, Hunk, str,
                                                                     set[int]]]:
    """Each hunk of patch ``k`` that can stand on the pin, with the pin path and the pin's
    lines it stands on (none when earlier patches added them all)."""
    for f in patch.files:
        if f.source is None or f.binary:
            continue  # a new file costs nothing; a binary diff names no lines
        for h in f.hunks:
            path, found = f.source, set()
            for line in old_side([h]):
                at = to_pin(f.source, line, k, written)
                if at is not None:
                    path = at[0]
                    found.add(at[1])
            yield f, h, path, found


def old_side(hunks: Sequence[Hunk]) -> Iterator[int]:
    """The pre-image line numbers of each hunk's context and removed lines."""
    for h in hunks:
        line = _first(h.source_start, h.source_length)
        for text in h.lines:
            op = text[:1]
            if op in (" ", "-"):
                yield line
                line += 1


def to_pin(path: str, line: int, before: int, written: Writers) -> tuple[str, int] | None:
    """Where ``line`` of ``path``, as the patches before position ``before`` left it, is in
    the pin: (path, line), or None when one of those patches added it."""
    while True:
        earlier = [(j, f) for j, f in written.get(path, ()) if j < before]
        if not earlier:
            return path, line
        before, f = earlier[-1]
        if f.source is None:
            return None
        back = back_line(line, f.hunks)
        if back is None:
            return None
        path, line = f.source, back


def back_line(line: int, hunks: Sequence[Hunk]) -> int | None:
    """The pre-image line that post-image ``line`` came from, None for an added line."""
    shift = 0  # pre-image minus post-image, between hunks
    for h in hunks:
        old, new = _first(h.source_start, h.source_length), _first(h.target_start,
                                                                     h.target_length)
        if line < new:
            break
        if line < new + h.target_length:
            for text in h.lines:
                op = text[:1]
                if op == " ":
                    if new == line:
                        return old
                    old, new = old + 1, new + 1
                elif op == "-":
                    old += 1
                elif op == "+":
                    if new == line:
                        return None
                    new += 1
            return None  # not reached for a well-formed hunk
        shift = (old + h.source_length) - (new + h.target_length)
    return line + shift


def _first(start: int, length: int) -> int:
    """A hunk side's first line: git writes the line *before* an empty side."""
    return start if length else start + 1


def ranges(lines: set[int]) -> list[tuple[int, int]]:
    """Sorted inclusive runs of ``lines``."""
    out: list[tuple[int, int]] = []
    for n in sorted(lines):
        if out and out[-1][1] == n - 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out
