"""``patchctl reproduce``: each patch's reproducer fails without it and passes with it.

For patch i the reproducer (reproducers/<concern>/, a CMake project) is built
and tested against pin + patches[1..i] ("after") and, as the negative control,
against pin + patches[1..i-1] ("before"); passing before makes it ``vacuous``.

Cost: ONE upstream source dir in the cache, moved between prefixes in place
(only files that differ are rewritten; the rest keep their mtimes), and ONE
build tree for every reproducer through a generated shim project, so the
upstream library is compiled once and each later step recompiles only what a
patch touched. A re-run that finds the source at the last prefix walks back.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import re
import shlex
import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from patchctl import fsutil, gitrepo, procs
from patchctl.errors import EnvironmentFailure, InputError, StackError
from patchctl.globs import check_globs, glob_match
from patchctl.model import schemas
from patchctl.model.fingerprint import fingerprint
from patchctl.model.patchfile import Patch
from patchctl.model.stack import Stack, select_names
from patchctl.reproducers.toolchain import (
    Progress,
    Toolchain,
    find_toolchain,
    run_tool,
)
from patchctl.toolout import reason

BEFORE, AFTER = "before", "after"
# Where a step stopped: it passed, or the stage that failed.
PASSED, CONFIGURE, BUILD, TEST, NOT_RUN = "passed", "configure", "build", "test", "not-run"
PROVEN, VACUOUS, BROKEN_AFTER, BUILD_ERROR = (
    "fails-before/passes-after", "vacuous", "broken-after", "build-error")
TEST_TIMEOUT_S = 300

_COMPILE = re.compile(r"^\[\d+/\d+\] Building \S+ object (\S+)", re.MULTILINE)
_UPSTREAM_OBJECT = re.compile(r"(^|/)upstream/")
_FAILED = re.compile(r"^FAILED: (?:\[code=\d+\] )?(\S+)", re.MULTILINE)
_COMPILER_SET = re.compile(r'^set\(CMAKE_(C|CXX)_(COMPILER(?:_ID|_VERSION)?) "([^"]*)"\)',
                           re.MULTILINE)
# Configure failures that say nothing about the patch: the machine lacks a compiler.
_NO_COMPILER = re.compile(
    r"No CMAKE_\w+_COMPILER could be found|CMAKE_\w+_COMPILER not set"
    r"|is not able to compile a simple test program"
    r"|Could not find compiler set in environment variable"
    r"|unable to find a build program corresponding to")
_SHIM = """\
# Written by `patchctl reproduce`; do not edit. One build tree for every reproducer:
# only PATCHCTL_REPRODUCER changes, so reproducer/upstream is compiled once and kept.
cmake_minimum_required(VERSION 3.21)
project(patchctl_reproduce NONE)
if(NOT EXISTS "${PATCHCTL_REPRODUCER}/CMakeLists.txt")
  message(FATAL_ERROR "PATCHCTL_REPRODUCER must name a reproducer, got '${PATCHCTL_REPRODUCER}'")
