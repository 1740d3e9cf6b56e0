"""Merge by declaration (``decl``): a conflict in C or C++ code where the patch and upstream
changed different declarations or statements of one region, merged item by item.

A line merge conflicts when the two sides' changes touch or stand next to each other, even
when one changed a function and the other the function after it, or two statements of one
function body apart. For each file of a conflicting patch that has a hunk lost at the new
pin (rebase/moved.py ``locate``), three versions are read: base (the file the patch was
made on: the pre-image blob its ``index`` line names), ours (the file where the patch is
tried: the new pin with the patches before it) and theirs (base with the patch's hunks).
Each is read as a tree of items (rebase/decltree.py) and merged level by level, as
``diff3`` merges lines but with items:

- the items that stand, by key, in all three versions and in base's order in each (the
  most of them that do: an item one side moved is removed at its old place and added at
  its new one, as ``diff3`` takes a moved line) cut each version into runs; between two of
  them, the run one side changed (items added, removed, or changed by text) is taken from
  that side when the other left it as base has it, and refused when both changed it (both
  added or removed items at one place: their order is not proven);
- an item that stands in all three is taken from the side that changed it; changed on both
  sides the same way, once; changed differently on both, a container (a function body, a
  struct, an ``#if`` block, a loop's or an ``if``'s block...) is merged the same way one
  level down, its head and tail taken from the side that changed them, and anything else
  is refused (the same item changed on both sides); an item both sides moved is refused;
- an item whose key stands twice in a version is known by its text; one whose text also
  stands twice there is refused (which is which is not proven);
- a side's change must neither add nor remove a syntax error (a tree-sitter ``ERROR`` or
  ``MISSING`` node) in the items it changed, and the merged file must parse with exactly
  the errors of ours plus those the patch kept: tree-sitter misreads a few of llama.cpp's
  macros (``"%" PRId64``, ``LLAMA_API``...) as errors, which may stand in what the merge
  takes as long as neither side changed them.

The merged files make the patch's new diff, checked then as every grade is
(engine.classify): it applies and reverses at the new pin and stays in its Scope. Reading
blobs is the only git here (gitrepo).
"""

from __future__ import annotations

import bisect
import difflib
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from patchctl import gitrepo
from patchctl.errors import GitError
from patchctl.model.grades import DECL
from patchctl.model.patchfile import Hunk, Patch, apply_hunks, image_lines
from patchctl.rebase.decltree import Item, keyed, parse_file
from patchctl.rebase.moved import Located, placed_diff
from patchctl.rebase.resolve import PlacedHunk, Resolution

