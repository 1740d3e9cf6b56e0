"""Each patch's burden row, cached by what decides it, so an unchanged stack blames nothing.

Beside verify's parse cache: ``<cache>/parsed/<hash of the stack dir>.burden``. The
whole file is keyed by what the engine says decides every row (the pin, the window, the
test paths, the upstream, its code); an entry by the sha256 of the patch's strip level
and bytes and, since a patch's lines are followed back through the earlier patches that
wrote the same paths, by those patches' entry keys. Each patch's paths are kept too, so a
second run finds every entry from the patches' bytes alone, before it parses one.

The file is read back as untrusted input (``untrusted.read_json``: a regular file, not a
symlink, bounded, of ``SCHEMA``): anything else is a miss, and the file is written anew.
Losing or corrupting the cache costs only time. The cache is data the engine uses: it
knows nothing of how a row is computed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from patchctl import fsutil
from patchctl.gitrepo import BlamedCommit
from patchctl.untrusted import BadDocument, read_json

FORMAT = 2
KEEP = 16  # stacks whose rows are kept
MAX_BYTES = 64 << 20  # a stack of 10,000 patches writes a few MB

_COUNT = {"type": "integer", "minimum": 0}
_STRINGS = {"type": "array", "items": {"type": "string"}}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["key", "paths", "rows", "commits"],
    "properties": {
        "key": {"type": "string"},
        "paths": {"type": "object", "additionalProperties": _STRINGS},
        # files, library added and removed, test added and removed, lines, commits, skipped
        "rows": {"type": "object", "additionalProperties": {
            "type": "array", "minItems": 8, "maxItems": 8,
            "prefixItems": [*[_COUNT] * 6, _STRINGS, {"type": "string"}]}},
        "commits": {"type": "object", "additionalProperties": {
            "type": "array", "minItems": 2, "maxItems": 2,
            "prefixItems": [{"type": "string"}, {"type": "integer"}]}}}}


class Row(NamedTuple):
    files: int
    library_added: int
    library_removed: int
    test_added: int
    test_removed: int
    lines: int
    commits: list[str]
    skipped: str = ""  # why the patch's lines were not blamed (they are not at the pin)
    known: tuple[BlamedCommit, ...] = ()  # those commits' subjects and times


class BurdenCache:
    def __init__(self, stack_root: Path, key: Sequence[object], *,
                 cache_dir: Path | None = None) -> None:
        """The cache of the stack at ``stack_root``; its rows hold only when ``key`` (a JSON
        value naming all that decides a row, besides the patches) is the one they were
        written under."""
        self.path = fsutil.stack_cache_file(stack_root, "parsed", ".burden", cache_dir)
        self.key = json.dumps([FORMAT, *key])
        self.paths: dict[str, list[str]] = {}
        self.entries: dict[str, list[Any]] = {}
        self.known: dict[str, list[Any]] = {}
        self.used_paths: dict[str, list[str]] = {}
        self.used: dict[str, list[Any]] = {}
        self.changed = False
        try:
            data = read_json(self.path, SCHEMA, max_bytes=MAX_BYTES, follow=False)
        except BadDocument:
            return  # none yet, or damaged: a miss, and save() writes it anew
        if data["key"] == self.key:
            self.paths, self.entries, self.known = data["paths"], data["rows"], data["commits"]

    def keys(self, patches: Sequence[tuple[int, bytes]]) -> list[str] | None:
        """Each patch's entry key from its strip level and bytes, or None when the cache
        does not know the paths of one of them (then ``learn`` them from the parse)."""
        digests = [_digest(strip, data) for strip, data in patches]
        paths = [self.paths.get(d) for d in digests]
        if any(p is None for p in paths):
            return None
        return self._chain(digests, [p or [] for p in paths])

    def stack_paths(self, patches: Sequence[tuple[int, bytes]]) -> set[str]:
        """The distinct paths the patches change, as ``keys`` or ``learn`` recorded them."""
        return {p for strip, data in patches for p in self.paths.get(_digest(strip, data)) or []}

    def learn(self, patches: Sequence[tuple[int, bytes]],
              paths: Sequence[Sequence[str]]) -> list[str]:
        digests = [_digest(strip, data) for strip, data in patches]
        for d, p in zip(digests, paths, strict=True):
            if self.paths.get(d) != list(p):
                self.paths[d] = list(p)
                self.changed = True
        return self._chain(digests, [list(p) for p in paths])

    def _chain(self, digests: list[str], paths: list[list[str]]) -> list[str]:
        keys: list[str] = []
        writers: dict[str, list[int]] = {}
        for k, (d, mine) in enumerate(zip(digests, paths, strict=True)):
            earlier = sorted({j for p in mine for j in writers.get(p, ())})
            keys.append(hashlib.sha256(" ".join([d, *(keys[j] for j in earlier)]).encode())
                        .hexdigest() if earlier else d)
            for p in mine:
                writers.setdefault(p, []).append(k)
            self.used_paths[d] = mine
        return keys

    def rows(self, keys: Sequence[str]) -> list[Row] | None:
        """Every patch's row, or None when one is not cached."""
        out = []
        for key in keys:
            row = self.row(key)
            if row is None:
                return None
            out.append(row)
        return out

    def row(self, key: str) -> Row | None:
        entry = self.entries.get(key)
        if entry is None or any(c not in self.known for c in entry[6]):
            return None
        files, lib_add, lib_del, test_add, test_del, standing = (int(n) for n in entry[:6])
        self.used[key] = entry  # SCHEMA holds the types
        return Row(files, lib_add, lib_del, test_add, test_del, standing, list(entry[6]),
                   entry[7])

    def put(self, key: str, row: Row) -> None:
        self.used[key] = self.entries[key] = [*row[:6], row.commits, row.skipped]
        for c in row.known:
            self.known[c.id] = [c.subject, c.time]
        self.changed = True

    def commit(self, commit_id: str) -> BlamedCommit:
        subject, when = self.known[commit_id]
        return BlamedCommit(commit_id, subject, int(when))

    def save(self) -> None:
        """Keep what this run used (a stack's old versions drop out)."""
        if not self.changed and len(self.used) == len(self.entries):
            return
        named = {c for e in self.used.values() for c in e[6]}
        data = {"key": self.key, "paths": self.used_paths, "rows": self.used,
                "commits": {c: self.known[c] for c in sorted(named)}}
        with contextlib.suppress(OSError):  # a read-only cache: the next run blames again
            fsutil.atomic_write(self.path, json.dumps(data, separators=(",", ":")))
            old = sorted(self.path.parent.glob("*.burden"), key=lambda p: p.lstat().st_mtime,
                         reverse=True)
            for gone in old[KEEP:]:
                gone.unlink(missing_ok=True)


def _digest(strip: int, data: bytes) -> str:
    h = hashlib.sha256(f"{strip}\0".encode())
    h.update(data)
    return h.hexdigest()
