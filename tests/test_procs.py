"""procs: every process patchctl starts runs in a group of its own that a deadline, a flood
of processes or a signal to patchctl ends whole."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from patchctl import procs

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                                reason="counts processes through /proc")


def test_a_flood_of_processes_is_stopped_whole() -> None:
    """A process that keeps starting others (the lazy-fetch cascade of git 2.39 in a
    partial clone of a plain-HTTP server) ran until the machine gave out: it is stopped
    past the bound, every process of it."""
    mark = _mark()
    began = time.monotonic()
    with pytest.raises(procs.ProcessFlood) as e:
        procs.run(["sh", "-c", f"while :; do sleep {mark} & done"], limit=20)
    assert time.monotonic() - began < 30
    assert e.value.count > 20 and "all of them were stopped" in str(e.value)
    time.sleep(0.1)
    assert not _running(mark)


def test_input_reaches_a_process_that_outlives_the_first_wait() -> None:
    """A process fed input that ran longer than the first quarter-second wait failed with
    "Cannot send input after starting communication" (the input was passed again to each
    later wait): `patchctl import` of 19 real patches died so in `git fast-import`. Not
    passing it again would leave what the pipe had not taken unwritten, and the process
    waiting for it forever."""
    data = b"x" * 300_000 + b"\n"
    done = procs.run(["sh", "-c", "sleep 0.6; cat"], input=data, timeout=30)
    assert done.returncode == 0 and done.stdout == data


def test_a_deadline_ends_the_whole_group() -> None:
    """A timeout killed git's first process only and left what it started running."""
    mark = _mark()
    with pytest.raises(subprocess.TimeoutExpired):
        procs.run(["sh", "-c", f"sleep {mark} & sleep 30"], timeout=0.5)
    time.sleep(0.1)
    assert not _running(mark)


def test_an_exit_leaves_nothing_behind() -> None:
    """A leader that ends while something it started goes on: the rest is killed too."""
    mark = _mark()
    done = procs.run(["sh", "-c", f"sleep {mark} & sleep 0.6; echo out"])
    assert done.returncode == 0 and done.stdout == b"out\n"
    time.sleep(0.1)
    assert not _running(mark)


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="watches the exit through a pidfd")
def test_an_end_is_seen_when_it_happens_not_at_the_next_poll(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A process whose output goes to files, not pipes (spooled `git apply`), was waited for
    by Popen's polling, which sleeps up to 50 ms between looks: each end was seen ~30 ms
    late, twice on the way of every large verify. The exit itself is watched now, before
    and after the group is first counted: nothing sleeps while it runs."""
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)  # Popen's polling sleeps through it
    with (tmp_path / "out").open("wb") as out, procs.start(
            ["sh", "-c", "sleep 0.4; echo done"], stdout=out, stderr=out) as proc:
        done = procs.wait(proc, ["sh"])
    assert done.returncode == 0 and (tmp_path / "out").read_bytes() == b"done\n"
    assert slept == []


def test_sigterm_to_patchctl_ends_the_groups_it_started(tmp_path: Path) -> None:
    """SIGTERM (a `timeout`, a CI cancel) killed patchctl and left its git groups running:
    the console script unwinds and kills them."""
    mark = _mark()
    ready = tmp_path / "ready"
    script = (
        "import sys\n"
        "from patchctl import procs\n"
        "procs.terminate_on_sigterm()\n"
        f"procs.run(['sh', '-c', 'touch {ready}; sleep {mark}'])\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE)
    for _ in range(200):
        if ready.exists() and _running(mark):
            break
        time.sleep(0.05)
    assert _running(mark)
    child.send_signal(signal.SIGTERM)
    child.wait(timeout=10)
    time.sleep(0.1)
    assert not _running(mark)


def test_nothing_is_read_from_the_terminal() -> None:
    """A process patchctl starts gets no standard input unless given one."""
    assert procs.run(["cat"], timeout=10).stdout == b""
    assert procs.run(["cat"], input=b"x", timeout=10).stdout == b"x"


def _mark() -> str:
    """A sleep of about 30 s whose length no other process has: its command line marks it."""
    return f"30.{os.getpid()}{time.monotonic_ns() % 10**9}"


def _running(mark: str) -> bool:
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
                stat = Path(f"/proc/{pid}/stat").read_bytes()
            except OSError:
                continue
            if mark.encode() in cmd and b") Z" not in stat:
                return True
    return False


def test_a_stream_gives_each_line_and_leaves_nothing_behind() -> None:
    """A build or a recorded command streamed its lines through a bare Popen: an interrupt
    killed the first process only, and what it started ran on. Now each line comes as it
    is printed, and whatever is left in its group when it exits is ended."""
    mark = _mark()
    seen: list[bytes] = []
    code = procs.stream(["sh", "-c", f"echo one; echo two >&2; (sleep {mark} &) ; exit 3"],
                        seen.append)
    assert code == 3 and sorted(seen) == [b"one\n", b"two\n"]
    time.sleep(0.1)
    assert not _running(mark)


def test_an_interrupted_stream_ends_its_group() -> None:
    """KeyboardInterrupt while a streamed command runs ends the command's whole group."""
    mark = _mark()

    def stop(line: bytes) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        procs.stream(["sh", "-c", f"sleep {mark} & echo started; wait"], stop)
    time.sleep(0.1)
    assert not _running(mark)