endif()
enable_testing()
add_subdirectory("${PATCHCTL_REPRODUCER}" reproducer)
"""

@dataclass
class Step:
    """One build-and-test of a reproducer against pin + the first ``prefix`` patches."""

    role: str  # before | after
    prefix: int
    tree: str  # git tree id of pin + prefix
    result: str = NOT_RUN  # passed, or the stage that failed
    order: int = 0  # position in the run (a re-run walks backwards)
    cold: bool = False  # the build tree was new: everything was compiled
    seconds: dict[str, float] = field(default_factory=dict)
    compiled: int = 0  # compile steps ninja ran
    upstream_compiled: int = 0  # ... of them in the upstream library
    failed_target: str | None = None
    reason: str | None = None  # why configure or the build failed, from its output
    ctest_output: str = ""
    log: str | None = None
    commands: list[list[str]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.result == PASSED

    @property
    def verdict(self) -> str:
        """In words: passes, fails at build, not run."""
        return "passes" if self.passed else (
            "not run" if self.result == NOT_RUN else f"fails at {self.result}")


@dataclass
class PatchResult:
    index: int  # 1-based position in the series
    name: str
    concern: str | None
    reproducer: str
    before: Step
    after: Step

    @property
    def outcome(self) -> str:
        if self.after.result in (CONFIGURE, BUILD):
            return BUILD_ERROR
        if self.after.result == TEST:
            return BROKEN_AFTER
        if self.before.passed:
            return VACUOUS
        if self.after.passed and self.before.result != NOT_RUN:
            return PROVEN
        return NOT_RUN

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "name": self.name, "concern": self.concern,
                "reproducer": self.reproducer, "outcome": self.outcome,
                "ok": self.outcome == PROVEN,
                "before": asdict(self.before), "after": asdict(self.after)}


@dataclass
class ReproduceReport:
    name: str
    pin: str
    fingerprint: str
    upstream: str
    cache_dir: str
    shared_build: bool
    started: str
    toolchain: Toolchain | None = None
    compilers: dict[str, str] = field(default_factory=dict)
    patches: list[PatchResult] = field(default_factory=list)
    seconds: float = 0.0
    stopped_early: bool = False
    evidence: str | None = None  # the (first) record written
    records: list[str] = field(default_factory=list)  # every record written

    @property
    def ok(self) -> bool:
        return all(p.outcome == PROVEN for p in self.patches)

    def steps(self) -> list[Step]:
        return [s for p in self.patches for s in (p.before, p.after) if s.result != NOT_RUN]

    def to_dict(self) -> dict[str, Any]:
        cold = sum(sum(s.seconds.values()) for s in self.steps() if s.cold)
        return {
            "schema": schemas.REPRODUCE, "name": self.name, "pin": self.pin,
            "fingerprint": self.fingerprint, "upstream": self.upstream,
            "cache_dir": self.cache_dir, "shared_build": self.shared_build,
            "started": self.started, "ok": self.ok, "stopped_early": self.stopped_early,
            "toolchain": asdict(self.toolchain) if self.toolchain else None,
            "compilers": self.compilers, "patches": [p.to_dict() for p in self.patches],
            "seconds": {"total": round(self.seconds, 3), "cold_steps": round(cold, 3),
                        "incremental_steps": round(sum(sum(s.seconds.values())
                                                       for s in self.steps()) - cold, 3)},
            "evidence": self.evidence, "records": self.records,
        }


def reproduce(stack: Stack, upstream: Path, *, project: Path, names: Sequence[str] = (),
              cache_dir: Path | None = None, jobs: int | None = None,
              exclude: Sequence[str] = (), isolate: bool = False, keep: bool = False,
              progress: Progress | None = None) -> ReproduceReport:
    """Run the before/after pair of every selected patch's reproducer.

    ``isolate`` gives each reproducer its own build tree (no shared CMake
    cache, one cold upstream build each). ``keep`` stops at the first
    unexpected step and leaves the source and build trees as it left them.
    """
    check_globs(exclude, "--exclude")
    t0 = time.perf_counter()
    say: Progress = progress or (lambda _msg: None)
    pin = stack.pin()
    patches = stack.patches()
    chosen = select(patches, names)
    dirs = {i: reproducer_dir(project, patches[i]) for i in chosen}
    cache = (cache_dir or project / ".patchctl" / "reproduce").absolute()
    report = ReproduceReport(
        name=pin.name, pin=pin.commit, fingerprint=fingerprint(pin.commit, patches),
        upstream=str(upstream), cache_dir=str(cache), shared_build=not isolate,
        started=dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat())
    if not chosen:
        return report
    report.toolchain = tools = find_toolchain()
    if not gitrepo.resolve_commit(upstream, pin.commit):
        raise InputError(f"pin {pin.commit} is not in upstream {upstream}")

    _prepare_cache(cache)
    with fsutil.exclusive_lock(cache / "lock", f"reproduce cache {cache}"):
        say("computing the prefix trees")
        objects = cache / "objects"
        trees = _prefix_trees(upstream, objects, pin.commit, patches, max(chosen) + 1)
        checkouts = _checkout_trees(upstream, objects, trees,
                                    {i + d for i in chosen for d in (0, 1)}, exclude)
        for i in chosen:
            p = patches[i]
            report.patches.append(PatchResult(
                index=i + 1, name=p.name, concern=p.concern, reproducer=str(p.reproducer),
                before=Step(BEFORE, i, trees[i]), after=Step(AFTER, i + 1, trees[i + 1])))
        plan = [(r, s) for r in report.patches for s in (r.before, r.after)]
        src, src_index = cache / "src", cache / "src.index"
        current = gitrepo.indexed_tree(upstream, objects, src, src_index)
        # A re-run finds the source at the last prefix: walk back from there.
        if current == checkouts[plan[-1][1].prefix] != checkouts[plan[0][1].prefix]:
            plan.reverse()
        for n, (r, step) in enumerate(plan, start=1):
            label = f"[{n}/{len(plan)}] {r.name} {step.role} (pin + {step.prefix})"
            step.order = n
            # Also when already there: that puts back files edited by hand.
            say(f"{label}: preparing the source tree")
            m0 = time.perf_counter()
            gitrepo.switch_tree_in_place(upstream, objects, src, src_index,
                                         checkouts[step.prefix])
            moved = time.perf_counter() - m0
            build = cache / "build" / (_slug(r.reproducer) if isolate else "shared")
            _run_step(step, reproducer=dirs[r.index - 1], build=build, src=src, cache=cache,
                      tools=tools, jobs=jobs, shared=not isolate,
                      log=cache / "logs" / f"{Path(r.name).stem}.{step.role}.log",
                      say=functools.partial(_say_as, say, label))
            step.seconds = {"switch": round(moved, 3), **step.seconds}
            say(f"{label}: {step.verdict} in {sum(step.seconds.values()):.1f} s")
            if keep and step.passed != (step.role == AFTER):
                report.stopped_early = n < len(plan)
                break
        report.compilers = _compilers(cache / "build")
    report.seconds = time.perf_counter() - t0
    return report


# -- selection and input checks ---------------------------------------------------------


def select(patches: Sequence[Patch], names: Sequence[str]) -> list[int]:
    """0-based indexes of the patches to reproduce, in series order.

    No names: every patch with a ``Reproducer:``. A name is what
    ``stack.resolve_name`` accepts (file name, its number, @N, unique part of a name)
    or, failing that, a concern: every patch of it that has a reproducer.
    """
    if not names:
        return [i for i, p in enumerate(patches) if p.reproducer]
    chosen = select_names([p.name for p in patches], names,
                          concerns=[p.concern if p.reproducer else None for p in patches])
    for i in chosen:
        if not patches[i].reproducer:
            raise InputError(f"{patches[i].name} has no `Reproducer:` trailer; add one "
                             "naming its project under reproducers/")
    return chosen


def reproducer_dir(project: Path, patch: Patch) -> Path:
    rel = str(patch.reproducer).strip().rstrip("/")
    path = (project / rel).absolute()
    root = (project / "reproducers").absolute()
    if not rel.startswith("reproducers/") or not path.resolve().is_relative_to(root.resolve()):
        raise InputError(f"{patch.name}: `Reproducer: {rel}` must be a path under reproducers/")
    if not (path / "CMakeLists.txt").is_file():
        what = "has no CMakeLists.txt" if path.is_dir() else "does not exist"
        raise InputError(f"{patch.name}: `Reproducer: {rel}` {what} in {project}; create the "
                         "CMake project (see reproducers/README.md) or fix the trailer")
    return path


# -- the source tree --------------------------------------------------------------------


def _prefix_trees(upstream: Path, objects: Path, pin: str, patches: Sequence[Patch],
                  upto: int) -> list[str]:
    """Tree ids of pin + patches[:k] for k = 0..upto, index-only (as verify does); the
    new objects are kept in the cache's ``objects`` to be checked out later."""
    with gitrepo.store_index(upstream, objects) as index:
        index.read_tree(pin)
        trees = [index.write_tree()]
        for p in patches[:upto]:
            failed = index.apply_series([gitrepo.SeriesItem(p.path.absolute(), p.strip)]).failed
            if failed is not None:
                assert failed.error is not None
                raise StackError(f"{p.name} does not apply on pin + the patches before it "
                                 f"({failed.error.message}); run `patchctl verify`")
            trees.append(index.write_tree())
    return trees


