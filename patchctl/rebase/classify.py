"""Why a patch conflicts: the class of its conflict, one of ``CLASSES``.

For each hunk whose pre-image (context and removed lines) does not match at fuzz 0 in its
file where the patch is tried (``current``: the new pin with the patches before it, as
``git apply`` looks, model/patchfile.py), the hunk's class is, in this order:

- ``file gone``: the file is not there, and the hunk's most distinctive line (its longest
  removed line, else context line, of 12 characters or more) is in no other file;
- ``moved code``: that line is not in the hunk's file (or the file is gone) but is in
  another file of the new pin (``git grep -F``);
- ``same lines changed``: the hunk removes lines that are no longer there as one block
  (upstream changed the very lines; or a file the patch creates that upstream created too);
- ``insertions at one place``: a hunk that only inserts, whose context before and after
  both stand, each as one block, with upstream's own lines now between them;
- ``context drift``: the removed lines all stand, unchanged, as one block (or the hunk only
  inserts) but the context around them differs.

The patch takes the first of its hunks' classes in that order; ``other`` when every hunk
matches (the conflict comes from how they go together, or from a mode or binary change).
bench/replay.py classifies ``git am -3``'s stops with the same function
(``classify_text``), so the tool and the benchmark cannot disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from patchctl import gitrepo
from patchctl.errors import GitError
from patchctl.model.patchfile import Hunk, Patch, image_lines, match_hunk, parse_patch

FILE_GONE = "file gone"
MOVED_CODE = "moved code"
SAME_LINES = "same lines changed"
INSERTIONS = "insertions at one place"
CONTEXT_DRIFT = "context drift"
OTHER = "other"
CLASSES = (FILE_GONE, MOVED_CODE, SAME_LINES, INSERTIONS, CONTEXT_DRIFT)  # first wins
WHY = {  # what each class says at a stop, after its name
    FILE_GONE: "a file it changes is gone",
    MOVED_CODE: "its lines are in another file now",
    SAME_LINES: "upstream changed the lines it removes",
    INSERTIONS: "it and upstream inserted lines at one place",
    CONTEXT_DRIFT: "its lines stand, the lines around them changed",
    OTHER: "each hunk matches on its own",
}
DISTINCTIVE = 12  # characters (stripped) a line needs to be looked for in other files

Elsewhere = Callable[[str, str], bool]  # (a line, its file): it stands in another file


@dataclass
class Classified:
    """A conflict's class, and each hunk that gives one (``file``, ``class``)."""

    cls: str
    hunks: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {"class": self.cls, "hunks": self.hunks}


def says(cls: str) -> str:
    """The class and what it means, in words: ``same lines changed: upstream changed ...``."""
    return f"{cls}: {WHY[cls]}"


def _side(lines: Sequence[str], signs: str) -> list[str]:
    """The hunk lines of ``signs`` (each with its newline, as image_lines has them)."""
    out = []
    for i, ln in enumerate(lines):
        if ln[:1] in signs:
            last = i + 1 < len(lines) and lines[i + 1][:1] == "\\"
            out.append(ln[1:] if last else ln[1:] + "\n")
    return out


def _at(block: Sequence[str], image: Sequence[str], start: int = 0) -> int:
    """Where ``block`` starts in ``image`` as one block, at ``start`` or later; -1 if not."""
    n = len(block)
    for i in range(start, len(image) - n + 1):
        if image[i : i + n] == block:
            return i
    return -1 if n else start


def _distinctive(h: Hunk) -> str | None:
    best = max(
        _side(h.lines, "-") or _side(h.lines, " -"), key=lambda t: len(t.strip()), default=""
    )
    return best.rstrip("\n") if len(best.strip()) >= DISTINCTIVE else None


