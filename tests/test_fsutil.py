"""fsutil: the one stage-beside-then-swap-in helper, reading only regular files, removal."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from patchctl import fsutil
from patchctl.errors import BusyError, InputError
from tests.builders import special_file


def _tree(root: Path, **files: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def test_swap_in_replaces_and_leaves_nothing_beside(tmp_path: Path) -> None:
    dest = _tree(tmp_path / "d", old="1")
    with fsutil.swap_in(dest) as staging:
        (staging / "new").write_text("2")
    assert sorted(p.name for p in dest.iterdir()) == ["new"]
    assert [p.name for p in tmp_path.iterdir()] == ["d"]


def test_swap_in_body_failure_leaves_dest_untouched(tmp_path: Path) -> None:
    dest = _tree(tmp_path / "d", old="1")
    with pytest.raises(RuntimeError), fsutil.swap_in(dest) as staging:
        (staging / "new").write_text("2")
        raise RuntimeError("stop")
    assert (dest / "old").read_text() == "1" and not (dest / "new").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["d"]


def test_swap_in_mode_follows_the_umask(tmp_path: Path) -> None:
    """Regression: `apply --into` results were always 0700 (mkdtemp's mode)."""
    old = os.umask(0o027)
    try:
        with fsutil.swap_in(tmp_path / "d") as staging:
            (staging / "f").write_text("x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "d").stat().st_mode) == 0o750


def test_recover_puts_back_a_tree_renamed_away(tmp_path: Path) -> None:
    """A crash between the fallback's two renames leaves only `.d.patchctl-old`."""
    _tree(tmp_path / ".d.patchctl-old", keep="1")
    _tree(tmp_path / ".d.patchctl-new-abc", half="x")
    fsutil.recover(tmp_path / "d")
    assert (tmp_path / "d/keep").read_text() == "1"
    assert [p.name for p in tmp_path.iterdir()] == ["d"]


def test_remove_tree_removes_read_only_copies(tmp_path: Path) -> None:
    """Regression: staging copies of a read-only stack/ were left undeletable."""
    tree = _tree(tmp_path / "t" / "sub", f="x").parent
    (tree / "sub").chmod(0o555)
    tree.chmod(0o555)
    fsutil.remove_tree(tree)
    assert not tree.exists()


@pytest.mark.parametrize("kind", ["fifo", "socket"])
def test_read_regular_refuses_special_files_at_once(tmp_path: Path, kind: str) -> None:
    """Regression: a FIFO in stack/ or a stamped DIR blocked forever; a socket gave a traceback."""
    with special_file(tmp_path / "special", kind) as path, \
            pytest.raises(fsutil.SpecialFileError, match=r"is a (named pipe|socket)"):
        fsutil.read_regular(path)


def test_read_cache_takes_only_a_bounded_regular_file(tmp_path: Path) -> None:
    """A cache path holding a FIFO, a symlink (to /dev/zero or to a file) or a huge file was
    read as it came: a hang, memory without end, or someone else's file. Each is a miss now,
    and no more than the limit is ever read."""
    good = tmp_path / "good"
    good.write_bytes(b"x" * 100)
    assert fsutil.read_cache(good, 101) == b"x" * 100
    assert fsutil.read_cache(good, 100) is None  # the limit or more: a miss
    assert fsutil.read_regular(good, limit=10) == b"x" * 10
    (tmp_path / "zero").symlink_to("/dev/zero")
    (tmp_path / "link").symlink_to(good)
    with special_file(tmp_path / "fifo", "fifo"):
        for name in ("zero", "link", "fifo", "missing"):
            assert fsutil.read_cache(tmp_path / name, 1 << 20) is None, name
    assert fsutil.read_regular(tmp_path / "link") == b"x" * 100  # followed unless told not to


def test_replaceable_follows_links_and_refuses_protected(tmp_path: Path) -> None:
    project = _tree(tmp_path / "project" / "stack", series="").parent
    real = _tree(tmp_path / "real")
    (tmp_path / "link").symlink_to(real)
    assert fsutil.replaceable(tmp_path / "link", "--into", {}) == real.resolve()
    for bad in (project, tmp_path):
        with pytest.raises(InputError, match="would replace the project"):
            fsutil.replaceable(bad, "--into", {"the project": project})


def test_path_lock_lives_in_the_cache_or_beside_when_it_cannot(tmp_path: Path,
                                                                monkeypatch) -> None:
    dest = tmp_path / "d"
    monkeypatch.setenv("PATCHCTL_CACHE_DIR", str(tmp_path / "cache"))
    with fsutil.path_lock(dest, "test"):
        assert len(list((tmp_path / "cache" / "locks").iterdir())) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache"]
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("PATCHCTL_CACHE_DIR", str(blocker / "cache"))  # cannot be created
    with fsutil.path_lock(dest, "test"):
        assert (tmp_path / ".d.patchctl-lock").exists()


def _flock_holder(lock: Path, seconds: float) -> subprocess.Popen[bytes]:
    """A real process holding ``lock`` (flock, exclusive) for ``seconds``; it says when it
    holds it, and writes ``lock``.released just before its exit lets the lock go."""
    code = ("import fcntl, os, sys, time\n"
            "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "print('held', flush=True)\n"
            "time.sleep(float(sys.argv[2]))\n"
            "open(sys.argv[1] + '.released', 'w').close()\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(lock), str(seconds)],
                            stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"held\n"
    return proc


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_lock_a_dead_holder_leaves_held_for_a_moment_is_taken(tmp_path: Path) -> None:
    """Killed while it started a program, a holder leaves the lock held by a child that
    has not yet exec'd: the next writer waits that moment out instead of failing."""
    lock = tmp_path / "lock"
    lock.write_text(str(_dead_pid()))
    holder = _flock_holder(lock, 0.3)  # shares the lock, as that child would
    try:
        with fsutil.exclusive_lock(lock, "the stack"):
            assert lock.read_text() == str(os.getpid())
            # it had to let go first; its exit status can come later than the lock's release
            assert (tmp_path / "lock.released").exists()
    finally:
        holder.kill()
        holder.wait()


def test_a_live_holder_is_refused_at_once(tmp_path: Path) -> None:
    lock = tmp_path / "lock"
    holder = _flock_holder(lock, 30)
    lock.write_text(str(holder.pid))
    try:
        started = time.monotonic()
        with (pytest.raises(BusyError, match=f"pid {holder.pid} holds"),
              fsutil.exclusive_lock(lock, "the stack")):
            pass
        assert time.monotonic() - started < 1.5  # no waiting for a live holder
    finally:
        holder.kill()
        holder.wait()
