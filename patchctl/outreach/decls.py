"""Where a name is declared at the base: a Universal Ctags index of the upstream's source
directories, kept in the user cache by tree id.

The source directories are the top-level ``src/`` and ``include/`` and the ``src/`` and
``include/`` one level down (``ggml/src/``, ``ggml/include/``); tools, examples and tests
are left out, so ``GGML_ASSERT`` resolves to ``ggml/include/ggml.h`` and not to a tool's
copy. The files are read through ``gitrepo`` into a temporary directory and indexed
there; no work tree of the upstream is needed. Without ``ctags`` (or with one that is not
Universal Ctags with JSON output) ``index`` returns None and the brief says it fell back
to its heuristic. ``PATCHCTL_CTAGS`` names the program (default ``ctags``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from patchctl import fsutil, gitrepo
from patchctl.untrusted import BadDocument, parse_json, printable

_LEFT_OUT = ("tools", "examples", "tests", "test", "docs", "vendor", "third_party", "scripts")
_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx", ".inl")
FORMAT = 1  # of the cached index
_CACHED = {"type": "object", "required": ["format", "tool", "dirs", "names"],
           "properties": {"format": {"const": FORMAT}, "tool": {"type": "string"},
                          "dirs": {"type": "array", "items": {"type": "string"}},
                          "names": {"type": "object"}}}
# declaration-like kinds first; a prototype in a header beats a definition in a .cpp
_KIND_SCORE = {"macro": 6, "prototype": 6, "typedef": 6, "struct": 6, "class": 6, "enum": 6,
               "union": 6, "enumerator": 5, "member": 5, "function": 4, "variable": 3,
               "externvar": 5, "namespace": 1}


@dataclass(frozen=True)
class Declaration:
    name: str
    file: str
    line: int
    kind: str
    text: str


@dataclass
class Index:
    tool: str  # "Universal Ctags 5.9.0"
    dirs: list[str]  # the source directories indexed
    names: dict[str, Declaration]

    def describe(self) -> str:
        return f"{self.tool} over {', '.join(d + '/' for d in self.dirs)}"


def _program() -> str | None:
    name = os.environ.get("PATCHCTL_CTAGS") or "ctags"
    return shutil.which(name)


def _version(program: str) -> str | None:
    """``Universal Ctags 5.9.0`` when the program is Universal Ctags with JSON output."""
    try:
        r = subprocess.run([program, "--version"], capture_output=True, text=True, timeout=20,
                           check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    first = (r.stdout.splitlines() or [""])[0]
    if r.returncode != 0 or "Universal Ctags" not in first or "+json" not in r.stdout:
        return None
    return printable(first.split(",", 1)[0].strip())


def is_source(path: str) -> bool:
    """A C/C++ file under ``src/``, ``include/``, ``*/src/`` or ``*/include/`` (not tools,
    examples, tests, ...)."""
    parts = PurePosixPath(path).parts
    return path.endswith(_SUFFIXES) and parts[0] not in _LEFT_OUT and (
        parts[0] in ("src", "include") or (len(parts) > 2 and parts[1] in ("src", "include")))


def source_files(upstream: Path, base: str) -> list[str]:
    return [p for p in gitrepo.list_files(upstream, base, []) if is_source(p)]


def index(upstream: Path, base: str) -> Index | None:
    """The declarations of the source directories at ``base``; None without Universal
    Ctags. Kept in ``<cache>/ctags/<tree>.json``: a tree id names its contents for good."""
    program = _program()
    tool = _version(program) if program else None
    if program is None or tool is None:
        return None
    tree = gitrepo.tree_of(upstream, base)
    kept = fsutil.cache_dir() / "ctags" / f"{tree}.json"
    with contextlib.suppress(OSError, BadDocument):
        data = parse_json(kept.read_bytes(), _CACHED)
        if data["tool"] == tool:
            return Index(tool, data["dirs"], {
                n: Declaration(n, *v) for n, v in data["names"].items()})
    files = source_files(upstream, base)
    found = _run(program, upstream, base, files)
    if found is None:
        return None
    dirs = sorted({_top(p) for p in files})
    result = Index(tool, dirs, found)
    with contextlib.suppress(OSError):  # a read-only cache: indexed again next time
        fsutil.atomic_write(kept, json.dumps({
            "format": FORMAT, "tool": tool, "dirs": dirs,
            "names": {n: [d.file, d.line, d.kind, d.text] for n, d in sorted(found.items())}},
            sort_keys=True).encode())
    return result


def _top(path: str) -> str:
    """The source directory a file is in: ``src``, ``include``, ``ggml/src``, ..."""
    parts = PurePosixPath(path).parts
    return parts[0] if parts[0] in ("src", "include") else "/".join(parts[:2])


def _run(program: str, upstream: Path, base: str, files: list[str]
         ) -> dict[str, Declaration] | None:
    blobs = gitrepo.read_blobs(upstream, base, files)
    with tempfile.TemporaryDirectory(prefix="patchctl-ctags-") as tmp:
        root = Path(tmp)
        for path, (_, data) in blobs.items():
            if ".." in PurePosixPath(path).parts or path.startswith("/"):
                continue  # a crafted tree: nothing is written outside the directory
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        try:
            r = subprocess.run(
                [program, "--output-format=json", "--fields=+nK", "--kinds-C=+p",
                 "--kinds-C++=+p", "--languages=C,C++", "--langmap=C++:+.inl", "-R", "-f", "-",
                 "."], cwd=root, capture_output=True, timeout=600, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
    if r.returncode != 0:
        return None
    best: dict[str, tuple[tuple[int, str, int], Declaration]] = {}
    split: dict[str, list[bytes]] = {}
    for raw in r.stdout.splitlines():
        try:
            tag = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(tag, dict) or tag.get("_type") != "tag":
            continue
        name, where, line = tag.get("name"), tag.get("path"), tag.get("line")
        if not (isinstance(name, str) and isinstance(where, str) and isinstance(line, int)):
            continue
        kind = str(tag.get("kind", ""))
        path = where.removeprefix("./")
        if path not in split:
            split[path] = blobs[path][1].split(b"\n") if path in blobs else []
        text = _line(split[path], line)
        rank = (-_score(path, kind), path, line)  # the smallest wins
        if name not in best or rank < best[name][0]:
            best[name] = (rank, Declaration(name, path, line, kind, printable(text)[:160]))
    return {n: d for n, (_, d) in best.items()}


def _line(lines: list[bytes], number: int) -> str:
    """Line ``number`` of a file, decoded as the brief decodes upstream text."""
    raw = lines[number - 1] if 0 < number <= len(lines) else b""
    return raw.decode("utf-8", "replace").strip()


def _score(path: str, kind: str) -> int:
    """Declaration-like kinds, then a public header, then any header, then a source file."""
    p = PurePosixPath(path)
    header = p.suffix in (".h", ".hh", ".hpp", ".hxx")
    public = header and "include" in p.parts[:-1]
    return _KIND_SCORE.get(kind, 2) * 10 + (3 if public else 2 if header else 0)
