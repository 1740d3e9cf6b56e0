"""The upstream changes a patch names, and whether one of them merged: no git here.

A patch names an upstream change by

- ``#N`` (usually ``(#N)``) in its subject: the upstream's pull request N;
- a URL of the upstream's own repository in its body or trailers:
  ``https://github.com/OWNER/REPO/pull/N`` or ``/issues/N`` (GitHub numbers issues and
  pull requests together), ``OWNER/REPO#N``, or ``.../commit/SHA``;
- ``#N`` or a commit id in an ``Origin:``, ``Upstream-Status:`` (``Backport [ref]``,
  ``Submitted [ref]``) or ``Applied-Upstream:`` trailer;
- ``(cherry picked from commit SHA)`` in its body.

A URL counts only when OWNER/REPO is the pin file's (case-insensitive, ``.git`` or
not); a pin URL that is not GitHub's makes every URL not count. An upstream commit
*merges* PR N when its subject ends with ``(#N)`` (a squash merge) or starts with
``Merge pull request #N from`` (a merge commit); a commit reference is met by that
commit (its id, full or abbreviated to 7 or more digits). Callers pass only the
commits between the old and the new pin, so a PR merged before the old pin, or never,
is not found; a commit that a later one in range reverts (``This reverts commit
SHA``) does not count either.

Whether the patch is then *contained* in that commit (``contained``) is a comparison
of the two diffs, file by file: every line the patch adds is among the lines the
commit adds to the same file, and every line it removes among those the commit
removes, as multisets, whitespace runs collapsed, lines with nothing but blanks,
braces, parentheses, commas and semicolons left out; and the commit touches every file
the patch does; a patch with a binary file, or with neither such a line nor a mode to
compare, is never contained, and a mode it sets must be the commit's. Containment ignores
where a line goes, so it proves nothing about the tree and never makes a patch droppable:
it only decides whether that commit may be *named* as the landing once the new pin's tree
proves the patch is there (rebase/engine.py). A patch that names a merged change and is not so
proven is ``superseded?``: a person judges, with ``interdiff``.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from patchctl.model import patchtext
from patchctl.model.patchfile import Patch

PR, COMMIT = "pr", "commit"
MAX_INTERDIFF_LINES = 60  # the report shows this much; the rest is counted

_GITHUB_REMOTE = re.compile(
    r"^(?:https?://|ssh://git@|git@|git://)(?:www\.)?github\.com[/:]([\w.-]+)/([\w.-]+?)"
    r"(?:\.git)?/?$", re.I)
_URL = re.compile(r"https?://(?:www\.)?github\.com/([\w.-]+)/([\w.-]+?)(?:\.git)?/"
                  r"(pull|issues|commit)/(\w+)", re.I)
_SHORT = re.compile(r"(?<![\w./-])([\w.-]+)/([\w.-]+)#(\d+)\b")
_NUMBER = re.compile(r"(?<![\w/#&])#(\d+)\b")
_HEX = re.compile(r"(?<![\w/])([0-9a-f]{7,40})\b", re.I)
_CHERRY = re.compile(r"\(cherry picked from commit ([0-9a-f]{7,40})\)", re.I)
_REVERTS = re.compile(r"This reverts commit ([0-9a-f]{40})", re.I)
_SQUASHED = re.compile(r"\(#(\d+)\)\s*$")
_MERGED = re.compile(r"^Merge pull request #(\d+) from ")
_TRAILERS_WITH_IDS = ("Origin", "Upstream-Status", "Applied-Upstream")
_TRAILERS_WITH_URLS = ("Origin", "Upstream-Status", "Applied-Upstream", "Forwarded", "Bug")


@dataclass(frozen=True)
class Reference:
    kind: str  # PR | COMMIT
    value: str  # the PR's number, or the commit id as written (lower case)
    where: str  # subject | body | the trailer's key

    @property
    def label(self) -> str:
        return f"#{self.value}" if self.kind == PR else self.value[:12]


class CommitText(Protocol):
    """An upstream commit as ``gitrepo.range_messages`` reads it."""

    @property
    def id(self) -> str: ...
    @property
    def subject(self) -> str: ...
    @property
    def body(self) -> str: ...


def repo_slug(url: str) -> str | None:
    """``owner/repo`` (lower case) of a GitHub remote URL; None for any other URL."""
    m = _GITHUB_REMOTE.match(url.strip())
    return f"{m.group(1)}/{m.group(2)}".lower() if m else None


def references(patch: Patch, slug: str | None) -> list[Reference]:
    """The upstream changes ``patch`` names, in the order it names them, each once.

    ``slug``: the upstream's ``owner/repo`` (``repo_slug`` of the pin file's URL)."""
    found: list[Reference] = []

    def add(kind: str, value: str, where: str) -> None:
        ref = Reference(kind, value.lower(), where)
        if all((r.kind, r.value) != (ref.kind, ref.value) for r in found):
            found.append(ref)

    def urls(text: str, where: str) -> None:
        for owner, repo, what, tail in _URL.findall(text):
            if slug is None or f"{owner}/{repo}".lower() != slug:
                continue  # another repository's number means nothing here
            if what.lower() == "commit" and _HEX.fullmatch(tail):
                add(COMMIT, tail, where)
            elif what.lower() != "commit" and tail.isdigit():
                add(PR, tail, where)
        for owner, repo, number in _SHORT.findall(text):
            if slug is not None and f"{owner}/{repo}".lower() == slug:
                add(PR, number, where)

    for number in _NUMBER.findall(patch.subject):
        add(PR, number, "subject")
    urls(patch.subject, "subject")
    urls(patch.body, "body")
    for sha in _CHERRY.findall(patch.body):
        add(COMMIT, sha, "body")
    for key in _TRAILERS_WITH_URLS:
        for value in patch.metadata.get(key, []):
            urls(value, key)
            if key not in _TRAILERS_WITH_IDS:
                continue
            bare = _URL.sub(" ", value)
            for number in _NUMBER.findall(bare):
                add(PR, number, key)
            # a word of hex digits with a letter in it: a number alone is no commit id
            for sha in _HEX.findall(bare):
                if not sha.isdigit():
                    add(COMMIT, sha, key)
    return found


def merged_pr(subject: str) -> str | None:
    """The pull request an upstream commit merged, by its subject; None if it names none."""
    m = _SQUASHED.search(subject) or _MERGED.match(subject)
    return m.group(1) if m else None


C = TypeVar("C", bound=CommitText)


def landing(refs: Sequence[Reference], commits: Sequence[C]) -> tuple[Reference, C] | None:
    """The first of ``refs`` that one of ``commits`` (the upstream's between the two
    pins, newest first, as ``git log`` lists them) meets, with the oldest commit that
    meets it; a commit reverted later in range does not count."""
    reverted = {sha.lower() for c in commits for sha in _REVERTS.findall(c.body)}
    live = [c for c in reversed(commits) if c.id not in reverted]
    for ref in refs:
        for c in live:
            if (ref.kind == PR and merged_pr(c.subject) == ref.value) or \
                    (ref.kind == COMMIT and c.id.startswith(ref.value)):
                return ref, c
    return None


def diff_patch(diff: str, name: str) -> Patch | None:
    """A commit's diff (``gitrepo.format_diff`` text) as a Patch; None when it is empty."""
    if "\ndiff --git " not in "\n" + diff:
        return None
    return patchtext.reparse(diff, name=name, path=Path(name))


