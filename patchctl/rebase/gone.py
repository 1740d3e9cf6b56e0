"""Names a patch's added lines use that upstream removed between the pins.

A patch that goes on at the new pin (exact, offset, a clean merge) can still not build
there: its own lines call a function, read a field or use a variable that upstream renamed
or removed meanwhile (a field dropped from a params struct, a loader's per-layer context
helpers replaced by another API). No line merge can see that, and it is what most often
makes a maintainer rewrite a patch that still applies. The test is textual and cheap: a
word (an identifier, 3 characters or more) of the patch's added lines in a file that
stood in that file at the old pin and stands nowhere in the new pin's tree (with the
patches before it applied). A finding, never a grade: named in the report and ``--json``,
and a doubted move (rebase/results.py): the rebase stops there for a person to judge.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

from patchctl import gitrepo
from patchctl.errors import GitError, InputError
from patchctl.model.patchfile import Patch

WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")

Words = dict[tuple[str, str], frozenset[str]]  # (tree, path) -> its words: a cache


@dataclass(frozen=True)
class GoneNames:
    """Words the patch adds in ``file`` that upstream removed from the tree."""

    file: str
    names: list[str]


def added_words(patch: Patch) -> dict[str, set[str]]:
    """Per file the patch changes (its path at the old pin), the words of its added lines."""
    out: dict[str, set[str]] = {}
    for f in patch.files:
        if f.source is None or f.binary:
            continue  # a file it creates has no old text to lose names from
        words = {
            w for h in f.hunks for ln in h.lines if ln[:1] == "+" for w in WORD.findall(ln[1:])
        }
        if words:
            out.setdefault(f.source, set()).update(words)
    return out


def _words(
    repo: Path, env: dict[str, str], tree: str, paths: list[str], cache: Words
) -> dict[str, frozenset[str]]:
    """The words of each of ``paths`` at ``tree`` (a path absent there has none)."""
    wanted = [p for p in paths if (tree, p) not in cache]
    try:
        blobs = gitrepo.read_blobs(repo, tree, wanted, env=env) if wanted else {}
    except (GitError, InputError):  # a blob the mirror lacks: nothing to say about it
        blobs = {}
    for p in wanted:
        text = blobs[p][1].decode("utf-8", "surrogateescape") if p in blobs else ""
        cache[(tree, p)] = frozenset(WORD.findall(text))
    return {p: cache[(tree, p)] for p in paths}


def find(
    repo: Path,
    env: dict[str, str],
    old: str,
    base: str,
    patch: Patch,
    *,
    changed: Collection[str] | None = None,
    cache: Words | None = None,
    renames: Callable[[], Mapping[str, str]] | None = None,
) -> list[GoneNames]:
    """The names ``patch``'s added lines use that stood in their file at ``old`` and stand
    nowhere in ``base`` (the new pin with the patches before it; a tree of ``env``'s
    index). ``changed``: the paths upstream changed between the pins (no other file can
    have lost a name); ``cache``: word sets kept across the patches of one rebase;
    ``renames``: the files upstream renamed (path -> new path), asked for only when a file
    is gone at ``base``: a renamed file's words are read at its new path."""
    cache = {} if cache is None else cache
    added = {p: w for p, w in added_words(patch).items() if changed is None or p in changed}
    if not added:
        return []
    paths = sorted(added)
    was, now = _words(repo, env, old, paths, cache), _words(repo, env, base, paths, cache)
    gone = [p for p in paths if not now[p] and was[p]]
    moved = {p: to for p, to in (renames() if gone and renames else {}).items() if p in gone}
    if moved:
        at = _words(repo, env, base, sorted(set(moved.values())), cache)
        now.update({p: at[to] for p, to in moved.items()})
    lost = {p: (added[p] & was[p]) - now[p] for p in paths}
    names = sorted(set().union(*lost.values()))
    if not names:
        return []
    try:  # still elsewhere in the tree (moved to a header, say): not gone
        hits = gitrepo.grep_fixed(repo, base, names, env=env, only_matching=True)
    except (GitError, InputError):
        return []
    still = {h.text for h in hits}
    return [GoneNames(p, sorted(lost[p] - still)) for p in paths if lost[p] - still]


def describe(g: GoneNames) -> str:
    return (
        f"{g.file}: its added lines use {', '.join(g.names)}, in that file at the old pin "
        "and nowhere in the new pin's tree (removed or renamed upstream): check it "
        "still builds"
    )


def tag(found: list[GoneNames]) -> str:
    """The range-diff's mark."""
    return "uses names gone upstream: " + ", ".join(
        f"{g.file} ({', '.join(g.names)})" for g in found
    )
