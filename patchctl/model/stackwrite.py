"""Changing ``stack/`` all at once, and patchctl's private state under ``<project>/.patchctl``.

Commands that rewrite several stack files (rebase-pin, import, refresh) never
edit ``stack/`` in place: a full copy is staged beside it, changed there, and
swapped in with one atomic ``renameat2(RENAME_EXCHANGE)``. A crash or an
interrupt at any moment leaves ``stack/`` byte-identical to the old or to the
new stack, never a mix. Where the exchange is unavailable, two renames are
used and the next transaction repairs an interrupted swap.

patchctl's own state that names what the new stack holds (the edit state naming the
patch `refresh --all` just wrote) goes in the same transaction: ``replace_stack(then=)``
journals it beside the stack before the swap, and whoever next takes the lock writes
it if that stack is the one swapped in, or drops it if the swap never happened.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from patchctl import fsutil, procs
from patchctl.errors import EnvironmentFailure, InputError
from patchctl.model import schemas
from patchctl.model.stack import LOCK_FILE, Lock, Stack, find_stack, render_lock

STATE_DIR = ".patchctl"
_JOURNAL = "patchctl-journal"  # beside the stack: .stack.patchctl-journal


def state_dir(project: Path, *, create: bool = True) -> Path:
    """``<project>/.patchctl``: edit and rebase work trees, state files, the lock.

    It ignores itself (a ``.gitignore`` of ``*``), so a project never commits it.
    """
    path = project.absolute() / STATE_DIR
    links = [p for p in (path, *(path.iterdir() if path.is_dir() and not path.is_symlink()
                                 else ())) if p.is_symlink()]
    if links:  # work trees there are deleted and rewritten: never through a link
        raise InputError(f"{links[0]} is a symbolic link; patchctl keeps its private state "
                         "in a real directory: remove the link")
    if create:
        path.mkdir(parents=True, exist_ok=True)
        ignore = path / ".gitignore"
        if not ignore.exists():
            fsutil.atomic_write(ignore, "# patchctl's private state; never committed\n*\n")
    return path


def output_areas(project: Path, stack: Stack, more: Mapping[str, Path] | None = None
                 ) -> tuple[dict[str, Path], dict[str, Path]]:
    """For a verb that replaces a directory the user names (``apply --into``, ``export``,
    ``draft-outreach --out``): what it may not be or hold (the stack, the project and
    ``more``), and what it may not lie inside (the stack, ``.git``). ``.patchctl/`` is
    allowed: ``ci run`` applies into ``.patchctl/ci/LANE/tree``."""
    return ({"the project": project, "the stack": stack.root, **(more or {})},
            {"the stack": stack.root, "the project's .git": project / ".git"})


@contextlib.contextmanager
def stack_lock(project: Path, what: str) -> Iterator[None]:
    """One writer per project: rebase-pin, import, new, edit and refresh all take it.

    Whoever takes it first finishes or removes what a killed writer left beside
    ``stack/`` (a staged copy), even when this run then writes nothing. Every process
    started meanwhile holds it too (``procs.inheriting``): a writer killed while git
    wrote its work tree leaves that git running, and the next writer waits for it
    rather than reading or rebuilding that work tree under it."""
    with fsutil.exclusive_lock(state_dir(project) / "lock", what) as fd, \
            procs.inheriting(fd):
        try:
            root = find_stack(project).root
        except InputError:  # no stack yet: nothing to recover
            pass
        else:
            recover(root)
        yield


@contextlib.contextmanager
def stack_read_lock(project: Path,
                    wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """Read one consistent stack: no writer swaps ``stack/`` meanwhile (waits for one that is)."""
    with fsutil.shared_lock(state_dir(project, create=False) / "lock", wait):
        yield


def write_lock(project: Path, stack: Stack, lock: Lock) -> None:
    """Rewrite ``stack.lock`` as every stack change is made: under the lock, swapped in."""
    with stack_lock(project, f"lock in {stack.root}"):
        replace_stack(stack, {LOCK_FILE: render_lock(lock).encode()})


def snapshot(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` by relative path, to notice changes made meanwhile.

    A FIFO, socket or device in the stack is refused (reading a FIFO would block forever).
    """
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if full.is_symlink():
                out[rel] = "link:" + os.readlink(full)
            else:
                data = fsutil.read_regular(full, "a stack holds only regular files: remove it")
                out[rel] = hashlib.sha256(data).hexdigest()
    return out


