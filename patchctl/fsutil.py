"""Filesystem helpers: atomic writes, lock files, reading only regular files, and the
one way a directory is replaced: staged beside it, then swapped in.

``swap_in`` is used for ``stack/`` (stackwrite), ``apply --into DIR``
(materialize) and ``export DIR``: a crash or an interrupt at any moment leaves
the old or the new directory, never a mix, and ``recover`` (run by the next
``swap_in``) finishes or undoes whatever an interrupted one left beside it.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import hashlib
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from patchctl.errors import BusyError, InputError

_NEW = "patchctl-new-"
_OLD = "patchctl-old"


def atomic_write(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` via a temp file in the same directory, then rename."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_dead_temps(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp",
                                   dir=path.parent)
    except OSError as e:  # named by the file asked for, not by the temp file beside it
        raise OSError(e.errno, e.strerror, str(path)) from e
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            # mkstemp makes the file 0600; keep an existing file's mode, else the umask's.
            try:
                mode = path.stat().st_mode & 0o777
            except FileNotFoundError:
                mode = 0o666 & ~umask()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(e, OSError) and e.filename in (None, tmp):
            raise OSError(e.errno, e.strerror, str(path)) from e
        raise


def remove_dead_temps(path: Path) -> None:
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


def _outlive(fd: int, holder: str, seconds: float = 2.0) -> bool:
    """Take the lock on ``fd`` that a dead ``holder`` still seems to hold: what a killed
    writer started still shares the lock (``procs.inheriting``; a child that has not yet
    exec'd shares every lock) and may still be writing, so it is waited for. False at
    once when the holder lives, or after ``seconds`` (then a verify is reading, or
    something the holder started still runs)."""
    if not holder.isdigit() or _alive(int(holder)):
        return False
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.01)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            continue
    return False


def umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def exclusive_lock(path: Path, what: str) -> Iterator[int]:
    """Hold ``path`` locked for the duration; a second holder is refused at once. Yields
    the locked file descriptor."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as e:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
            if not _outlive(fd, holder):
                gone = holder.isdigit() and not _alive(int(holder))
                who = (f"pid {holder} is gone, but a process it started still holds {path}"
                       if gone else f"pid {holder} holds {path}")
                raise BusyError(f"{what} is busy: {who} (or a verify is reading); "
                                "wait for it to finish") from e
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def shared_lock(path: Path, wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold ``path`` shared: readers together, never while an ``exclusive_lock`` holder
    writes. Waits for a writer to finish (telling ``wait``). A reader creates nothing: where
    no writer ever made the lock file (or it cannot be opened) it reads unlocked."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            if wait is not None:
                holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
                wait(f"waiting for pid {holder} to finish changing the stack")
            fcntl.flock(fd, fcntl.LOCK_SH)
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


def cache_dir() -> Path:
    """patchctl's per-user cache: upstream clones, and the locks of directories it replaces."""
    if env := os.environ.get("PATCHCTL_CACHE_DIR"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "patchctl"


def stack_cache_file(stack_root: Path, folder: str, suffix: str,
                     cache: Path | None = None) -> Path:
    """The file in ``folder`` of the cache that belongs to the stack at ``stack_root``
    (named by a hash of its absolute path)."""
    name = hashlib.sha256(str(stack_root.absolute()).encode()).hexdigest()[:16]
    return (cache or cache_dir()) / folder / f"{name}{suffix}"


@contextlib.contextmanager
def path_lock(path: Path, what: str) -> Iterator[None]:
    """One patchctl process at a time replaces ``path``; the lock file lives in the cache,
    so nothing is left beside ``path`` (beside it only where the cache is not writable)."""
    key = hashlib.sha256(os.fsencode(path.absolute())).hexdigest()[:32]
    lock = cache_dir() / "locks" / key
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        lock = beside(path.absolute(), "patchctl-lock")
    with exclusive_lock(lock, what):
        yield


# -- reading only regular files ------------------------------------------------------------

_KINDS = {stat.S_IFIFO: "a named pipe (FIFO)", stat.S_IFSOCK: "a socket",
          stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFDIR: "a directory"}


class SpecialFileError(InputError):
    """A path patchctl must read or replace is not a regular file (a FIFO would block)."""


def special_kind(mode: int) -> str | None:
    """What a non-regular, non-symlink file is, in words; None for files and symlinks."""
    fmt = stat.S_IFMT(mode)
    return None if fmt in (stat.S_IFREG, stat.S_IFLNK) else _KINDS.get(fmt, "not a regular file")


def refuse_special(path: Path, mode: int, hint: str) -> None:
    kind = special_kind(mode)
    if kind is not None:
        raise SpecialFileError(f"{path} is {kind}, not a regular file; {hint}")


def open_regular(path: Path, hint: str = "remove or replace it") -> int:
    """An fd for reading ``path``, refused (not blocked on) when it is a FIFO, socket or device."""
    fd, _ = _open_checked(path, hint)
    try:
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_checked(path: Path, hint: str, *, follow: bool = True) -> tuple[int, os.stat_result]:
    """``open_regular``'s fd, still non-blocking, and its stat. Without ``follow``, a
    symlink is refused too (ELOOP), whatever it points at."""
    # O_NONBLOCK: opening a FIFO with no writer would wait forever; a socket fails (ENXIO).
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        with contextlib.suppress(OSError):
            refuse_special(path, (os.stat if follow else os.lstat)(path).st_mode, hint)
        raise e
    try:
        st = os.fstat(fd)
        refuse_special(path, st.st_mode, hint)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_regular(path: Path, hint: str = "remove or replace it", *, limit: int | None = None,
                 follow: bool = True) -> bytes:
    """The bytes of the regular file ``path``; at most ``limit`` of them, so a caller that
    gets ``limit`` bytes knows the file is at least that long (and memory stays bounded
    however large it is, or grows). Without ``follow``, a symlink is refused (OSError)."""
    fd, st = _open_checked(path, hint, follow=follow)
    # os.read, not a buffered file object, and no fcntl back to blocking (O_NONBLOCK means
    # nothing to a regular file): a third of the cost on 2,000 small patches
    try:
        left = st.st_size + 1 if limit is None else min(st.st_size + 1, limit)
        first = os.read(fd, left)
        if len(first) == st.st_size or len(first) == limit:  # all there is, or all we take
            return first
        chunks, total = [first], len(first)  # it changed since the stat, or a short read:
        while chunks[-1] and (limit is None or total < limit):  # read to the end (or limit)
            chunks.append(os.read(fd, 1 << 16 if limit is None else min(1 << 16, limit - total)))
            total += len(chunks[-1])
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_cache(path: Path, limit: int) -> bytes | None:
    """A file patchctl wrote for itself (a cache), read back as untrusted: its bytes, or None
    when it is missing, not a regular file (a FIFO is not waited on, a device not read, a
    symlink not followed: patchctl writes none) or ``limit`` bytes or more. None is a miss:
    the caller computes again and writes the file anew."""
    try:
        data = read_regular(path, limit=limit, follow=False)
    except (OSError, SpecialFileError):
        return None
    return data if len(data) < limit else None


# -- stage beside, then swap in ------------------------------------------------------------


def replaceable(dest: Path, option: str, protect: dict[str, Path], *,
                inside: dict[str, Path] | None = None) -> Path:
    """``dest`` resolved (a symlink is followed: its target will be replaced, the link kept),
    refused when it is not a directory, is or holds one of ``protect``'s paths, or lies
    inside one of ``inside``'s (trees only their own commands write in, such as stack/)."""
    dest = Path(os.path.realpath(dest.absolute()))
    if dest.exists() and not dest.is_dir():
        raise InputError(f"{option} {dest}: exists and is not a directory")
    return _outside(dest, option, protect, inside or {})


def replaceable_file(path: Path, option: str, protect: dict[str, Path], *,
                     inside: dict[str, Path] | None = None) -> Path:
    """``path`` with its directory resolved (the file itself is not followed: ``atomic_write``
    replaces a link, never writes through it), refused like ``replaceable``'s directory."""
    path = Path(os.path.realpath(path.absolute().parent)) / path.name
    if path.is_dir() and not path.is_symlink():
        raise InputError(f"{option} {path}: is a directory; name a file")
    return _outside(path, option, protect, inside or {})


def _outside(dest: Path, option: str, protect: dict[str, Path],
             inside: dict[str, Path]) -> Path:
    for what, path in protect.items():
        real = Path(os.path.realpath(path.absolute()))
        if real == dest or dest in real.parents:
            raise InputError(f"{option} {dest} would replace {what} ({real}): "
                             "choose a directory outside it")
    for what, path in inside.items():
        real = Path(os.path.realpath(path.absolute()))
        if real == dest or real in dest.parents:
            raise InputError(f"{option} {dest} is inside {what} ({real}): "
                             "choose a path outside it")
    return dest


def beside(dest: Path, tag: str) -> Path:
    return dest.parent / f".{dest.name}.{tag}"


@contextlib.contextmanager
def swap_in(dest: Path) -> Iterator[Path]:
    """Yield an empty directory beside ``dest``; when the body returns, it replaces ``dest``.

    The staged directory gets the umask's mode (the body may change it). One
    atomic ``renameat2(RENAME_EXCHANGE)`` swaps it in where the OS has it; else
    ``dest`` is renamed to ``.NAME.patchctl-old`` and the new one into place,
    and ``recover`` repairs a crash in between. If the body raises, ``dest`` is
    untouched. The old tree and any staging are removed afterwards, even when
    read-only. ``dest`` must not be a symlink: callers resolve or refuse it.
    """
    dest = dest.absolute()
    if dest.is_symlink():
        raise InputError(f"{dest} is a symbolic link; patchctl never replaces one")
    recover(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.{_NEW}", dir=dest.parent))
    swapped = False
    try:
        os.chmod(staging, 0o777 & ~umask())  # mkdtemp's 0700 would hide the result
        yield staging
        if os.path.lexists(dest) and exchange(staging, dest):
            swapped = True
        else:
            old = beside(dest, _OLD)
            if os.path.lexists(dest):
                remove_tree(old)
                os.rename(dest, old)
            os.rename(staging, dest)
            swapped = True
            with _no_interrupt():
                remove_tree(old)
        fsync_dir(dest.parent)
    finally:
        # After the swap the work is done: Ctrl-C no longer cancels it, so it waits
        # until the old tree is gone (an interrupt here used to leave it behind).
        with _no_interrupt() if swapped else contextlib.nullcontext():
            remove_tree(staging)  # after an exchange: the old tree


@contextlib.contextmanager
def _no_interrupt() -> Iterator[None]:
    """SIGINT is ignored for the duration (main thread only; elsewhere a no-op)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def recover(dest: Path) -> None:
    """Finish what an interrupted ``swap_in`` left beside ``dest``."""
    old = beside(dest, _OLD)
    if os.path.lexists(old) and not os.path.lexists(dest):
        os.rename(old, dest)  # interrupted between the fallback's two renames
    elif os.path.lexists(old):
        remove_tree(old)
    for leftover in glob.glob(glob.escape(str(beside(dest, _NEW))) + "*"):
        remove_tree(Path(leftover))


def remove_tree(path: Path) -> None:
    """Remove ``path`` (a tree, a file or a link) if it exists, read-only parts included."""
    if not os.path.lexists(path):
        return
    if path.is_symlink() or not path.is_dir():
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return

    def make_writable_and_retry(fn: Callable[..., Any], p: str, _exc: object) -> None:
        with contextlib.suppress(OSError):
            if fn in (os.open, os.scandir, os.listdir):  # an unreadable directory
                os.chmod(p, stat.S_IRWXU)  # the next pass lists and removes it
                return
            parent = os.path.dirname(p)
            os.chmod(parent, os.stat(parent).st_mode | stat.S_IRWXU)
            fn(p)

    for _ in range(3):
        shutil.rmtree(path, onerror=make_writable_and_retry)
        if not os.path.lexists(path):
            return


def sync_files(root: Path, files: list[Path]) -> None:
    """Make ``files`` (under ``root``) durable: one ``syncfs`` of ``root``'s file system
    where Linux has it (one call, however many files), else an ``fsync`` of each."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(root, os.O_RDONLY)
        try:
            if ctypes.CDLL(None, use_errno=True).syncfs(fd) == 0:
                return
        finally:
            os.close(fd)
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
