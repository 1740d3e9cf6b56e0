"""The processes patchctl starts: each in a process group of its own, which a timeout, an
interrupt or an error ends whole, holding at most ``MAX_PROCESSES`` processes at once
(``run``, ``capture``; a build that ``stream`` runs is ended whole but not counted).

A process that patchctl starts may start others (git fetch starts git-remote-https, which
may start index-pack; a partial clone's lazy fetch starts a fetch of its own). Killing the
first one alone leaves the rest running, and one of those can be a cascade: git 2.39 in a
partial clone whose server answers as plain ("dumb") HTTP looks each object up, each lookup
starts a lazy fetch, and each fetch walks again, thousands of processes deep. So every
process starts a session of its own (its group is its id), its group is counted while it
runs, and it is killed whole past its deadline, past the count, or when patchctl itself
stops (an interrupt, SIGTERM, an error).

Counting reads /proc: where there is none, the deadline and the group kill still hold.

SIGKILL ends patchctl with no chance to end anything: the groups it started run on. So
while a writer holds the stack's lock, every process it starts inherits that lock
(``inheriting``), and the lock is free only once the last of them has ended: the next
writer never works beside what a killed one left running.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO

from patchctl.errors import EnvironmentFailure

MAX_PROCESSES = 48  # alive at once in one group; git's deepest legitimate chain is ~8
_QUIET = 0.05  # seconds before the group is first counted: most git calls end sooner, and a
#                cascade has not yet reached the bound (it starts hundreds a second)
_TICK = 0.1  # then, how often it is counted
_CHAIN = 8  # a group larger than git's deepest legitimate chain may be a cascade starting:
_FAST_TICK = 0.01  # it is counted this often, so that a fast machine cannot overshoot the bound
_PROC = "/proc"
_INHERITED: set[int] = set()  # file descriptors every process started now is given


class ProcessFlood(EnvironmentFailure):
    """A group held more than its bound of processes at once; all of them were killed."""

    def __init__(self, argv: Sequence[str], count: int, limit: int) -> None:
        self.argv, self.count, self.limit = list(argv), count, limit
        super().__init__(f"`{' '.join(argv[:2])}` had {count} processes running at once "
                         f"(more than {limit}); all of them were stopped")


@dataclass(frozen=True)
class Finished:
    argv: list[str]
    returncode: int
    stdout: bytes | None  # None where it went to a file the caller gave
    stderr: bytes | None


def group_members(pgid: int) -> int:
    """How many processes (zombies included) are in process group ``pgid``; 0 without /proc."""
    n = 0
    try:
        names = os.listdir(_PROC)
    except OSError:
        return 0
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"{_PROC}/{name}/stat", "rb") as f:
                stat = f.read(1024)
        except OSError:  # it ended while we looked
            continue
        # "pid (comm) state ppid pgrp ...": comm may hold anything, so split after its ")"
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 2 and fields[2] == str(pgid).encode():
            n += 1
    return n


def kill_group(pgid: int) -> None:
    """SIGKILL every process of group ``pgid`` until none is left (at most a few rounds:
    a process may fork while the first signal is on its way)."""
    for _ in range(5):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.01)
        if group_members(pgid) == 0:
            return


@contextlib.contextmanager
def inheriting(fd: int) -> Iterator[None]:
    """Every process started in this block is given ``fd`` (and passes it on to what it
    starts): a lock taken on ``fd`` is then held until the last of them has ended, even
    when this process was killed first."""
    _INHERITED.add(fd)
    try:
        yield
    finally:
        _INHERITED.discard(fd)


def run(argv: Sequence[str], *, input: bytes | None = None, env: dict[str, str] | None = None,
        cwd: str | None = None, timeout: float | None = None, limit: int = MAX_PROCESSES,
        stdout: IO[bytes] | int = subprocess.PIPE, stderr: IO[bytes] | int = subprocess.PIPE,
        tick: Callable[[], None] | None = None) -> Finished:
    """Run ``argv`` to its end in a group of its own and return what it printed.

    Past ``timeout`` seconds the group is killed and ``subprocess.TimeoutExpired`` raised;
    past ``limit`` processes at once, killed and ``ProcessFlood`` raised; on any other way
    out (KeyboardInterrupt included), killed before the exception goes on. ``tick`` is
    called about ten times a second while it runs (to report progress). Standard input is
    ``input``, else nothing: a process patchctl starts never reads the terminal.
    """
    with start(argv, input=input, env=env, cwd=cwd, stdout=stdout, stderr=stderr) as proc:
        return wait(proc, argv, input=input, timeout=timeout, limit=limit, tick=tick)


@contextlib.contextmanager
def start(argv: Sequence[str], *, input: bytes | None = None,
          env: dict[str, str] | None = None, cwd: str | None = None,
          stdout: IO[bytes] | int = subprocess.PIPE,
          stderr: IO[bytes] | int = subprocess.PIPE) -> Iterator[subprocess.Popen[bytes]]:
    """``argv`` started in a session of its own; its whole group is killed when the block
    is left with the leader still running (an exception, an interrupt)."""
    proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL if input is None
                            else subprocess.PIPE, stdout=stdout, stderr=stderr, env=env,
                            cwd=cwd, start_new_session=True,
                            pass_fds=tuple(sorted(_INHERITED)))
    try:
        yield proc
    finally:
        if proc.poll() is None:
            kill_group(proc.pid)
            proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def wait(proc: subprocess.Popen[bytes], argv: Sequence[str], *, input: bytes | None = None,
         timeout: float | None = None, limit: int = MAX_PROCESSES,
         tick: Callable[[], None] | None = None) -> Finished:
    """Wait for ``proc`` (from ``start``), counting its group; see ``run``."""
    began = time.monotonic()
    step = _QUIET
    feeder = _feed(proc, input)
    while True:
        left = None if timeout is None else timeout - (time.monotonic() - began)
        if left is not None and left <= 0:
            kill_group(proc.pid)
            proc.wait()
            raise subprocess.TimeoutExpired(list(argv), timeout or 0.0)
        seconds = step if left is None else min(step, left)
        if _ended(proc, seconds) is not False:  # ended, or cannot be watched: Popen waits
            try:
                out, err = proc.communicate(timeout=seconds)  # the input goes by _feed
                break
            except subprocess.TimeoutExpired:
                pass
        if tick is not None:
            tick()
        count = group_members(proc.pid)
        if count > limit:
            kill_group(proc.pid)
            proc.wait()
            raise ProcessFlood(argv, count, limit)
        step = _FAST_TICK if count > _CHAIN else _TICK
    if step != _QUIET and group_members(proc.pid):
        kill_group(proc.pid)  # the leader ended, something it started did not
    if feeder is not None:
        feeder.join()
    return Finished(list(argv), proc.returncode, out, err)


def _ended(proc: subprocess.Popen[bytes], seconds: float) -> bool | None:
    """Whether ``proc`` ended within ``seconds``, seen the moment it ends; None where that
    cannot be watched: a process with a pipe to read (``communicate`` wakes on its end of
    the pipes), a system without pidfds (not Linux >= 5.3).

    Popen's own wait with a timeout polls, sleeping up to 50 ms between looks, so a process
    that writes to files, not pipes (spooled ``git apply``), was seen ending ~30 ms late:
    a 2,000-patch verify waits on two of them one after the other."""
    if proc.stdin is not None or proc.stdout is not None or proc.stderr is not None:
        return None
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # no pidfd here, or it was reaped already
        return None
    try:
        poll = select.poll()
        poll.register(fd, select.POLLIN)
        return bool(poll.poll(seconds * 1000))
    finally:
        os.close(fd)


def _feed(proc: subprocess.Popen[bytes], input: bytes | None) -> threading.Thread | None:
    """Write ``input`` to ``proc`` from a thread of its own, then close its standard input.

    ``communicate(input, timeout=...)`` cannot be retried after a timeout: passing the
    input again raises, and passing none leaves the rest unwritten (Python 3.11 writes only
    when given input), so a process reading more than a pipe holds waited forever."""
    if input is None or proc.stdin is None:
        return None
    pipe, proc.stdin = proc.stdin, None  # communicate() now only reads

    def write() -> None:
        try:
            pipe.write(input)
        except OSError:  # it ended or was killed before reading it all
            pass
        finally:
            with contextlib.suppress(OSError):
                pipe.close()

    thread = threading.Thread(target=write, name="procs-feed", daemon=True)
    thread.start()
    return thread


def terminate_on_sigterm() -> None:
    """Make SIGTERM (``timeout``, a CI runner's cancel) unwind like an interrupt, so the
    groups patchctl started are killed on the way out instead of left running."""
    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    with contextlib.suppress(ValueError):  # not the main thread: leave it as it is
        signal.signal(signal.SIGTERM, handler)


def capture(argv: Sequence[str], *, input: str | None = None,
            env: Mapping[str, str] | None = None, cwd: str | None = None,
            timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(argv, capture_output=True, text=True, check=False)`` in a group of
    its own (``run``): a tool's version, a device list, a worker's self-test. Text is read
    as UTF-8, undecodable bytes replaced."""
    done = run(argv, input=None if input is None else input.encode(), env=_env(env), cwd=cwd,
               timeout=timeout)
    return subprocess.CompletedProcess(list(argv), done.returncode,
                                       (done.stdout or b"").decode("utf-8", "replace"),
                                       (done.stderr or b"").decode("utf-8", "replace"))


def stream(argv: Sequence[str], line: Callable[[bytes], None], *,
           env: Mapping[str, str] | None = None, cwd: str | None = None) -> int:
    """Run ``argv`` in a group of its own, its stdout and stderr together, ``line`` called
    with each line as it comes (a build's progress, a recorded command's output); its exit
    code. Not bounded by count (ninja starts a compiler per core), but ended whole: on an
    interrupt or error, and whatever it left running when it exits."""
    with start(argv, env=_env(env), cwd=cwd, stdout=subprocess.PIPE,
               stderr=subprocess.STDOUT) as proc:
        assert proc.stdout is not None
        for chunk in proc.stdout:
            line(chunk)
        code = proc.wait()
        if group_members(proc.pid):
            kill_group(proc.pid)
        return code


def _env(env: Mapping[str, str] | None) -> dict[str, str] | None:
    return None if env is None else dict(env)