def replace_stack(stack: Stack, changes: Mapping[str, bytes | None], *,
                  expect: Mapping[str, str] | None = None,
                  then: Mapping[Path, bytes] | None = None) -> None:
    """Apply ``changes`` (path relative to the stack -> new bytes, or None to delete) atomically.

    With ``expect`` (a ``snapshot`` taken when the work began), refuse if the
    stack changed since: the user's edits made meanwhile are never overwritten.
    Everything is checked before anything is written: a symlink on the way to
    a changed file is refused (patchctl never writes through one), and so is a
    stack patchctl may not write. ``then``: files of patchctl's private state
    (under ``<project>/.patchctl``) written if and only if the swap happens, even
    when the process dies just after it (``recover`` writes them then).
    """
    root = stack.root.absolute()
    if root.is_symlink():
        raise InputError(f"{root} is a symbolic link; patchctl never writes through one: "
                         "replace it with the directory it points to")
    _check_writable(root, changes)
    journal = {_state_file(root, path): data.decode("utf-8") for path, data in
               (then or {}).items()}
    recover(root)  # an earlier run's journal is finished before this one is written
    with fsutil.swap_in(root) as staging:
        if expect is not None:
            now = snapshot(root)
            if now != dict(expect):
                changed = sorted(set(now.items()) ^ set(expect.items()))
                raise InputError(f"{root} changed while patchctl was working "
                                 f"({changed[0][0]}); nothing was written: review your edits "
                                 "and run the command again")
        shutil.copytree(root, staging, symlinks=True, dirs_exist_ok=True)
        shutil.copystat(root, staging)  # keep the stack's own mode
        for rel in changes:  # the copy keeps links as links: check before writing anything
            for part in _down_to(staging, staging / rel):
                if part.is_symlink():
                    raise InputError(f"{root / part.relative_to(staging)} is a symbolic link; "
                                     "patchctl never writes through one: replace it with the "
                                     "file it points to")
        written = []
        for rel, data in changes.items():
            target = staging / rel
            target.unlink(missing_ok=True)
            if data is None:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "xb") as f:
                f.write(data)
            written.append(target)
        fsutil.sync_files(staging, written)  # on disk before the swap makes them the stack
        if journal:
            fsutil.atomic_write(fsutil.beside(root, _JOURNAL), json.dumps(
                {"schema": schemas.STACK_JOURNAL, "stack": _digest(staging),
                 "files": journal}, sort_keys=True) + "\n")
    if journal:  # swapped: the state follows, and the journal is done with
        _write_state(root, journal)
        fsutil.beside(root, _JOURNAL).unlink()


def _check_writable(root: Path, changes: Mapping[str, bytes | None]) -> None:
    """Refuse, naming the path, a stack (or the parts of it that change) patchctl may not write."""
    if not os.access(root.parent, os.W_OK):
        raise EnvironmentFailure(f"{root.parent}: not writable (Permission denied); patchctl "
                                 f"replaces {root.name}/ from beside it and must write there")
    for rel in changes:
        for part in (root, *_down_to(root, root / rel)):
            if os.path.lexists(part) and not part.is_symlink() and \
                    not os.access(part, os.W_OK):
                raise EnvironmentFailure(f"{part}: read-only (Permission denied); make it "
                                         "writable to change the stack")


def _down_to(root: Path, path: Path) -> list[Path]:
    """The paths from below ``root`` down to ``path``, ``path`` included."""
    out, here = [], root
    for part in path.relative_to(root).parts:
        here = here / part
        out.append(here)
    return out


def recover(root: Path) -> None:
    """Finish what an interrupted transaction left beside ``root``: the swap, then the
    state files it journalled (``replace_stack(then=)``)."""
    fsutil.recover(root)
    _finish_then(root)


def _digest(root: Path) -> str:
    """One id of everything under ``root`` (``snapshot``): which stack a journal belongs to."""
    return hashlib.sha256(json.dumps(snapshot(root), sort_keys=True).encode()).hexdigest()


def _state_file(root: Path, path: Path) -> str:
    """``path``, a file under ``<project>/.patchctl``, relative to the project (the stack's
    parent, where the journal lies)."""
    rel = Path(os.path.relpath(path.absolute(), root.parent))
    if rel.parts[:1] != (STATE_DIR,) or ".." in rel.parts or len(rel.parts) < 2:
        raise ValueError(f"{path}: not a state file under {root.parent / STATE_DIR}")
    return rel.as_posix()


def _finish_then(root: Path) -> None:
    """Write the state files journalled beside ``root`` if ``root`` is the stack they were
    journalled with (its swap happened), then drop the journal. The journal only ever
    names files under ``.patchctl``; one that names others, or cannot be read, is dropped."""
    journal = fsutil.beside(root, _JOURNAL)
    fsutil.remove_dead_temps(journal)  # a write of it that was killed before its rename
    if journal.is_symlink() or not journal.is_file():
        if journal.is_symlink():
            journal.unlink()
        return
    try:
        data = json.loads(journal.read_text(encoding="utf-8"))
        files = {_state_file(root, root.parent / rel): text
                 for rel, text in data["files"].items() if isinstance(text, str)}
        swapped = data["schema"] == schemas.STACK_JOURNAL and \
            len(files) == len(data["files"]) and os.path.isdir(root) and \
            data["stack"] == _digest(root)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        swapped = False
    if swapped:
        _write_state(root, files)
    journal.unlink()


def _write_state(root: Path, files: Mapping[str, str]) -> None:
    """Write ``files`` (relative to the stack's parent, each under ``.patchctl``)."""
    for rel, text in sorted(files.items()):
        for part in _down_to(root.parent, root.parent / rel):
            if part.is_symlink():
                raise InputError(f"{part} is a symbolic link; patchctl keeps its private "
                                 "state in a real directory: remove the link")
        fsutil.atomic_write(root.parent / rel, text)
