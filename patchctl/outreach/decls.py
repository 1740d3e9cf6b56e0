"""Where the upstream code a patch uses is declared at the base, resolved where it is used.

Each name a hunk's added code uses is looked up in its scope (``cscope``: tree-sitter's C++
grammar): a local, a member of the enclosing class or of the object's class, a name at file
scope in the file or the headers it includes. The files are read through ``gitrepo`` from the
base with the stack's patches up to this one applied in a temporary index (the code the patch
adds is read as it stands in the series); no work tree is needed. A declaration is linked
at the base's own line, so one that the stack adds (no line at the base), a local, or a name
this cannot resolve gets no link: better absent than wrong.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from patchctl import gitrepo
from patchctl.model.patchfile import Hunk, Patch
from patchctl.outreach import cscope
from patchctl.untrusted import printable

DESCRIBE = (
    "tree-sitter's C++ grammar, each name looked up where the patch uses it: a local "
    "(no link), the enclosing class and its bases, the class of the object it is a "
    "member of, then the file and the headers it includes; a name it cannot resolve, "
    "or one the stack itself declares, is not linked"
)


@dataclass(frozen=True)
class Declaration:
    name: str
    file: str
    line: int  # at the base
    kind: str
    text: str  # the base's line


@dataclass(frozen=True)
class Use:
    """A name that a hunk's added lines (``lines``, 1-based in the patched ``file``) use."""

    file: str
    lines: tuple[int, ...]
    name: str


def added_lines(hunk: Hunk) -> tuple[int, ...]:
    """The lines a hunk adds, numbered in the file it produces."""
    out, line = [], hunk.target_start
    for text in hunk.lines:
        if text[:1] == "+":
            out.append(line)
        if text[:1] in ("+", " "):
            line += 1
    return tuple(out)


class _Tree:
    """A tree's files, read once each: the patched tree through the index's environment, the
    base's for the lines a declaration has there."""

    def __init__(self, upstream: Path, base: str, tree: str, env: dict[str, str]) -> None:
        self.upstream, self.base, self.tree, self.env = upstream, base, tree, env
        self._patched: dict[str, bytes | None] = {}
        self._base: dict[str, bytes | None] = {}
        self._lines: dict[str, dict[int, int]] = {}

    def patched(self, path: str) -> bytes | None:
        if path not in self._patched:
            blob = _blob(self.upstream, self.tree, path, self.env)
            self._patched[path] = blob[1] if blob else None
        return self._patched[path]

    def at_base(self, path: str) -> bytes | None:
        if path not in self._base:
            blob = _blob(self.upstream, self.base, path, None)
            self._base[path] = blob[1] if blob else None
        return self._base[path]

    def base_line(self, path: str, line: int) -> int | None:
        """Line ``line`` of the patched file as a line of the base's, None when the series
        added or changed it."""
        before, after = self.at_base(path), self.patched(path)
        if before is None or after is None:
            return None
        if before == after:
            return line
        if path not in self._lines:
            a, b = before.split(b"\n"), after.split(b"\n")
            same: dict[int, int] = {}
            for tag, i1, i2, j1, _ in difflib.SequenceMatcher(
                None, a, b, autojunk=False
            ).get_opcodes():
                if tag == "equal":
                    same.update((j1 + k + 1, i1 + k + 1) for k in range(i2 - i1))
            self._lines[path] = same
        return self._lines[path].get(line)


def resolve(
    upstream: Path, base: str, before: Sequence[Patch], patch: Patch, uses: Sequence[Use]
) -> dict[Use, Declaration]:
    """The declaration at ``base`` of each use that resolves to one there. ``before``: the
    series' patches before ``patch``, applied first. A series that does not apply gives
    nothing."""
    if not uses:
        return {}
    with gitrepo.temp_index(upstream) as index:
        index.read_tree(base)
        applied = index.apply_series(
            [gitrepo.SeriesItem(p.path, p.strip, len(p.files)) for p in (*before, patch)], base=base
        )
        if not applied.ok:
            return {}
        tree = _Tree(upstream, base, index.write_tree(), index.env)
        files = set(gitrepo.list_files(upstream, base, []))
        files |= {f.target for p in (*before, patch) for f in p.files if f.target}
        resolver = cscope.Resolver(tree.patched, files)
        out: dict[Use, Declaration] = {}
        for use in uses:
            if (found := _first(resolver, use)) is None:
                continue
            line = tree.base_line(found.file, found.line)
            if line is None:
                continue  # the series declares it: not the upstream's code
            lines = (tree.at_base(found.file) or b"").split(b"\n")
            text = lines[line - 1].decode("utf-8", "replace").strip() if line <= len(lines) else ""
            out[use] = Declaration(use.name, found.file, line, found.kind, printable(text)[:160])
        return out


def _first(resolver: cscope.Resolver, use: Use) -> cscope.Found | None:
    """What the first use of the name that this can tell about means (a local: nothing)."""
    for node in resolver.uses(use.file, use.name, set(use.lines)):
        found = resolver.resolve(use.file, node)
        if found == cscope.LOCAL:
            return None
        if isinstance(found, cscope.Found):
            return found
    return None


def _blob(upstream: Path, tree: str, path: str, env: dict[str, str] | None
          ) -> tuple[str, bytes] | None:
    """A file of ``tree``; None where it is absent or the upstream lacks its blob (a name
    declared there is then not linked: better absent than wrong)."""
    try:
        return gitrepo.read_blobs(upstream, tree, [path], env=env).get(path)
    except gitrepo.MissingFiles:
        return None