def _checkout_trees(upstream: Path, objects: Path, trees: list[str], wanted: set[int],
                    exclude: Sequence[str]) -> dict[int, str]:
    """The trees actually written for each wanted prefix: without ``exclude`` matches
    (files a mirror lacks, such as llama.cpp's large models/*.gguf)."""
    if not exclude:
        return {k: trees[k] for k in wanted}
    out = {}
    for k in sorted(wanted):
        with gitrepo.store_index(upstream, objects) as index:
            index.read_tree(trees[k])
            gitrepo.remove_from_index(index, [p for p in gitrepo.index_paths(index)
                                              if any(glob_match(p, g) for g in exclude)])
            out[k] = index.write_tree()
    return out


def _prepare_cache(cache: Path) -> None:
    cache.mkdir(parents=True, exist_ok=True)
    # The cache may sit inside a git work tree (<project>/.patchctl): keep it out of git.
    if not (cache / ".gitignore").exists():
        fsutil.atomic_write(cache / ".gitignore", "*\n")
    shim = cache / "shim" / "CMakeLists.txt"
    # Rewritten only when different: a new mtime would make ninja re-run cmake.
    if not shim.is_file() or shim.read_text(encoding="utf-8") != _SHIM:
        fsutil.atomic_write(shim, _SHIM)


