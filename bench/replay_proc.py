"""bench/replay.py's one way to run a process: patchctl.procs (a group of its own, killed
whole past its deadline), in the benches' hermetic environment."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from _common import BenchError, hermetic_env

from patchctl import procs

TIMEOUT = 600.0  # seconds: one rebase-pin step on llama.cpp takes about ten


def call(
    argv: Sequence[str | os.PathLike[str]],
    *,
    cwd: Path | None = None,
    input: bytes | None = None,
    env: dict[str, str] | None = None,
    check: bool = True,
    timeout: float = TIMEOUT,
) -> procs.Finished:
    args = [str(a) for a in argv]
    try:
        done = procs.run(
            args,
            input=input,
            env=env or hermetic_env(),
            timeout=timeout,
            cwd=str(cwd) if cwd else None,
        )
    except subprocess.TimeoutExpired as e:
        raise BenchError(f"`{' '.join(args[:4])}` ran past {timeout:.0f} s") from e
    if check and done.returncode != 0:
        tail = (done.stderr or b"").decode(errors="replace").strip()[-1500:]
        raise BenchError(f"`{' '.join(args[:6])}` exited {done.returncode}: {tail}")
    return done


def out(done: procs.Finished) -> str:
    return (done.stdout or b"").decode("utf-8", "replace")


def err_line(done: procs.Finished) -> str:
    lines = (done.stderr or b"").decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else ""
