"""Resolve what a line merge cannot but a rule can prove: a conflicting patch's lost hunks
re-placed in their own file, each strategy its own grade.

A hunk is lost when its pre-image (context and removed lines) matches nowhere at fuzz 0
in its file at the new pin (rebase/moved.py ``locate``). Each strategy below is tried on
every lost hunk of a patch; it resolves the patch only when it re-places all of them
(one grade per patch: a patch whose hunks need two strategies stays a conflict). What
it refuses it says, as the conflict's class (``tried``), never picking a place:

- ``union``: both the patch and upstream inserted lines at one place. The hunk inserts
  one block and removes nothing; its context before and after (each non-empty) stands
  at the new pin with lines upstream inserted between them (at most ``MAX_BETWEEN``),
  at exactly one place. The result keeps both: upstream's lines, then the patch's.
  Refused when the two blocks share a line that says something (a duplicate: perhaps
  the same entry, added twice), or the context stands so at two or more places.
- ``anchored``: the hunk's context changed but its core did not: the lines from its
  first change to its last (the removed ones, and context between them), with at least
  one removed line that says something, stand exactly once in the file. The hunk is
  re-anchored there, with the new pin's lines around them as its context. Refused when
  they stand at two or more places.

The re-placed patch is then checked as every grade is (engine.classify): it applies
and reverses at the new pin and stays in its Scope. Nothing here runs git.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from patchctl.model.grades import ANCHORED, UNION
from patchctl.model.patchfile import Hunk
from patchctl.rebase.moved import MIN_LINES, Located, placed_diff, says_something

MAX_BETWEEN = 100  # lines upstream may have inserted between a union hunk's two contexts
CONTEXT = 3  # context lines an anchored hunk takes from the new pin, each side


@dataclass(frozen=True)
class PlacedHunk:
    """A hunk a strategy re-placed: where it stood and the line it starts at now."""

    file: str
    hunk: int  # its number in that file, from 1
    line: int  # 1-based line of the new pin where its pre-image starts
    note: str  # what the rule found there, in words


@dataclass
class Resolution:
    """One strategy's answer for a patch: its whole re-placed diff, or why not."""

    grade: str
    hunks: list[PlacedHunk]
    diff: str | None = None
    refused: str | None = None


# A rule for one lost hunk in its file's lines: (0-based line, new hunk, note), or why
# not in words (its conflict is of another class, or it is ambiguous).
Rule = Callable[[Sequence[str], Hunk], "tuple[int, Hunk, str] | str"]


def _text(ln: str) -> str:
    return ln[1:] + "\n"


def _hunk(lines: Sequence[str], like: Hunk) -> Hunk:
    old = sum(ln[:1] in (" ", "-") for ln in lines)
    new = sum(ln[:1] in (" ", "+") for ln in lines)
    return Hunk(like.source_start, old, like.target_start, new, like.line, tuple(lines))


def union(image: Sequence[str], h: Hunk) -> tuple[int, Hunk, str] | str:
    signs = "".join(ln[:1] for ln in h.lines)
    first, last = signs.find("+"), signs.rfind("+")
    if "-" in signs:
        return "it removes lines, not only inserts"
    if "\\" in signs or first <= 0 or last == len(signs) - 1 or " " in signs[first : last + 1]:
        return "not one block of lines inserted between two contexts"
    before = [_text(ln) for ln in h.lines[:first]]
    block = h.lines[first : last + 1]
    after = [_text(ln) for ln in h.lines[last + 1 :]]
    if sum(map(says_something, before + after)) < MIN_LINES:
        return "too few lines of context to find its place by"
    places = []
    for at in range(len(image) - len(before) - len(after)):
        if list(image[at : at + len(before)]) != before:
            continue
        start = at + len(before)
        places += [
            (at, k)
            for k in range(1, MAX_BETWEEN + 1)
            if list(image[start + k : start + k + len(after)]) == after
        ]
    if not places:
        return "its context does not stand with lines upstream inserted between it"
    if len(places) > 1:
        where = ", ".join(f"{at + len(before) + 1}-{at + len(before) + k}" for at, k in places[:4])
        return (
            f"ambiguous: lines inserted between its context at {len(places)} places (lines {where})"
        )
    at, k = places[0]
    theirs = list(image[at + len(before) : at + len(before) + k])
    both = {t.strip() for t in theirs if says_something(t)} & {
        _text(ln).strip() for ln in block if says_something(ln[1:])
    }
    if both:
        return f"both insert {sorted(both)[0]!r} there: a duplicate, not two insertions"
    lines = [
        *h.lines[:first],
        *(" " + t.removesuffix("\n") for t in theirs),
        *block,
        *h.lines[last + 1 :],
    ]
    return at, _hunk(lines, h), f"after the {len(theirs)} line(s) upstream inserted there"


def anchored(image: Sequence[str], h: Hunk) -> tuple[int, Hunk, str] | str:
    signs = "".join(ln[:1] for ln in h.lines)
    if "\\" in signs:
        return "it changes a line without a newline at the end of the file"
    if not any(s == "-" and says_something(ln[1:]) for s, ln in zip(signs, h.lines, strict=True)):
        return "it removes no line that says something, to anchor it on"
    changed = [i for i, s in enumerate(signs) if s in "+-"]
    first, last = changed[0], changed[-1]
    core = h.lines[first : last + 1]
    pre = [_text(ln) for ln in core if ln[:1] in (" ", "-")]
    places = [
        at for at in range(len(image) - len(pre) + 1) if list(image[at : at + len(pre)]) == pre
    ]
    if not places:
        return "its removed lines are not in the file as they were (upstream changed them)"
    if len(places) > 1:
        where = ", ".join(str(at + 1) for at in places[:4])
        return f"ambiguous: its removed lines are at {len(places)} places (lines {where})"
    at = places[0]
    lead = list(image[max(0, at - CONTEXT) : at])
    tail = [t for t in image[at + len(pre) : at + len(pre) + CONTEXT] if t.endswith("\n")]
    lines = [
        *(" " + t.removesuffix("\n") for t in lead),
        *core,
        *(" " + t.removesuffix("\n") for t in tail),
    ]
    return at - len(lead), _hunk(lines, h), f"its removed lines found once, at line {at + 1}"


RULES: dict[str, Rule] = {UNION: union, ANCHORED: anchored}


def resolve(located: Located) -> list[Resolution]:
    """Each strategy's answer for a patch ``located`` at the new pin, in order, stopping at
    the first that re-places every lost hunk (that one has a ``diff``)."""
    out: list[Resolution] = []
    for grade, rule in RULES.items():
        res = Resolution(grade, [])
        out.append(res)
        placed = {p: list(hs) for p, hs in located.placed.items()}
        for path, n, h in located.lost:
            found = rule(located.images[path], h)
            if not isinstance(found, tuple):
                res.refused = f"{path} hunk #{n}: {found}"
                break
            at, new, note = found
            res.hunks.append(PlacedHunk(path, n, at + 1, note))
            placed.setdefault(path, []).append((at, new))
        else:
            res.diff = placed_diff(placed)
            return out
    return out
