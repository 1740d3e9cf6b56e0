"""The build tools patchctl drives (cmake, ctest, ninja, ccache): found, version-checked
and run the same way by ``reproduce``, ``release build`` and ``ci``."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from patchctl import procs
from patchctl.errors import EnvironmentFailure

MIN_CMAKE = (3, 21)
INSTALL_HINT = "install them with `pip install cmake ninja`"
_STATUS = re.compile(r"^\[(\d+)/(\d+)\]")

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Toolchain:
    cmake: str
    cmake_version: str
    ctest: str
    ninja: str
    ninja_version: str
    ccache: str | None


def find_toolchain() -> Toolchain:
    """cmake >= 3.21, its ctest, and ninja, from PATH; ccache when installed."""
    cmake = shutil.which("cmake")
    if cmake is None:
        raise EnvironmentFailure(f"cmake is not on PATH: reproducers need CMake >= 3.21 and "
                                 f"ninja; {INSTALL_HINT}")
    cmake_version = _version(cmake, r"cmake version (\d+(?:\.\d+)+)")
    if tuple(int(x) for x in cmake_version.split(".")[:2]) < MIN_CMAKE:
        raise EnvironmentFailure(f"{cmake} is CMake {cmake_version}; reproducers need >= 3.21: "
                                 "`pip install -U cmake`")
    ctest = shutil.which("ctest", path=str(Path(cmake).parent)) or shutil.which("ctest")
    ninja = shutil.which("ninja")
    if ctest is None or ninja is None:
        missing = "ctest" if ctest is None else "ninja"
        raise EnvironmentFailure(f"{missing} is not on PATH; {INSTALL_HINT}")
    return Toolchain(cmake=cmake, cmake_version=cmake_version, ctest=ctest, ninja=ninja,
                     ninja_version=_version(ninja, r"(\d+(?:\.\d+)+)"),
                     ccache=shutil.which("ccache"))


def _version(tool: str, pattern: str) -> str:
    try:
        proc = procs.capture([tool, "--version"], timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise EnvironmentFailure(f"cannot run `{tool} --version` ({e}); {INSTALL_HINT}") from e
    m = re.search(pattern, proc.stdout + proc.stderr)
    if proc.returncode != 0 or not m:
        raise EnvironmentFailure(f"`{tool} --version` failed or said nothing usable; "
                                 f"{INSTALL_HINT}")
    return m.group(1)


def run_tool(argv: list[str], say: Progress | None = None, *,
             env: dict[str, str] | None = None) -> tuple[int, str, float]:
    """Run without a shell (in ``env``, default this process's); stdout and stderr
    together, streamed so ninja's ``[N/M]`` can drive the progress line."""
    env = {**(os.environ if env is None else env), "NINJA_STATUS": "[%f/%t] ",
           "CLICOLOR_FORCE": "0"}
    t0 = time.perf_counter()
    lines: list[str] = []

    def seen(raw: bytes) -> None:
        lines.append(raw.decode("utf-8", "replace"))
        if say and (m := _STATUS.match(lines[-1])):
            say(f"building {m.group(1)}/{m.group(2)}")

    try:
        code = procs.stream(argv, seen, env=env)  # ended whole on an interrupt
    except OSError as e:
        raise EnvironmentFailure(f"cannot run {argv[0]}: {e.strerror}; {INSTALL_HINT}") from e
    return code, "".join(lines), time.perf_counter() - t0
