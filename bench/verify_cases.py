"""What the verify bench times: each command a whole process, as a user times it.

``cases_for`` gives, per stack, `patchctl verify` (warm and with an empty cache), the
per-patch shell loop, quilt, and git's own floor; ``python_cases`` gives `patchctl
--help` and what it is made of. bench/_common.py's ``measure_round_robin`` runs them
interleaved.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _common import BenchError, Case, git, hermetic_env, run, timed
from verify_inputs import Suite

# (a): what a shell user writes to prove apply and reverse one patch at a time. One
# bash process for the whole loop, like theirs.
BARE_LOOP = r"""
set -eu
export GIT_INDEX_FILE="$1"
repo=$2 pin=$3 patches=$4 series=$5
git -C "$repo" read-tree "$pin"
while read -r p; do
    git -C "$repo" apply --cached "$patches/$p"
done < "$series"
tac "$series" | while read -r p; do
    git -C "$repo" apply --cached -R "$patches/$p"
done
"""

# (b): quilt in a plain tree; QUILTRC=/dev/null keeps ~/.quiltrc and /etc out of it.
QUILT = "quilt push -a --fuzz=0 && quilt pop -a"



def verify_argv(suite: Suite, n: int) -> list[str]:
    """`patchctl verify --upstream REPO`, run in the project dir (cwd).

    Where that form is broken (patchctl f156eac and before hand git patch paths
    relative to the project while git runs in the upstream: `git -C REPO apply
    stack/patches/...`, so every patch "fails"), ``-C <absolute project>`` is added.
    """
    base = [str(suite.patchctl)]
    if not suite.relative_ok:
        base += ["-C", str(suite.project(n).resolve())]
    return [*base, "verify", "--upstream", str(suite.upstream)]


def check_relative_project(suite: Suite, n: int) -> dict[str, object]:
    """Untimed: does plain `patchctl verify` work from inside the project (`-C .`)?"""
    argv = [str(suite.patchctl), "verify", "--upstream", str(suite.upstream), "--json"]
    proc = subprocess.run(argv, cwd=suite.project(n), env=hermetic_env(), capture_output=True,
                          text=True, check=False)
    reason = None
    if proc.returncode != 0:
        try:
            first = json.loads(proc.stdout)["patches"][0]
            reason = (first.get("failure") or {}).get("reason")
        except (json.JSONDecodeError, KeyError, IndexError):
            reason = proc.stderr.strip()[-300:]
    return {"argv": "patchctl verify --upstream REPO (cwd: project)", "exit": proc.returncode,
            "ok": proc.returncode == 0, "first_failure": reason,
            "timed_form": "patchctl verify --upstream REPO (cwd: project)"
            if proc.returncode == 0 else "patchctl -C <absolute project> verify --upstream REPO"}


def check_verify_report(suite: Suite, n: int) -> dict[str, object]:
    """One untimed `verify --json`: the stack must be clean, batched and lock-current."""
    argv = [*verify_argv(suite, n), "--json"]
    proc = subprocess.run(argv, cwd=suite.project(n), env=hermetic_env(), capture_output=True,
                          text=True, check=False)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise BenchError(f"{suite.name}/{n}: `patchctl verify --json` exited {proc.returncode} "
                         f"without JSON: {proc.stderr.strip()[-1500:]}") from e
    grades = sorted({p["grade"] for p in report["patches"]})
    if proc.returncode != 0 or not report.get("ok") or grades != ["exact"]:
        problems = [f"{p['name']}: {p['grade']} {p.get('failure')} {p.get('findings')}"
                    for p in report["patches"] if not p.get("ok") or p["grade"] != "exact"]
        raise BenchError(f"{suite.name}/{n}: the generated stack does not verify clean "
                         f"(exit {proc.returncode}): {problems[:3]} {report.get('findings')}")
    return {"mode": report["mode"], "parts": report.get("parts", 1),
            "git_calls": report["git_calls"],
            "in_process_seconds": report["seconds"], "lock": report["lock"],
            "grades": grades}


def cases_for(suite: Suite, n: int, scratch: Path, quilt: str | None, *,
              loop: bool = True) -> list[Case]:
    env = hermetic_env()
    upstream, pin = suite.upstream, suite.pin
    index = scratch / f"{suite.name}-{n}.index"
    patches = suite.patches_dir(n)
    series = suite.root / f"series-{n}"
    files = [patches / p for p in suite.patch_names[:n]]
    idx_env = hermetic_env(GIT_INDEX_FILE=str(index))

    def verify() -> float:
        return timed(verify_argv(suite, n), cwd=suite.project(n), env=env)

    cold_cache = scratch / f"{suite.name}-{n}.cold-cache"
    cold_env = {**env, "PATCHCTL_CACHE_DIR": str(cold_cache)}

    def verify_cold() -> float:
        return timed(verify_argv(suite, n), cwd=suite.project(n), env=cold_env)

    def empty_cache() -> None:
        shutil.rmtree(cold_cache, ignore_errors=True)

    def bare_loop() -> float:
        return timed(["bash", "-c", BARE_LOOP, "bare-loop", index, upstream, pin, patches,
                      series], env=env)

    floor_argvs = [["git", "-C", str(upstream), *map(str, argv)]
                   for argv in (["read-tree", pin], ["apply", "--cached", *files],
                                ["apply", "--cached", "-R", *reversed(files)], ["write-tree"])]

    def floor() -> float:
        # git's own floor, each step a process of its own as a user runs them; the last
        # (write-tree) is where verify compares the tree with the pin's
        t0 = time.perf_counter()
        procs = [subprocess.run(argv, env=idx_env, capture_output=True, check=False)
                 for argv in floor_argvs]
        elapsed = time.perf_counter() - t0
        for argv, proc in zip(floor_argvs, procs, strict=True):
            if proc.returncode != 0:
                raise BenchError(f"floor: git {argv[3]} failed: {proc.stderr.decode()[-800:]}")
        if procs[-1].stdout.decode().strip() != suite.pin_tree:
            raise BenchError(f"floor: apply and apply -R left tree {procs[-1].stdout.decode()}, "
                             f"not the pin's {suite.pin_tree}")
        return elapsed

    def fresh_index() -> None:
        index.unlink(missing_ok=True)

    # verify and the floor side by side in every round: their ratio is the one that counts
    cases = [Case(f"verify@{n}", verify),
             Case(f"floor@{n}", floor, prepare=fresh_index),
             Case(f"cold@{n}", verify_cold, prepare=empty_cache)]
    if loop:
        cases.append(Case(f"loop@{n}", bare_loop, prepare=fresh_index))
    if quilt:
        tree = scratch / f"{suite.name}-{n}.tree"
        checkout_index = scratch / f"{suite.name}-{n}.checkout-index"
        run(["git", "-C", upstream, "read-tree", pin],
            env=hermetic_env(GIT_INDEX_FILE=str(checkout_index)))
        co_env = hermetic_env(GIT_INDEX_FILE=str(checkout_index))
        only = ["--", *suite.touched_paths(n)] if suite.sparse else ["-a"]
        quilt_env = hermetic_env(QUILTRC=os.devnull, QUILT_PATCHES=str(patches),
                                 QUILT_SERIES=str(series))

        def fresh_tree() -> None:
            # Not timed: a fresh tree at the pin (sparse: only the files the stack touches).
            shutil.rmtree(tree, ignore_errors=True)
            tree.mkdir()
            run(["git", f"--git-dir={upstream}", f"--work-tree={tree}", "checkout-index", "-f",
                 *only], env=co_env)

        def quilt_run() -> float:
            return timed(["bash", "-c", QUILT], cwd=tree, env=quilt_env)

        cases.append(Case(f"quilt@{n}", quilt_run, prepare=fresh_tree))
    return cases


def python_cases(patchctl: Path, scratch: Path, *, no_pyc: bool) -> list[Case]:
    """`patchctl --help`, and what it is made of: interpreter start, then imports."""
    py = _script_python(patchctl)
    env = hermetic_env()
    verify_imports = ("import patchctl.cli, patchctl.commands.verify, patchctl.verify.engine, "
                      "patchctl.verify.render")
    cases = [
        Case("help", lambda: timed([patchctl, "--help"], cwd=scratch, env=env)),
        Case("python -c pass", lambda: timed([py, "-c", "pass"], cwd=scratch, env=env)),
        Case("import patchctl.cli", lambda: timed([py, "-c", "import patchctl.cli"],
                                                  cwd=scratch, env=env)),
        Case("import verify path", lambda: timed([py, "-c", verify_imports], cwd=scratch,
                                                 env=env)),
    ]
    if no_pyc:
        # What this machine's environment gives: the editable package is compiled from
        # source on every run (site-packages keep the .pyc files pip wrote).
        raw = {k: v for k, v in env.items() if k != "PYTHONPYCACHEPREFIX"}
        raw["PYTHONDONTWRITEBYTECODE"] = "1"
        cases.append(Case("help, no .pyc", lambda: timed([patchctl, "--help"], cwd=scratch,
                                                         env=raw)))
    return cases


def source_state() -> dict[str, object]:
    """Which patchctl is measured: the checkout's commit and its uncommitted files."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = git(root, "rev-parse", "HEAD").strip()
        dirty = git(root, "status", "--porcelain", "--", "patchctl", "pyproject.toml")
    except BenchError:
        return {}
    return {"commit": head, "uncommitted": [ln[3:] for ln in dirty.splitlines()]}


def _script_python(patchctl: Path) -> str:
    """The interpreter named on the console script's #! line (the one users get)."""
    try:
        first = patchctl.read_bytes().split(b"\n", 1)[0].decode()
    except OSError:
        return sys.executable
    return first[2:].strip().split()[0] if first.startswith("#!") else sys.executable
