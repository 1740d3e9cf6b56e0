"""patchctl's private state files (rebase and edit state): one load, one save.

A state file is JSON with a ``schema`` id (patchctl/model/schemas.py), written
atomically (temp file in the same directory, then rename) with sorted keys, and
validated on load: a missing, mistyped or unknown field is one actionable
error, never a KeyError later.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from patchctl import fsutil
from patchctl.errors import InputError

T = TypeVar("T")
NONE = type(None)


def field(d: object, key: str, kind: type | tuple[type, ...]) -> Any:
    """``d[key]`` when it is a ``kind``; ValueError (reported by ``load``) otherwise."""
    if not isinstance(d, dict) or key not in d or not isinstance(d[key], kind) or \
            (kind is int and isinstance(d[key], bool)):
        raise ValueError(f"{key!r} missing or of the wrong type")
    return d[key]


def load(path: Path, schema: str, parse: Callable[[dict[str, Any]], T], *, what: str,
         again: str,
         older: tuple[str, ...] = ()) -> T | None:
    """The state at ``path`` parsed by ``parse``; None when there is no file.

    ``again`` says what to do about a bad file (e.g. "run `patchctl rebase-pin --abort`
    and start again"); ``older`` are schema ids of earlier patchctl versions."""
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as e:  # RecursionError: nested too deep
        raise InputError(f"{path}: unreadable {what} ({e}); {again}") from e
    found = data.get("schema") if isinstance(data, dict) else None
    if found in older:
        raise InputError(f"{path}: {what} from an older patchctl ({found}); {again}")
    if found != schema:
        raise InputError(f"{path}: not a {what} this patchctl understands ({found!r}, "
                         f"expected {schema}); {again}")
    try:
        return parse(data)
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(f"{path}: damaged {what} ({e}); {again}") from e


def render(schema: str, data: dict[str, Any]) -> str:
    """The text ``save`` writes (for a state file written with the stack's swap)."""
    return json.dumps({"schema": schema, **data}, indent=2, sort_keys=True) + "\n"


def save(path: Path, schema: str, data: dict[str, Any]) -> None:
    fsutil.atomic_write(path, render(schema, data))