C_FILES = (".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".cu", ".cuh", ".inl")
CONTEXT = 3  # lines of context in the merged file's hunks
NAMED = 3  # upstream's changed items a note names
_INDEX = re.compile(r"^index ([0-9a-f]{4,64})\.\.([0-9a-f]{4,64})")


class Refused(Exception):
    """The merge is not proven: why, in words."""


@dataclass
class Changes:
    """What each side changed, as the merge took it."""

    ours: list[str] = field(default_factory=list)  # upstream's changed items, by name
    theirs: list[Item] = field(default_factory=list)  # the patch's, as it has them
    theirs_names: list[str] = field(default_factory=list)


def _texts(items: Sequence[Item]) -> list[bytes]:
    return [i.text for i in items]


def _same_errors(b: Sequence[Item], x: Sequence[Item], where: str) -> None:
    """A side's change must neither add nor remove a syntax error: its items must hold
    what ``b``, base's, hold (tree-sitter's misreadings of macros, if any), or what it
    changed is not read as C or C++."""
    if sum((i.errors for i in x), Counter()) != sum((i.errors for i in b), Counter()):
        bad = next((i for i in x if i.errors), b[0] if b else None)
        what = bad.name + where if bad is not None else f"a change{where}"
        raise Refused(f"{what} does not parse as C or C++ (a syntax error in the change)")


def _runs(items: Sequence[Item], stable: set[str]) -> tuple[list[list[Item]], list[Item]]:
    """``items`` cut at the stable ones: the runs between them (one more than them), and
    the stable items in order."""
    runs: list[list[Item]] = [[]]
    kept: list[Item] = []
    for i in items:
        if i.key in stable:
            kept.append(i)
            runs.append([])
        else:
            runs[-1].append(i)
    return runs, kept


def _run(b: list[Item], o: list[Item], t: list[Item], where: str, ch: Changes) -> list[Item]:
    if _texts(o) == _texts(b):
        if _texts(t) != _texts(b):
            _same_errors(b, t, where)
            ch.theirs += t
            ch.theirs_names += [i.name + where for i in [*t, *b]]
        return t
    if _texts(t) == _texts(b) or _texts(t) == _texts(o):
        _same_errors(b, o, where)
        ch.ours += [i.name + where for i in [*o, *b]]
        return o
    both = [i for i in b if i.text not in _texts(o) and i.text not in _texts(t)]
    if both:
        raise Refused(f"both change {both[0].name}{where}")
    names = ", ".join(dict.fromkeys(i.name for i in [*o, *t] if i.text not in _texts(b)))
    raise Refused(
        f"both add or remove items at one place{where} ({names}): their order is not proven"
    )


def _value(b: bytes, o: bytes, t: bytes, what: str) -> bytes:
    if o in (b, t):
        return t
    if t == b:
        return o
    raise Refused(f"both change {what}")


def _item(b: Item, o: Item, t: Item, where: str, ch: Changes) -> Item:
    if o.text == b.text:
        if t.text != b.text:
            _same_errors([b], [t], where)
            ch.theirs.append(t)
            ch.theirs_names.append(t.name + where)
        return t
    if t.text == b.text or t.text == o.text:
        _same_errors([b], [o], where)
        ch.ours.append(o.name + where)
        return o
    if b.items is None or o.items is None or t.items is None:
        raise Refused(f"both change {b.name}{where}")
    inside = f" in {b.name}{where}" if b.key != "file" else ""
    head = _value(b.head, o.head, t.head, f"the start of {b.name}{where}")
    tail = _value(b.tail, o.tail, t.tail, f"the end of {b.name}{where}")
    items = _level(b.items, o.items, t.items, inside, ch)
    text = head + b"".join(i.text for i in items) + tail
    return Item(
        b.key,
        text,
        o.line,
        o.errors,
        node_text=o.node_text,
        head_=head,
        items_=items,
        tail_=tail,
        kind=o.kind,
        lead=o.lead,
        merged=True,
    )


def _level(b: list[Item], o: list[Item], t: list[Item], where: str, ch: Changes) -> list[Item]:
    twice = keyed([b, o, t])
    if twice is not None:
        raise Refused(f"{twice} stands twice{where}: which is which is not proven")
    stable = _kept(b, o) & _kept(b, t)
    (rb, sb), (ro, so), (rt, st) = (_runs(x, stable) for x in (b, o, t))
    out = _run(rb[0], ro[0], rt[0], where, ch)
    for k in range(len(sb)):
        out.append(_item(sb[k], so[k], st[k], where, ch))
        out += _run(rb[k + 1], ro[k + 1], rt[k + 1], where, ch)
    counts = Counter(i.key for i in out)
    if (twin := next((i for i in out if counts[i.key] > 1), None)) is not None:
        raise Refused(f"both sides move {twin.name}{where}")
    return out


def _kept(b: Sequence[Item], x: Sequence[Item]) -> set[str]:
    """The keys of ``b`` that ``x`` keeps in ``b``'s order: the most of them that stand in
    the same order in both (a longest increasing run of their places in ``b``, in ``x``'s
    order; keys are unique). An item moved stands out of that order: removed at its old
    place and added at its new one, as ``diff3`` takes a moved line."""
    place = {i.key: n for n, i in enumerate(b) if i.key is not None}
    seq = [(place[i.key], i.key) for i in x if i.key in place]
    ends: list[int] = []  # ends[k]: the smallest place ending a run of k + 1 so far
    tails: list[int] = []  # and where in seq that run ends
    back: list[int] = []
    for n, (p, _) in enumerate(seq):
        k = bisect.bisect_left(ends, p)
        back.append(tails[k - 1] if k else -1)
        if k == len(ends):
            ends.append(p)
            tails.append(n)
        else:
            ends[k], tails[k] = p, n
    kept: set[str] = set()
    n = tails[-1] if tails else -1
    while n >= 0:
        kept.add(seq[n][1])
        n = back[n]
    return kept


def _lines(item: Item, line: int, wanted: dict[int, int]) -> int:
    """Walk the merged tree from ``item`` (starting at ``line``): the line of each wanted
    item (by id) where it stands in the merged file. Returns the line after it."""
    if id(item) in wanted:
        wanted[id(item)] = line + item.lead
    if not item.merged or item.items is None:
        return line + item.text.count(b"\n")
    line += item.head.count(b"\n")
    for i in item.items:
        line = _lines(i, line, wanted)
    return line + item.tail.count(b"\n")


def merge_file(
    base: bytes, ours: bytes, theirs: bytes, hunks: Sequence[Hunk]
) -> tuple[bytes, list[tuple[int, str]]]:
    """The three versions of one file merged by item, and for each of ``hunks`` (the lost
    ones) the line of the merged file it went to and a note; raises Refused."""
    trees = [parse_file(d) for d in (base, ours, theirs)]
    ch = Changes()
    root = _item(trees[0].root, trees[1].root, trees[2].root, "", ch)
    merged = root.text
    if merged == ours:
        raise Refused("the merge keeps nothing of the patch")
    base_e, ours_e, theirs_e = (t.root.errors for t in trees)
    want = ours_e + theirs_e
    want.subtract(base_e)
    got = parse_file(merged).root.errors
    if +want != got or any(n < 0 for n in want.values()):
        odd = sorted((got - want) or (want - got))
        raise Refused(
            "the merged file does not parse with the syntax errors of both sides "
            f"({odd[0][1][:40].decode('utf-8', 'replace') if odd else 'fewer'})"
        )
    wanted = {id(i): 0 for i in ch.theirs}
    _lines(root, 1, wanted)
    upstream = list(dict.fromkeys(ch.ours))
    said = ", ".join(upstream[:NAMED]) + (
        f" and {len(upstream) - NAMED} more" if len(upstream) > NAMED else ""
    )
    out = []
    for h in hunks:
        first, end = h.target_start, h.target_start + max(h.target_length, 1)
        hits = [i for i in ch.theirs if i.line < end and first < i.line + i.lines] or ch.theirs[:1]
        names = list(dict.fromkeys(i.name for i in hits)) or ch.theirs_names[:1]
        out.append(
            (
                wanted[id(hits[0])] if hits else 1,
                f"{', '.join(names[:NAMED]) or 'its lines'}, beside upstream's change to "
                f"{said or 'nothing it names'}",
            )
        )
    return merged, out


def _preimages(patch: Patch) -> dict[str, str]:
    """path -> the pre-image blob id each file's ``index`` line names."""
    lines = patch.text.split("\n")
    out = {}
    for f in patch.files:
        for ln in lines[f.line - 1 :]:
            if ln.startswith(("@@", "--- ", "GIT binary")):
                break
            if m := _INDEX.match(ln):
                out[f.path] = m.group(1)
                break
    return out


def _signed(sign: str, lines: Sequence[str]) -> list[str]:
    """Hunk lines: each with its sign, the last line of a file without a newline followed by
    git's marker."""
    out = []
    for ln in lines:
        out.append(sign + ln.removesuffix("\n"))
        if not ln.endswith("\n"):
            out.append("\\ No newline at end of file")
    return out


def _hunks(ours: bytes, merged: bytes) -> list[tuple[int, Hunk]]:
    """``merged`` as hunks on ``ours``, each at its 0-based line."""
    a, b = image_lines(ours), image_lines(merged)
    out = []
    for group in difflib.SequenceMatcher(None, a, b).get_grouped_opcodes(CONTEXT):
        lines: list[str] = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += _signed(" ", a[i1:i2])
                continue
            lines += [*_signed("-", a[i1:i2]), *_signed("+", b[j1:j2])]
        i, j = group[0][1], group[0][3]
        old = sum(ln[0] in " -" for ln in lines)
        new = sum(ln[0] in " +" for ln in lines)
        out.append((i, Hunk(i + 1, old, j + 1, new, 0, tuple(lines))))
    return out


def merge(
    repo: Path, env: Mapping[str, str], current: str, patch: Patch, located: Located
) -> Resolution:
    """The patch ``located`` at ``current`` with each file that has a lost hunk merged by
    item (see the module's docstring): its whole diff, or why not."""
    res = Resolution(DECL, [])
    lost: dict[str, list[tuple[int, Hunk]]] = {}
    for path, n, h in located.lost:
        lost.setdefault(path, []).append((n, h))
    other = next((p for p in lost if not p.endswith(C_FILES)), None)
    ids = _preimages(patch)
    unnamed = next((p for p in lost if p not in ids), None)
    if other or unnamed:
        res.refused = (
            f"{other} is not C or C++"
            if other
            else f"{unnamed}: the patch names no pre-image blob (no index line)"
        )
        return res
    try:
        blobs = gitrepo.read_objects(repo, [ids[p] for p in lost], env=dict(env))
        now = gitrepo.read_blobs(repo, current, list(lost), env=dict(env))
    except (GitError, gitrepo.MissingFiles) as e:
        res.refused = f"its files cannot be read: {e}"
        return res
    placed = {p: list(hs) for p, hs in located.placed.items() if p not in lost}
    files = {f.path: f for f in patch.files}
    for path, hunks in lost.items():
        base = blobs.get(ids[path])
        theirs = apply_hunks(base, files[path].hunks) if base is not None else None
        ours = now[path][1] if path in now else None
        try:
            if base is None or theirs is None or ours is None:
                raise Refused(
                    f"its pre-image {ids[path]} is not in the repository"
                    if base is None
                    else "its hunks do not apply to their own pre-image"
                    if theirs is None
                    else "gone at the new pin"
                )
            _changed_by_both(ours, hunks)
            merged, notes = merge_file(base, ours, theirs, [h for _, h in hunks])
        except Refused as e:
            res.refused = f"{path}: {e}"
            return res
        except RecursionError:  # blocks nested deeper than Python's stack: not merged
            res.refused = f"{path}: its blocks nest too deep to merge"
            return res
        placed[path] = _hunks(ours, merged)
        res.hunks += [
            PlacedHunk(path, n, line, note)
            for (n, _), (line, note) in zip(hunks, notes, strict=True)
        ]
    res.diff = placed_diff(placed)
    return res


def _changed_by_both(ours: bytes, hunks: Sequence[tuple[int, Hunk]]) -> None:
    """Refuse before parsing when a run of lines a lost hunk removes no longer stands
    together anywhere in ``ours``: upstream changed one of them, so the item holding it is
    changed on both sides, which the merge by item refuses too. Most conflicts are of that
    kind, and a parse of three versions of a large file costs far more than this look."""
    image = image_lines(ours)
    starts: dict[str, list[int]] = {}
    for i, line in enumerate(image):
        starts.setdefault(line, []).append(i)
    for n, h in hunks:
        runs: list[list[str]] = [[]]
        for ln in h.lines:
            if ln[:1] == "-":
                runs[-1].append(ln[1:] + "\n")
            elif runs[-1]:
                runs.append([])
        for run in filter(None, runs):
            if not any(image[i : i + len(run)] == run for i in starts.get(run[0], [])):
                gone = " ".join(next((ln for ln in run if ln not in starts), run[0]).split())
                shown = gone if len(gone) <= 60 else gone[:57] + "..."
                raise Refused(
                    f"both change `{shown}`: hunk #{n} removes it, and upstream changed the "
                    "lines it stands in"
                )


def declared(
    repo: Path, env: Mapping[str, str], current: str, patch: Patch, located: Located
) -> Iterator[Resolution]:
    """``merge``'s answer, made only when asked (the engine asks when the rules before it,
    rebase/resolve.py, left the patch a conflict)."""
    yield merge(repo, env, current, patch, located)