def hunk_class(
    path: str, h: Hunk, image: Sequence[str] | None, elsewhere: Elsewhere, *, creates: bool
) -> str | None:
    """The class of hunk ``h`` of ``path`` on ``image`` (its file's lines where the patch is
    tried; None: not there); None when it matches there at fuzz 0."""
    line = _distinctive(h)
    if image is None:
        if creates:
            return None
        return MOVED_CODE if line is not None and elsewhere(line, path) else FILE_GONE
    if creates:
        return SAME_LINES
    if match_hunk(image, h) is not None:
        return None
    if (
        line is not None
        and line + "\n" not in image
        and line not in image
        and elsewhere(line, path)
    ):
        return MOVED_CODE
    removed = _side(h.lines, "-")
    if removed:
        return CONTEXT_DRIFT if _at(removed, image) >= 0 else SAME_LINES
    signs = "".join(ln[:1] for ln in h.lines)
    first, last = signs.find("+"), signs.rfind("+")
    before, after = _side(h.lines[:first], " "), _side(h.lines[last + 1 :], " ")
    at = _at(before, image)
    end = at + len(before)
    if first >= 0 and before and after and at >= 0 and _at(after, image, end) > end:
        return INSERTIONS
    return CONTEXT_DRIFT


def classify_patch(
    patch: Patch, texts: Mapping[str, bytes | None], elsewhere: Elsewhere
) -> Classified:
    """The class of ``patch`` on its files' ``texts`` (None: not there; a path left out:
    unreadable, its hunks not classed)."""
    hunks: list[dict[str, str]] = []
    for f in patch.files:
        if f.path not in texts:
            continue
        data = texts[f.path]
        image = None if data is None else image_lines(data)
        for h in f.hunks:
            cls = hunk_class(f.path, h, image, elsewhere, creates=f.source is None)
            if cls:
                hunks.append({"file": f.path, "class": cls})
    found = {c["class"] for c in hunks}
    return Classified(next((c for c in CLASSES if c in found), OTHER), hunks)


def search_lines(patch: Patch) -> list[str]:
    """The lines classifying ``patch`` may look for across the tree: ask for them together
    (gitrepo.LineSearch), one search of the tree for all."""
    return [ln for f in patch.files for h in f.hunks if (ln := _distinctive(h)) is not None]


def grep_elsewhere(search: gitrepo.LineSearch) -> Elsewhere:
    """Whether a line stands in a file of ``search``'s tree other than its own."""

    def elsewhere(line: str, path: str) -> bool:
        return any(p != path for p in search.files([line])[line])

    return elsewhere


def classify(
    repo: Path,
    current: str,
    patch: Patch,
    *,
    search: gitrepo.LineSearch,
    env: Mapping[str, str] | None = None,
    renames: Mapping[str, str] | None = None,
) -> Classified:
    """The class of ``patch``'s conflict at ``current`` (a tree or commit of ``repo``; ``env``:
    to read it, a temp index's); ``search``: the tree (the new pin) where moved lines are
    looked for; ``renames``: files upstream renamed (path -> new path), a
    gone one read at its new path, as git's merges follow it."""
    paths = sorted({f.path for f in patch.files})
    texts: dict[str, bytes | None] = {}
    for path in paths:  # one at a time: a blob the repository lacks leaves out its file only
        try:
            where = [path, *([renames[path]] if renames and path in renames else [])]
            blobs = gitrepo.read_blobs(repo, current, where, env=dict(env) if env else None)
        except (GitError, gitrepo.MissingFiles):
            continue
        found = next((p for p in where if p in blobs), None)
        texts[path] = blobs[found][1] if found else None
    search.files(search_lines(patch))
    return classify_patch(patch, texts, grep_elsewhere(search))


def classify_text(
    repo: Path, rev: str, data: bytes, *, search: tuple[Path, str] | None = None
) -> Classified:
    """The class of the plain patch ``data`` (a ``git am`` stop's) at ``rev`` of ``repo``;
    ``search``: where moved lines are looked for (default: ``rev`` of ``repo``)."""
    patch = parse_patch(data, path=Path("patch"), name="patch")
    return classify(repo, rev, patch, search=gitrepo.LineSearch(*(search or (repo, rev))))
