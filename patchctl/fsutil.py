"""Filesystem helpers: atomic writes and an exclusive, non-blocking lock file."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from patchctl.errors import BusyError


def atomic_write(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` via a temp file in the same directory, then rename."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_dead_temps(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp",
                               dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            # mkstemp makes the file 0600; keep an existing file's mode, else the umask's.
            try:
                mode = path.stat().st_mode & 0o777
            except FileNotFoundError:
                mode = 0o666 & ~_umask()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _remove_dead_temps(path: Path) -> None:
    """Remove the temp files of earlier writes of ``path`` whose writer was killed (its pid,
    in the name, is gone): a SIGKILL between write and rename leaves one behind."""
    import glob

    for tmp in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        pid = tmp.name[len(path.name) + 2:].split(".", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def exclusive_lock(path: Path, what: str) -> Iterator[None]:
    """Hold ``path`` locked for the duration; a second holder is refused at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as e:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "another process"
            raise BusyError(
                f"{what} is busy: pid {holder} holds {path}; wait for it to finish"
            ) from e
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)


def exchange(a: Path, b: Path) -> bool:
    """Atomically swap two directory entries (Linux ``renameat2(RENAME_EXCHANGE)``).

    Returns False where the call is unavailable (another OS, an old kernel or a
    file system without it); the caller then falls back to two renames.
    """
    import ctypes
    import errno

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(a))
