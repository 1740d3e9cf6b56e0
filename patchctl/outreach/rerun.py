"""How a person reruns a record from a clone of the project: the recorded command where
it names nothing outside the project, else the usage its wrapper script states.

A record made with a developer's scratch folder (models, work trees, commits of a
``patchctl edit`` worktree) cannot be rerun as recorded: the brief must not give that
command as a rerun. A script of the project states its own usage (a comment line
``#   scripts/NAME ARG...``) and what the rerun needs (a comment paragraph starting
``# Needs:``); they are read from the script as it is, so they stay true when it changes.
No git here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

_SCRIPT_MAX = 256 * 1024


@dataclass(frozen=True)
class Rerun:
    command: list[str]
    needs: str  # what the rerun needs beyond a clone of the project ("": nothing said)
    as_recorded: bool  # the record's own command (else the script's usage)


def relocatable(command: Sequence[str], cwd: str) -> bool:
    """Whether a recorded command names only what a clone of the project has: no absolute
    path outside the folder it ran in, nor one in a hidden folder there (``.patchctl``,
    ``.venv``: what that checkout made, not the project's files)."""
    for word in (w for arg in command for w in re.split(r"[\s=]+", arg) if w):
        path = PurePosixPath(word)
        if not path.is_absolute():
            continue
        if not cwd or not path.is_relative_to(cwd):
            return False
        if any(part.startswith(".") for part in path.relative_to(cwd).parts):
            return False
    return True


def rerun(command: Sequence[str], cwd: str, root: Path, programs: Sequence[Path]) -> Rerun:
    """The rerun of a record: ``command`` as recorded when it is relocatable; else the usage
    and needs of the first of ``programs`` (the project's scripts it runs) that states a
    usage; else the recorded command, which then needs what the recording machine had."""
    if relocatable(command, cwd):
        return Rerun(list(command), "", True)
    for path in programs:
        usage, needs = _usage(root, path)
        if usage:
            return Rerun(usage, needs, False)
    return Rerun(list(command), "the paths of the machine that recorded it", True)


def _usage(root: Path, path: Path) -> tuple[list[str], str]:
    """A script's usage line (``#   scripts/NAME ARG...``, its own path first) and its
    ``# Needs:`` paragraph, from its leading comments."""
    try:
        rel = path.resolve().relative_to(root.resolve()).as_posix()
        if path.stat().st_size > _SCRIPT_MAX:
            return [], ""
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError, ValueError):
        return [], ""
    usage: list[str] = []
    needs: list[str] = []
    reading = False  # in the Needs paragraph, which ends at a blank comment line
    for line in lines:
        if not line.startswith("#"):
            if line.strip():
                break  # the leading comments only
            continue
        text = line.lstrip("#").strip()
        if reading:
            reading = bool(text)
            needs += [text] if text else []
        elif not usage and text.split()[:1] == [rel]:
            usage = text.split()
        elif text.startswith("Needs:"):
            needs, reading = [text.removeprefix("Needs:").strip()], True
    return usage, " ".join(needs)
