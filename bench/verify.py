"""Benchmark `patchctl verify` against the ways a user would otherwise check a stack.

From one run it prints the median wall time (interleaved repetitions after a
warm-up, every command a whole process, as a user times it) of, for stacks of
20, 200 and 2,000 narrow patches:

  patchctl verify --upstream REPO     the real console script, as a subprocess (and again
                                      with an empty cache: nothing parsed before)
  (a) per-patch loop                  `git apply --cached` per patch on a temp index, then
                                      `git apply --cached -R` per patch, last first (bash)
  (b) quilt                           `quilt push -a --fuzz=0 && quilt pop -a` in a fresh tree
  floor                               git's own: `read-tree`, one batched `apply --cached`
                                      forward, one `-R` back, `write-tree`, a process each

and `patchctl --help`, with the ratios against the targets (see bench/README.md).
The inputs are generated in a temp dir: a synthetic upstream of ~1,200 C files,
and, when PATCHCTL_LLAMA_CPP names a llama.cpp clone, real llama.cpp files at the
pin. Nothing is written to the repository or to that clone.

    python bench/verify.py [--json] [--reps 3] [--warmup 1] [--sizes 20,200,2000] [--keep]

The inputs are bench/verify_inputs.py's, the timed cases bench/verify_cases.py's and
the targets and table bench/verify_report.py's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    BenchError,
    find_patchctl,
    first_line,
    loadavg,
    machine_facts,
    measure_round_robin,
    median,
    production_pin,
)
from verify_cases import (
    cases_for,
    check_relative_project,
    check_verify_report,
    python_cases,
    source_state,
)
from verify_inputs import Suite, llama_suite, log, synthetic_suite
from verify_report import HELP_LIMIT, evaluate, render_table

SCHEMA = "patchctl.bench.verify/2"  # 2: the floor is four processes, write-tree last
SIZES = (20, 200, 2000)
LLAMA_PIN = production_pin().commit


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true", help="print one JSON object, not the table")
    ap.add_argument("--reps", type=int, default=3, help="timed repetitions (default 3)")
    ap.add_argument("--quilt-reps", type=int, default=3,
                    help="timed repetitions for quilt, 20 patches (default 3)")
    ap.add_argument("--quilt-reps-200", type=int, default=1,
                    help="timed repetitions for quilt, 200 and 2,000 patches (default 1; "
                    "~20-40 s each at 200, ten times that at 2,000)")
    ap.add_argument("--loop-reps-2000", type=int, default=3,
                    help="timed repetitions for the per-patch loop at 2,000 patches (default 3)")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)),
                    help="stack sizes, a subset of 20,200,2000 (default: all)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed warm-up rounds (default 1)")
    ap.add_argument("--patchctl", help="the console script (default: next to this python)")
    ap.add_argument("--no-quilt", action="store_true", help="skip the quilt baseline")
    ap.add_argument("--no-loop", action="store_true",
                    help="skip the per-patch loop (its targets are n/a)")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir and print its path")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target fails")
    args = ap.parse_args(argv)
    if min(args.reps, args.quilt_reps, args.quilt_reps_200, args.loop_reps_2000) < 1 or \
            args.warmup < 0:
        ap.error("repetitions must be >= 1 and --warmup >= 0")
    quilt_reps, quilt_reps_200 = args.quilt_reps, args.quilt_reps_200
    try:
        sizes = tuple(sorted({int(x) for x in args.sizes.split(",")}))
    except ValueError:
        ap.error("--sizes: comma-separated numbers")
    if not sizes or not set(sizes) <= set(SIZES):
        ap.error(f"--sizes: a subset of {','.join(map(str, SIZES))}")

    started = time.perf_counter()
    patchctl = find_patchctl(args.patchctl)
    quilt = None if args.no_quilt else shutil.which("quilt")
    if quilt is None and not args.no_quilt:
        log("quilt is not installed (apt-get install -y quilt); its targets are n/a")
    machine = machine_facts()
    machine["loadavg_start"] = loadavg()
    tools = {
        "git": first_line(["git", "--version"]),
        "quilt": first_line(["quilt", "--version"]),
        "patch": first_line(["patch", "--version"]),
        "bash": first_line(["bash", "--version"]),
        "patchctl": first_line([str(patchctl), "--version"]),
        "patchctl_path": str(patchctl),
    }
    llama_src = os.environ.get("PATCHCTL_LLAMA_CPP")
    llama_pin = os.environ.get("PATCHCTL_LLAMA_PIN", LLAMA_PIN)

    tmp = Path(tempfile.mkdtemp(prefix="patchctl-bench-verify-"))
    # Users' Python caches bytecode; this machine may set PYTHONDONTWRITEBYTECODE=1,
    # which makes every run compile patchctl from source. Measured runs cache it under
    # the temp dir instead (nothing is written into the repository).
    inherited_no_pyc = os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    # patchctl's cache too (parsed patches, the partition plan): another user of the
    # shared cache dir can prune it, which would make a warm run cold
    os.environ["PATCHCTL_CACHE_DIR"] = str(tmp / "cache")
    tools["patchctl_source"] = source_state()
    try:
        suites: list[Suite] = []
        log(f"generating inputs in {tmp}")
        suites.append(synthetic_suite(tmp / "synthetic", patchctl, sizes))
        if llama_src:
            log(f"generating llama.cpp patches from {llama_src} @ {llama_pin[:12]}")
            (tmp / "llama").mkdir()
            suites.append(llama_suite(tmp / "llama", Path(llama_src), llama_pin, patchctl,
                                      sizes))
        scratch = tmp / "scratch"
        scratch.mkdir()

        result: dict = {"schema": SCHEMA, "machine": machine, "tools": tools,
                        "params": {"reps": args.reps, "quilt_reps": quilt_reps if quilt else 0,
                                   "quilt_reps_200": quilt_reps_200 if quilt else 0,
                                   "bytecode": "cached under PYTHONPYCACHEPREFIX=<tmp>/pycache"
                                   + (" (PYTHONDONTWRITEBYTECODE=1 lifted)"
                                      if inherited_no_pyc else ""),
                                   "loop_reps_2000": 0 if args.no_loop else args.loop_reps_2000,
                                   "warmup": args.warmup, "sizes": list(sizes)},
                        "suites": {}}
        help_cases = python_cases(patchctl, scratch, no_pyc=bool(inherited_no_pyc))
        help_names = {c.name for c in help_cases}
        help_samples: dict[str, list[float]] = {}
        for i, suite in enumerate(suites):
            log(f"measuring {suite.name}" + ("" if i else " and patchctl --help"))
            relative = check_relative_project(suite, suite.sizes[0])
            suite.relative_ok = bool(relative["ok"])
            reports = {str(n): check_verify_report(suite, n) for n in suite.sizes}
            cases = [c for n in suite.sizes for c in cases_for(suite, n, scratch, quilt,
                                                             loop=not args.no_loop)]
            for c in cases:
                # quilt costs ~0.1 s a patch: a few runs at 20 patches, fewer at 200
                # and 2,000 (it averages over the patches itself), and no warm-up
                # there: the 20-patch runs already warmed quilt's scripts and the page
                # cache. The per-patch loop at 2,000 is 4,000 git processes a run.
                if c.name == "quilt@20":
                    c.reps = quilt_reps
                elif c.name in ("quilt@200", "quilt@2000"):
                    c.reps, c.warmup = quilt_reps_200, 0
                elif c.name == "loop@2000":
                    c.reps, c.warmup = args.loop_reps_2000, 0
            if i == 0:
                # `--help` interleaved with the first suite's runs: the same load.
                cases += help_cases
            samples = measure_round_robin(cases, reps=args.reps, warmup=args.warmup, log=log)
            help_samples.update({k: samples.pop(k) for k in help_names if k in samples})
            # Again, warm (bytecode cached), for the self-reported in-process time.
            reports = {str(n): check_verify_report(suite, n) for n in suite.sizes}
            medians = {k: median(v) for k, v in samples.items()}
            result["suites"][suite.name] = {
                "pin": suite.pin, "sizes": list(suite.sizes), "facts": suite.facts,
                "verify_report": reports,
                "relative_project_check": relative,
                "medians": {k: round(v, 5) for k, v in medians.items()},
                "samples": {k: [round(x, 5) for x in v] for k, v in samples.items()},
                "targets": evaluate(medians),
            }
        help_medians = {k: median(v) for k, v in help_samples.items()}
        result["help"] = {
            "medians": {k: round(v, 5) for k, v in help_medians.items()},
            "samples": {k: [round(x, 5) for x in v] for k, v in help_samples.items()},
            "target": {"what": "patchctl --help wall seconds",
                       "value": round(help_medians["help"], 4), "limit": HELP_LIMIT,
                       "pass": help_medians["help"] <= HELP_LIMIT},
        }
    finally:
        if args.keep:
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    machine["loadavg_end"] = loadavg()
    verdicts = {f"{name}:{k}": t["pass"] for name, s in result["suites"].items()
                for k, t in s["targets"].items()}
    verdicts["help"] = result["help"]["target"]["pass"]
    result["summary"] = {
        "passed": sum(v is True for v in verdicts.values()),
        "failed": sum(v is False for v in verdicts.values()),
        "not_applicable": sum(v is None for v in verdicts.values()),
        "failed_targets": [k for k, v in verdicts.items() if v is False],
    }
    result["ok"] = not result["summary"]["failed_targets"]
    result["seconds"] = round(time.perf_counter() - started, 2)
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        print(render_table(result), end="")
    return 1 if args.check and not result["ok"] else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        print(f"bench/verify.py: error: {e}", file=sys.stderr)
        sys.exit(3)
