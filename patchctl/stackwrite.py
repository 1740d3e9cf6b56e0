"""Changing ``stack/`` all at once, and patchctl's private state under ``<project>/.patchctl``.

Commands that rewrite several stack files (rebase-pin, import, refresh) never
edit ``stack/`` in place: a full copy is staged beside it, changed there, and
swapped in with one atomic ``renameat2(RENAME_EXCHANGE)``. A crash or an
interrupt at any moment leaves ``stack/`` byte-identical to the old or to the
new stack, never a mix. Where the exchange is unavailable, two renames are
used and the next transaction repairs an interrupted swap.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from patchctl import fsutil
from patchctl.errors import InputError
from patchctl.stack import Stack, find_stack

STATE_DIR = ".patchctl"


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


@contextlib.contextmanager
def stack_lock(project: Path, what: str) -> Iterator[None]:
    """One writer per project: rebase-pin, import, new, edit and refresh all take it.

    Whoever takes it first finishes or removes what a killed writer left beside
    ``stack/`` (a staged copy), even when this run then writes nothing."""
    with fsutil.exclusive_lock(state_dir(project) / "lock", what):
        with contextlib.suppress(InputError):  # no stack yet: nothing to recover
            recover(find_stack(project).root)
        yield


def snapshot(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` by relative path, to notice changes made meanwhile."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if full.is_symlink():
                out[rel] = "link:" + os.readlink(full)
            else:
                out[rel] = hashlib.sha256(full.read_bytes()).hexdigest()
    return out


def replace_stack(stack: Stack, changes: Mapping[str, bytes | None], *,
                  expect: Mapping[str, str] | None = None) -> None:
    """Apply ``changes`` (path relative to the stack -> new bytes, or None to delete) atomically.

    With ``expect`` (a ``snapshot`` taken when the work began), refuse if the
    stack changed since: the user's edits made meanwhile are never overwritten.
    """
    root = stack.root.absolute()
    recover(root)
    staging = Path(tempfile.mkdtemp(prefix=f".{root.name}.patchctl-new-", dir=root.parent))
    try:
        shutil.copytree(root, staging, symlinks=True, dirs_exist_ok=True)
        shutil.copystat(root, staging)  # mkdtemp made it private; keep the stack's mode
        for rel, data in changes.items():
            target = staging / rel
            if data is None:
                target.unlink(missing_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        if expect is not None and snapshot(root) != dict(expect):
            changed = sorted(set(snapshot(root).items()) ^ set(expect.items()))
            raise InputError(f"{root} changed while patchctl was working ({changed[0][0]}); "
                             "nothing was written: review your edits and run the command again")
        if not fsutil.exchange(staging, root):
            old = root.parent / f".{root.name}.patchctl-old"
            shutil.rmtree(old, ignore_errors=True)
            os.rename(root, old)
            os.rename(staging, root)
            staging = old
        _fsync_dir(root.parent)
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # after the swap: the old stack


def recover(root: Path) -> None:
    """Finish what an interrupted transaction left beside ``root``."""
    old = root.parent / f".{root.name}.patchctl-old"
    if old.exists() and not root.exists():
        os.rename(old, root)  # interrupted between the fallback's two renames
    elif old.exists():
        shutil.rmtree(old, ignore_errors=True)
    for leftover in root.parent.glob(f".{root.name}.patchctl-new-*"):
        shutil.rmtree(leftover, ignore_errors=True)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
