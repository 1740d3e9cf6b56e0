"""One CI lane: the steps that prove the stack for one backend, run here or on a runner.

A lane is planned from the project (what it has: a native/ build, reproducers)
into a list of plain argument lists, then run in order. ``patchctl ci run``
and the generated workflow run the same plan, so a red lane on CI is
reproduced on a laptop with one command. A step that does not apply to the
project is skipped with its reason; the first failure stops the lane.

A project may give a lane a script, ``native/ci/<lane>-lane.sh`` (the vulkan
lane's installs Mesa's software device and the Vulkan headers): then it is the one
place that prepares the machine and checks the lane's device, and the plan calls
its steps around patchctl's own apply, configure and build: ``--step setup WORK``
(install what is missing; write ``WORK/lane.cmake``, cache entries that configure
loads with ``-C``), ``--step ctest WORK BUILD`` (the lane's CTests on its device,
in place of the plain CTest step) and ``--step check WORK BUILD`` (what the lane
proves beyond them).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from patchctl import fsutil, procs
from patchctl.errors import InputError
from patchctl.model import schemas
from patchctl.model.stack import Stack

SCHEMA = schemas.CI_LANE
PASSED, FAILED, SKIPPED, NOT_RUN = "passed", "failed", "skipped", "not-run"
NATIVE_DIR = "native"
# The variable native/ reads the `apply --into` tree from (native/README.md).
NATIVE_UPSTREAM_VAR = "WORKER_UPSTREAM_DIR"
LANE_SCRIPT = "ci/{lane}-lane.sh"  # under native/: a lane's own setup, CTests and check
LANE_CACHE = "lane.cmake"  # in the lane's work directory, written by the script's setup

Echo = Callable[[str], None]


@dataclass(frozen=True)
class Lane:
    name: str
    runner: tuple[str, ...]  # default `runs-on` labels
    cmake_args: tuple[str, ...]  # what selects the backend in the upstream's build
    about: str


LANES: dict[str, Lane] = {lane.name: lane for lane in (
    Lane("cpu", ("ubuntu-latest",), (), "CPU backend, GitHub-hosted Linux"),
    Lane("cuda", ("self-hosted", "linux", "x64", "cuda"), ("-DGGML_CUDA=ON",),
         "CUDA backend, a self-hosted runner with an NVIDIA GPU and the CUDA toolkit"),
    Lane("vulkan", ("self-hosted", "linux", "x64", "vulkan"), ("-DGGML_VULKAN=ON",),
         "Vulkan backend, a self-hosted runner with a GPU, or a hosted one on Mesa's "
         "software device (--runner vulkan=ubuntu-latest; native/ci/vulkan-lane.sh)"),
    Lane("metal", ("macos-14",), ("-DGGML_METAL=ON",), "Metal backend, GitHub-hosted macOS "
         "on Apple silicon"),
)}


def lane_named(name: str) -> Lane:
    try:
        return LANES[name]
    except KeyError:
        raise InputError(f"unknown lane {name!r}; the lanes are {', '.join(LANES)}") from None


@dataclass
class Step:
    name: str
    argv: list[str]
    skip: str | None = None  # why it does not apply to this project
    status: str = NOT_RUN
    returncode: int | None = None
    seconds: float = 0.0
    log: str | None = None
    error: str | None = None  # the step could not start (tool missing)

    def display(self) -> str:
        """The command as a user would type it (``patchctl`` for this interpreter)."""
        argv = self.argv
        if not argv:
            return ""
        if argv[:3] == [sys.executable, "-m", "patchctl"]:
            argv = ["patchctl", *argv[3:]]
        return shlex.join(argv)


@dataclass
class LaneResult:
    lane: str
    project: str
    work: str
    steps: list[Step]
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return all(s.status in (PASSED, SKIPPED) for s in self.steps)

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "ok": self.ok, "lane": self.lane, "project": self.project,
                "work": self.work, "seconds": round(self.seconds, 3),
                "steps": [{**asdict(s), "command": s.display()} for s in self.steps]}


def default_work(project: Path, lane: Lane) -> Path:
    return project / ".patchctl" / "ci" / lane.name


def plan(project: Path, stack: Stack, lane: Lane, *, work: Path, upstream: str | None = None,
         exclude: Sequence[str] = ()) -> list[Step]:
    """The lane's steps for this project, in order; those that do not apply carry a reason.

    verify runs first so a lane never builds a stack that does not apply; its
    annotations (`--format github`) are the check job's, not repeated per lane.
    """
    project, work = project.absolute(), work.absolute()
    me = [sys.executable, "-m", "patchctl", "-C", str(project)]
    up = ["--upstream", upstream] if upstream else []
    excl = [f"--exclude={g}" for g in exclude]
    tree, build = work / "tree", work / "native"
    steps = [
        Step("verify", [*me, "verify", *up]),
        Step("apply", [*me, "apply", "--into", str(tree), *up, *excl]),
    ]
    native = project / NATIVE_DIR
    build_steps = ("configure", "build", "test")
    if (native / "CMakeLists.txt").is_file():
        from patchctl.reproducers.toolchain import find_toolchain

        tools = find_toolchain()  # the same cmake >= 3.21, ctest and ninja as reproduce
        # ccache is optional: a faster rebuild, never required.
        launcher = [f"-DCMAKE_{lang}_COMPILER_LAUNCHER=ccache"
                    for lang in ("C", "CXX", *(("CUDA",) if lane.name == "cuda" else ()))
                    if tools.ccache]
        script = native / LANE_SCRIPT.format(lane=lane.name)
        if script.is_file():
            def by_script(name: str, script_step: str, *args: str) -> Step:
                return Step(name, ["env", f"CTEST={tools.ctest}", f"PYTHON={sys.executable}",
                                   "bash", str(script), "--step", script_step, *args])

            steps.insert(1, by_script("setup", "setup", str(work)))
            cache = ["-C", str(work / LANE_CACHE)]
            tests = [by_script("test", "ctest", str(work), str(build)),
                     by_script("check", "check", str(work), str(build))]
        else:
            cache = []
            tests = [Step("test", [tools.ctest, "--test-dir", str(build), "--output-on-failure",
                                   "--no-tests=error"])]
        native_steps = [
            Step("configure", [tools.cmake, *cache, "-S", str(native), "-B", str(build),
                               "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                               f"-D{NATIVE_UPSTREAM_VAR}={tree}", *launcher, *lane.cmake_args]),
            Step("build", [tools.cmake, "--build", str(build)]),
            *tests,
        ]
    else:
        native_steps = [Step(name, [], skip=f"the project has no {NATIVE_DIR}/CMakeLists.txt: "
                             "no native build") for name in build_steps]
    steps += native_steps
    reproduce = Step("reproduce", [*me, "reproduce", *up, *excl])
    if not any(p.reproducer for p in stack.patches()):
        reproduce.skip = "no patch names a reproducer (`Reproducer:` trailer)"
    steps.append(reproduce)
    return steps


def run(lane: Lane, steps: list[Step], *, project: Path, work: Path, echo: Echo,
        github: bool = False) -> LaneResult:
    """Run the steps in order, each one's output streamed to ``echo`` and kept in
    ``work/logs/``; stop at the first failure. The result is also written to
    ``work/result.json``."""
    t0 = time.perf_counter()
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    result = LaneResult(lane.name, str(project), str(work), steps)
    failed = False
    for n, step in enumerate(steps, start=1):
        if step.skip:
            step.status = SKIPPED
            echo(f"==> [{lane.name} {n}/{len(steps)}] {step.name}: skipped: {step.skip}\n")
            continue
        if failed:
            continue
        echo((f"::group::{lane.name}: {step.name}\n" if github else "")
             + f"==> [{lane.name} {n}/{len(steps)}] {step.name}: {step.display()}\n")
        log = logs / f"{n:02d}-{step.name}.log"
        step.log = str(log)
        t = time.perf_counter()
        step.returncode, output, step.error = _stream(step.argv, echo)
        step.seconds = round(time.perf_counter() - t, 3)
        fsutil.atomic_write(log, f"$ {step.display()}\n{output}")
        step.status = PASSED if step.returncode == 0 else FAILED
        if github:
            echo("::endgroup::\n")
        if step.status == FAILED:
            failed = True
            why = step.error or f"exit {step.returncode}"
            echo(f"==> [{lane.name}] {step.name} failed ({why}); log: {log}\n")
            if github:
                echo(f"::error title=patchctl ci lane {lane.name}::{step.name} failed "
                     f"({why}): {step.display()}\n")
    result.seconds = time.perf_counter() - t0
    fsutil.atomic_write(work / "result.json",
                        json.dumps(result.to_dict(), indent=2, sort_keys=True) + "\n")
    return result


def _stream(argv: list[str], echo: Echo) -> tuple[int, str, str | None]:
    """Run without a shell, stdout and stderr together, each line echoed as it comes; in a
    process group of its own, ended whole on an interrupt (``procs.stream``)."""
    env = {**os.environ, "CLICOLOR_FORCE": "0"}
    lines: list[str] = []

    def shown(raw: bytes) -> None:
        lines.append(raw.decode("utf-8", "replace"))
        echo(lines[-1])

    try:
        code = procs.stream(argv, shown, env=env)
    except OSError as e:
        message = f"cannot run {argv[0]}: {e.strerror}"
        echo(message + "\n")
        return 127, message + "\n", message
    return code, "".join(lines), None
