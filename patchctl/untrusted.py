"""Input patchctl does not control, taken in one place (SECURITY.md).

Two kinds of it reach patchctl's code and output:

- JSON documents from caches, worker packages, the Actions cache, a worker's
  ``--version --json`` and servers. ``parse_json`` / ``read_json`` refuse a
  document that is too large or nested too deep *before* parsing it (Python's
  parser and validator recurse), then validate it against its JSON Schema
  (``jsonschema``), so code that uses a document only ever sees the shape it
  expects. Every failure is one ``BadDocument`` line for the caller to report.
- text from an upstream or a server (an issue's state, a file's lines): it goes
  through ``printable`` before it reaches a terminal, a report or a file, so a
  newline cannot forge a row and an escape sequence cannot drive a terminal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

MAX_DEPTH = 64  # no document patchctl reads nests deeper than ~6
MAX_BYTES = 16 << 20


class BadDocument(ValueError):
    """An untrusted JSON document that is unreadable or not of its schema (one line)."""


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(rb"[\[\]{}]")


def _depth(data: bytes) -> int:
    """The deepest nesting of ``data``'s arrays and objects, strings left out; linear."""
    depth = deepest = 0
    for m in _BRACKETS.finditer(_STRING.sub(b"", data)):
        if m.group() in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def parse_json(data: str | bytes, schema: Mapping[str, Any] | None = None, *,
               max_bytes: int = MAX_BYTES) -> Any:
    """``data`` parsed, checked for size and depth first, then against ``schema``."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if len(raw) > max_bytes:
        raise BadDocument(f"larger than {max_bytes} bytes")
    if _depth(raw) > MAX_DEPTH:
        raise BadDocument(f"nested deeper than {MAX_DEPTH} levels")
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise BadDocument(f"not JSON ({printable(str(e))})") from e
    if schema is not None:
        validate(doc, schema)
    return doc


def read_json(path: Path, schema: Mapping[str, Any] | None = None, *,
              max_bytes: int = MAX_BYTES, follow: bool = True) -> Any:
    """The document at ``path`` (a regular file: a FIFO or a device is refused, never waited
    on or read without end; no more than ``max_bytes`` + 1 bytes are read). Without
    ``follow``, a symlink is refused too (what patchctl writes itself, a cache, is never
    one)."""
    from patchctl import fsutil

    try:
        raw = fsutil.read_regular(path, limit=max_bytes + 1, follow=follow)
    except fsutil.SpecialFileError as e:
        raise BadDocument(str(e)) from e
    except OSError as e:
        raise BadDocument(f"unreadable ({e.strerror or e})") from e
    return parse_json(raw, schema, max_bytes=max_bytes)


def validate(doc: Any, schema: Mapping[str, Any]) -> None:
    """BadDocument naming the first place where ``doc`` is not of ``schema``."""
    import jsonschema

    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schema).iter_errors(doc))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "the top level"
        raise BadDocument(f"at {where}: {shorten(error.message)}")


def shorten(text: str, limit: int = 160) -> str:
    """``printable(text)``, cut to ``limit`` characters."""
    text = printable(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


_CONTROLS = r"\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[{_CONTROLS}]")
_CONTROL_OR_NEWLINE = re.compile(f"[\n{_CONTROLS}]")


def printable(text: str, *, newlines: bool = False) -> str:
    """``text`` with control characters (C0, DEL, C1, bidi overrides) escaped as ``\\xNN``.

    Tabs stay; newlines stay only with ``newlines`` (multi-line text quoted as a block),
    and a lone carriage return is always escaped."""
    if newlines:
        return _CONTROL.sub(_escape, text)
    return _CONTROL.sub(_escape, text.replace("\n", "\\n"))


def control_character(text: str, *, newlines: bool = False) -> str | None:
    """The first character of ``text`` that ``printable`` escapes, or a newline unless
    ``newlines``, written as ``printable`` writes it; None when there is none. How a
    value is refused that would otherwise start a line (a header, a trailer) of its own."""
    m = (_CONTROL if newlines else _CONTROL_OR_NEWLINE).search(text)
    if m is None:
        return None
    return "\\n" if m.group() == "\n" else _escape(m)


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"