# -- one step ---------------------------------------------------------------------------


def _run_step(step: Step, *, reproducer: Path, build: Path, src: Path, cache: Path,
              tools: Toolchain, jobs: int | None, shared: bool, log: Path,
              say: Progress) -> None:
    source = cache / "shim" if shared else reproducer
    _reset_if_foreign(build, source)
    step.cold = not (build / "build.ninja").is_file()
    configure = [tools.cmake, "-S", str(source), "-B", str(build), "-G", "Ninja",
                 f"-DCMAKE_MAKE_PROGRAM={tools.ninja}", f"-DUPSTREAM_SOURCE_DIR={src}"]
    if shared:
        configure.append(f"-DPATCHCTL_REPRODUCER={reproducer}")
    if tools.ccache:
        configure += [f"-DCMAKE_{lang}_COMPILER_LAUNCHER={tools.ccache}" for lang in ("C", "CXX")]
    ninja = [tools.ninja, "-C", str(build), *([f"-j{jobs}"] if jobs else [])]
    # -V: a passing test's output is evidence too (and shows why a reproducer is vacuous).
    ctest = [tools.ctest, "--test-dir", str(build), "-V", "--no-tests=error",
             "--timeout", str(TEST_TIMEOUT_S)]
    transcript: list[str] = []

    def run(stage: str, argv: list[str]) -> tuple[int, str]:
        say({CONFIGURE: "configuring", BUILD: "building", TEST: "running the test"}[stage])
        code, out, secs = run_tool(argv, say if stage == BUILD else None)
        step.commands.append(argv)
        step.seconds[stage] = round(step.seconds.get(stage, 0.0) + secs, 3)
        transcript.append(f"$ {shlex.join(argv)}\n{out}[exit {code}, {secs:.2f} s]\n")
        return code, out

    try:
        # Always configure: a reproducer may check the source at configure time,
        # and a re-configure that changes nothing leaves build.ninja untouched.
        code, out = run(CONFIGURE, configure)
        if code != 0:
            if _NO_COMPILER.search(out):
                raise EnvironmentFailure(
                    f"cmake found no working compiler or build tool (see {log}); install a "
                    "C/C++ compiler (e.g. `apt-get install build-essential`) or set CC/CXX")
            step.result = CONFIGURE
            step.reason = reason(out)
            return
        # The reproducer's own objects first: a negative control that does not
        # compile (a missing API, the usual case) then fails in seconds, not
        # after a whole upstream build that the next step would redo in part.
        own = _own_objects(tools.ninja, build)
        for argv in ([[*ninja, *own]] if own else []) + [ninja]:
            code, out = run(BUILD, argv)
            objects = _COMPILE.findall(out)
            step.compiled += len(objects)
            step.upstream_compiled += sum(1 for o in objects if _UPSTREAM_OBJECT.search(o))
            if code != 0:
                failed = _FAILED.search(out)
                step.failed_target = failed.group(1) if failed else None
                step.result = BUILD
                step.reason = reason(out)
                return
        code, step.ctest_output = run(TEST, ctest)
        step.result = PASSED if code == 0 else TEST
    finally:
        fsutil.atomic_write(log, "".join(transcript))
        step.log = str(log)


