"""Parsed patches cached by content, so re-reading an unchanged stack skips the parse.

A stack of 2,000 patches takes longer to parse than git takes to apply and
reverse it; ``verify`` on a stack that did not change reads the parsed form
back instead. The cache lives in the user's cache dir (never in the project):
``<cache>/parsed/<hash of the stack dir>.json``. An entry is keyed by the patch's
name, strip level and the sha256 of its bytes, and the whole file by the
parser's own source, so any change to a patch or to the parser parses again.
Losing or corrupting the cache costs only time.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from patchctl import fsutil, patchfile
from patchctl.patchfile import FileDiff, Hunk, Patch

FORMAT = 1  # the layout of a cached entry
KEEP = 16  # stacks whose parsed patches are kept


def _parser_key() -> str:
    source = Path(patchfile.__file__).read_bytes()
    return f"{FORMAT}:{hashlib.sha256(source).hexdigest()}"


class ParseCache:
    """Read patches through the cache; ``save()`` writes what was parsed anew."""

    def __init__(self, stack_root: Path, cache_dir: Path | None = None) -> None:
        from patchctl.gitrepo.cache import default_cache_dir

        name = hashlib.sha256(str(stack_root.absolute()).encode()).hexdigest()[:16]
        self.path = (cache_dir or default_cache_dir()) / "parsed" / f"{name}.json"
        self.key = _parser_key()
        self.entries: dict[str, dict[str, Any]] = {}
        self.used: dict[str, dict[str, Any]] = {}
        self.changed = False
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and data.get("key") == self.key:
                self.entries = data.get("patches") or {}
        except (OSError, ValueError):
            pass

    def read(self, path: Path, *, name: str, strip: int) -> Patch:
        """``patchfile.read_patch``, from the cache when the bytes are the same."""
        data = patchfile.patch_bytes(path)
        key = f"{name}\0{strip}\0{hashlib.sha256(data).hexdigest()}"
        entry = self.entries.get(key)
        if entry is not None:
            try:
                patch = _from_dict(entry, path)
            except (KeyError, TypeError, ValueError):
                patch = None
            if patch is not None:
                self.used[key] = entry
                return patch
        patch = patchfile.parse_patch(data, path=path, name=name, strip=strip)
        self.used[key] = _to_dict(patch)
        self.changed = True
        return patch

    def save(self) -> None:
        """Keep the entries read this time (a stack's old versions drop out)."""
        if not self.changed and len(self.used) == len(self.entries):
            return
        with contextlib.suppress(OSError):  # a read-only cache: next time parses again
            fsutil.atomic_write(self.path, json.dumps({"key": self.key, "patches": self.used}))
            _prune(self.path.parent)


def _prune(folder: Path, keep: int = KEEP) -> None:
    """At most ``keep`` stacks' files: the least recently written go first."""
    files = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in files[keep:]:
        old.unlink(missing_ok=True)


def _to_dict(patch: Patch) -> dict[str, Any]:
    d = asdict(patch)
    del d["path"]
    d["digest"] = patch.digest
    return d


def _from_dict(d: dict[str, Any], path: Path) -> Patch:
    files = tuple(
        FileDiff(**{**f, "hunks": tuple(Hunk(**{**h, "lines": tuple(h["lines"])})
                                         for h in f["hunks"]),
                    "mode_lines": tuple(f["mode_lines"])})
        for f in d["files"])
    fields = {k: v for k, v in d.items() if k not in ("files", "digest")}
    patch = Patch(**fields, path=path, files=files)
    patch.__dict__["digest"] = d["digest"]  # the cached_property, already computed
    return patch