def substantive(line: str) -> bool:
    """A line that says something: not blank, not only braces and punctuation."""
    return len(line.strip().strip("{}();, ")) >= 2


def _changes(patch: Patch) -> dict[str, tuple[Counter[str], Counter[str]]]:
    out: dict[str, tuple[Counter[str], Counter[str]]] = {}
    for f in patch.files:
        added, removed = out.setdefault(f.path, (Counter(), Counter()))
        for h in f.hunks:
            for ln in h.lines:
                if ln[:1] in "+-" and substantive(ln[1:]):
                    (added if ln[:1] == "+" else removed)[" ".join(ln[1:].split())] += 1
    return out


def contained(patch: Patch, upstream: Patch | None) -> bool:
    """Whether ``upstream`` (a merged commit's diff) holds every line ``patch`` changes, so
    that it may be named as the patch's landing: never proof that it landed (the module's
    docstring says exactly what it compares)."""
    if upstream is None or any(f.binary for f in patch.files):
        return False
    modes = {f.path: f.new_mode for f in upstream.files}
    if any(f.new_mode and modes.get(f.path) != f.new_mode for f in patch.files):
        return False
    ours = _changes(patch)
    if not any(f.new_mode for f in patch.files) and \
            not any(added or removed for added, removed in ours.values()):
        return False  # nothing to compare: vacuously "contained" would name any commit
    theirs = _changes(upstream)
    for path, (added, removed) in ours.items():
        if path not in theirs:
            return False
        their_added, their_removed = theirs[path]
        if added - their_added or removed - their_removed:
            return False
    return True


def interdiff(patch: Patch, upstream: Patch | None, commit: str) -> str:
    """What the patch changes against what ``commit`` changed, for each file the patch
    touches: a diff of their changed lines, all shown (context lines are left out: they
    differ by position alone), at most ``MAX_INTERDIFF_LINES`` lines in all."""
    ours = dict(patchtext.changes(patch))
    theirs = dict(patchtext.changes(upstream)) if upstream else {}
    out: list[str] = []
    for path, changed in ours.items():
        other = theirs.get(path, ())
        if changed != other:
            out += difflib.unified_diff(changed, other, f"patch/{path}",
                                        f"upstream/{commit[:12]}/{path}", lineterm="",
                                        n=max(len(changed), len(other)))
    return bounded(out, MAX_INTERDIFF_LINES)


def bounded(lines: Iterable[str], limit: int) -> str:
    lines = list(lines)
    if len(lines) > limit:
        lines = [*lines[:limit], f"... {len(lines) - limit} more lines"]
    return "\n".join(lines) + "\n" if lines else ""