def _own_objects(ninja: str, build: Path) -> list[str]:
    """The reproducer's object files: compile edges outside the upstream binary dir."""
    proc = procs.capture([ninja, "-C", str(build), "-t", "targets", "all"])
    return [path for path, _, rule in (ln.partition(": ") for ln in proc.stdout.splitlines())
            if "_COMPILER__" in rule and not _UPSTREAM_OBJECT.search(path)]


def _say_as(say: Progress, label: str, msg: str) -> None:
    say(f"{label}: {msg}")


def _reset_if_foreign(build: Path, source: Path) -> None:
    """Drop a build tree CMake would refuse (moved cache, other source or generator)."""
    cache_file = build / "CMakeCache.txt"
    if not cache_file.is_file():
        return
    text = cache_file.read_text(encoding="utf-8", errors="replace")
    want = {"CMAKE_HOME_DIRECTORY": str(source), "CMAKE_CACHEFILE_DIR": str(build),
            "CMAKE_GENERATOR": "Ninja"}
    for key, value in want.items():
        m = re.search(rf"^{key}:\w+=(.*)$", text, re.MULTILINE)
        if not m or m.group(1) not in {value, str(Path(value).resolve())}:
            shutil.rmtree(build)
            return


def _compilers(build_root: Path) -> dict[str, str]:
    """``{"C": "GNU 12.2.0 /usr/bin/cc", ...}`` as CMake detected them."""
    out: dict[str, str] = {}
    for f in sorted(build_root.glob("*/CMakeFiles/*/CMake*Compiler.cmake")):
        text = f.read_text(encoding="utf-8", errors="replace")
        found = {(lang, key): value for lang, key, value in _COMPILER_SET.findall(text)}
        for lang in ("C", "CXX"):
            if found.get((lang, "COMPILER")) and lang not in out:
                out[lang] = " ".join(filter(None, (found.get((lang, k)) for k in (
                    "COMPILER_ID", "COMPILER_VERSION", "COMPILER"))))
    return out


def _slug(path: str) -> str:
    tail = re.sub(r"[^A-Za-z0-9._-]+", "-", path.strip("/").removeprefix("reproducers/"))
    return f"{tail}-{hashlib.sha256(path.encode()).hexdigest()[:8]}"


# -- evidence ---------------------------------------------------------------------------


def write_evidence(report: ReproduceReport, evidence_dir: Path, argv: list[str], *,
                   per_patch: bool = False) -> list[Path]:
    """evidence/reproduce-<name>.json (+ .log with every step's transcript), from this run.

    ``per_patch`` (a run of named patches): one record per patch instead,
    reproduce-<name>--<patch>.json, so the whole stack's record and other
    patches' records keep their own results."""
    stem = "reproduce-" + _safe(report.name)
    if per_patch:
        paths = [_write_record(replace(report, patches=[p]), evidence_dir, argv,
                               f"{stem}--{_safe(p.name.removesuffix('.patch'))}")
                 for p in report.patches]
    else:
        paths = [_write_record(report, evidence_dir, argv, stem)]
    report.records = [str(p) for p in paths]
    report.evidence = report.records[0] if paths else None
    return paths


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name)


def _write_record(report: ReproduceReport, evidence_dir: Path, argv: list[str],
                  name: str) -> Path:
    from patchctl.records.evidence import record_steps

    parts = [f"==== {r.name} {s.role} (pin + {s.prefix}): {s.result}\n"
             + Path(s.log).read_text(encoding="utf-8", errors="replace")
             for r in report.patches for s in (r.before, r.after)
             if s.log and Path(s.log).is_file()]
    return record_steps(
        name, evidence_dir=evidence_dir,
        argv=argv, started=report.started, seconds=report.seconds, ok=report.ok,
        stack={"name": report.name, "pin": report.pin, "fingerprint": report.fingerprint},
        log="\n".join(parts).encode("utf-8"), extra={"reproduce": report.to_dict()})
