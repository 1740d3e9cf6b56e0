"""Benchmark `patchctl reproduce`: every patch's before/after pair vs one cold upstream build.

For each case it measures, in fresh temp dirs:

  baseline        one cold build of the upstream library at the pin
                  (`cmake -G Ninja` + `cmake --build`, same options as the reproducers)
  reproduce cold  `patchctl reproduce` with an empty cache: 2 steps per patch
  reproduce again the same command once more (source and build trees kept)
  isolated cold   `--isolate`: one build tree per reproducer (what sharing saves)

and prints the ratio reproduce-cold / baseline against the target (<= 1.5).

Cases:
  tiny       the synthetic upstream of tests/builders.py (2 C files) and the 3-patch
             proving stack of tests/test_reproducers_reproduce.py (square, cube, clamp). Fixed
             per-step costs (cmake, ninja, ctest processes) dominate a 0.5 s build.
  tiny+gen   the same plus N generated translation units in a `tiny_gen` library
             that tiny links (--gen, default 150): a build where compiling dominates,
             as it does for llama.cpp.
  llama.cpp  when PATCHCTL_LLAMA_CPP (or --llama) names a llama.cpp clone at the
             pin, the project's own stack/ and reproducers/ (copied to a temp
             project); skipped when no patch in stack/series names a reproducer.

ccache is disabled (CCACHE_DISABLE=1) so cold means cold. Nothing is written to
the repository or to the llama.cpp clone.

    python bench/reproduce.py [--json] [--reps 3] [--gen 150] [--cases tiny,gen,llama]
                              [--llama PATH] [--project DIR] [--jobs N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import hermetic_env, machine_facts  # noqa: E402

from tests.builders import commit_all, make_project, make_upstream, write  # noqa: E402
from tests.test_reproducers_reproduce import FIXTURES, make_patch_texts  # noqa: E402

SCHEMA = "patchctl.bench.reproduce/1"
TARGET = 1.5
STACK = ("square", "cube", "clamp")
# The options range-loading's reproducer gives llama.cpp; the baseline builds the same.
LLAMA_OPTIONS = ["-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_BUILD_COMMON=OFF",
                 "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
                 "-DLLAMA_BUILD_TOOLS=OFF", "-DLLAMA_BUILD_SERVER=OFF",
                 "-DLLAMA_BUILD_WEBUI=OFF", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF",
                 "-DGGML_NATIVE=OFF", "-DBUILD_SHARED_LIBS=OFF"]
# Files the llama.cpp bare mirror lacks (>= 4 MiB); harmless for a full clone.
LLAMA_EXCLUDE = ["models/*.gguf", "tools/server/public/*"]


def env() -> dict[str, str]:
    return hermetic_env(CCACHE_DISABLE="1")


def timed(argv: list[str], *, log: Path) -> float:
    t0 = time.perf_counter()
    with log.open("ab") as f:
        proc = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, env=env(), check=False)
    if proc.returncode != 0:
        raise SystemExit(f"bench: `{' '.join(argv)}` exited {proc.returncode}; see {log}")
    return time.perf_counter() - t0


def baseline(src: Path, build: Path, options: list[str], log: Path) -> float:
    return (timed(["cmake", "-S", str(src), "-B", str(build), "-G", "Ninja", *options], log=log)
            + timed(["cmake", "--build", str(build)], log=log))


def reproduce(project: Path, cache: Path, extra: list[str], log: Path) -> tuple[float, dict]:
    argv = [sys.executable, "-m", "patchctl", "-C", str(project), "reproduce", "--json",
            "--cache-dir", str(cache), *extra]
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env(), check=False)
    seconds = time.perf_counter() - t0
    with log.open("a") as f:
        f.write(f"$ {' '.join(argv)}\n{proc.stdout}{proc.stderr}[exit {proc.returncode}]\n")
    if proc.returncode != 0:
        raise SystemExit(f"bench: reproduce exited {proc.returncode}: {proc.stderr.strip()}; "
                         f"see {log}")
    return seconds, json.loads(proc.stdout)


def steps(report: dict) -> list[dict]:
    out = []
    for p in report["patches"]:
        for role in ("before", "after"):
            s = p[role]
            out.append({"order": s["order"], "patch": p["name"], "role": role,
                        "prefix": s["prefix"],
                        "result": s["result"], "cold": s["cold"],
                        "seconds": round(sum(s["seconds"].values()), 3),
                        "configure_s": s["seconds"].get("configure"),
                        "compiled": s["compiled"], "upstream_compiled": s["upstream_compiled"]})
    return sorted(out, key=lambda s: s["order"])


# -- cases ---------------------------------------------------------------------------------

# (project, checkout of the pin for the baseline, baseline cmake options, reproduce options)
Case = tuple[Path, Path, list[str], list[str]]


def gen_sources(n: int) -> dict[str, str]:
    """``n`` translation units of plain integer code, a private header, their CMakeLists."""
    files = {"src/gen/gen.h": "#ifndef TINY_GEN_H\n#define TINY_GEN_H\nint tiny_gen_sum(int x);\n"
             "#endif\n"}
    for i in range(n):
        funcs = []
        for k in range(24):
            funcs.append(
                f"static int g{i}_{k}(int x)\n{{\n    int acc = {k + 1};\n"
                f"    for (int j = 0; j < (x & 15); ++j) {{\n"
                f"        switch ((acc + j) % 4) {{\n"
                f"        case 0: acc = acc * {k + 3} + j; break;\n"
                f"        case 1: acc ^= (j << {k % 7}) + {i}; break;\n"
                f"        case 2: acc -= x / ({k} + 1 + j); break;\n"
                f"        default: acc += (acc >> 3) - {i % 13}; break;\n"
                f"        }}\n    }}\n    return acc;\n}}\n")
        calls = " + ".join(f"g{i}_{k}(x)" for k in range(24))
        entry = f"\nint tiny_gen_{i}(int x)\n{{\n    return {calls};\n}}\n"
        files[f"src/gen/g{i:04d}.c"] = '#include "gen.h"\n\n' + "\n".join(funcs) + entry
    files["src/gen/CMakeLists.txt"] = ("file(GLOB TINY_GEN_SOURCES CONFIGURE_DEPENDS "
                                       "${CMAKE_CURRENT_SOURCE_DIR}/g*.c)\n"
                                       "add_library(tiny_gen STATIC ${TINY_GEN_SOURCES})\n")
    return files


def tiny_case(work: Path, gen: int) -> Case:
    old = os.environ.copy()
    os.environ.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    try:
        up = make_upstream(work / "upstream")
        pin = up.commits["base"]
        if gen:
            write(up.path, gen_sources(gen))
            cm = up.path / "CMakeLists.txt"
            cm.write_text(cm.read_text().replace(
                "project(tiny C)\n", "project(tiny C)\nadd_subdirectory(src/gen)\n"
                "link_libraries(tiny_gen)\n"))
            pin = commit_all(up.path, f"gen : {gen} generated translation units")
        texts = make_patch_texts(up, pin, work / "scratch")
    finally:
        os.environ.clear()
        os.environ.update(old)
    patches = [(f"{i:04d}-{key}.patch", texts[key]) for i, key in enumerate(STACK, start=1)]
    project = make_project(work / "project", up, patches, pin=pin)
    shutil.copytree(FIXTURES, project / "reproducers")
    checkout = work / "pin-src"
    subprocess.run(["git", "clone", "-q", str(up.path), str(checkout)], env=env(), check=True)
    subprocess.run(["git", "-C", str(checkout), "checkout", "-q", pin], env=env(), check=True)
    return project, checkout, [], []


def llama_case(work: Path, clone: Path, source: Path) -> Case | None:
    """``source``'s stack/ and reproducers/ in a temp project; the pin exported from
    ``clone`` (whatever its HEAD) for the baseline."""
    from patchctl.model.stack import find_stack

    stack = find_stack(source)
    if not any(p.reproducer for p in stack.patches()):
        return None
    project = work / "project"
    shutil.copytree(source / "stack", project / "stack")
    shutil.copytree(source / "reproducers", project / "reproducers")
    # The pristine pin for the baseline, via an empty stack (the clone's HEAD may differ).
    pristine = work / "pin-project"
    (pristine / "stack").mkdir(parents=True)
    shutil.copy(source / "stack" / "upstream.toml", pristine / "stack")
    (pristine / "stack" / "series").write_text("")
    checkout = work / "pin-src"
    subprocess.run([sys.executable, "-m", "patchctl", "-C", str(pristine), "apply", "--into",
                    str(checkout), "--upstream", str(clone),
                    *[f"--exclude={g}" for g in LLAMA_EXCLUDE]], env=env(), check=True,
                   capture_output=True)
    extra = ["--upstream", str(clone)] + [f"--exclude={g}" for g in LLAMA_EXCLUDE]
    return project, checkout, LLAMA_OPTIONS, extra


def run_case(name: str, make, reps: int, jobs: int | None, isolated: bool,
             keep_dir: Path) -> dict | None:
    rows = []
    for rep in range(reps):
        work = Path(tempfile.mkdtemp(prefix=f"bench-reproduce-{name}-", dir=keep_dir))
        made = make(work)
        if made is None:
            return None
        project, checkout, options, extra = made
        extra = extra + ([f"--jobs={jobs}"] if jobs else [])
        log = work / "bench.log"
        base = baseline(checkout, work / "baseline-build", options, log)
        cold_s, cold = reproduce(project, work / "cache", extra, log)
        again_s, again = reproduce(project, work / "cache", extra, log)
        row = {"baseline_s": round(base, 3), "cold_s": round(cold_s, 3),
               "again_s": round(again_s, 3), "cold_steps": steps(cold),
               "again_steps": steps(again),
               "outcomes": [p["outcome"] for p in cold["patches"]]}
        if isolated:
            iso_s, _ = reproduce(project, work / "cache-isolated", [*extra, "--isolate"], log)
            row["isolated_s"] = round(iso_s, 3)
        rows.append(row)
        print(f"  {name} rep {rep + 1}: baseline {base:.2f} s, reproduce cold {cold_s:.2f} s, "
              f"again {again_s:.2f} s" + (f", isolated {row['isolated_s']:.2f} s"
                                         if isolated else ""), file=sys.stderr)
        shutil.rmtree(work, ignore_errors=True)

    def med(key: str) -> float:
        return round(statistics.median(r[key] for r in rows), 3)

    result = {"case": name, "reps": reps, "patches": len(rows[0]["outcomes"]),
              "outcomes": rows[0]["outcomes"], "baseline_s": med("baseline_s"),
              "cold_s": med("cold_s"), "again_s": med("again_s"),
              "cold_steps": rows[0]["cold_steps"], "again_steps": rows[0]["again_steps"]}
    result["ratio_cold"] = round(result["cold_s"] / result["baseline_s"], 2)
    result["ratio_again"] = round(result["again_s"] / result["baseline_s"], 2)
    if isolated:
        result["isolated_s"] = med("isolated_s")
        result["ratio_isolated"] = round(result["isolated_s"] / result["baseline_s"], 2)
    result["meets_target"] = result["ratio_cold"] <= TARGET
    return result


def render(results: list[dict]) -> str:
    lines = [f"{'case':<12} {'patches':>7} {'baseline':>9} {'cold':>8} {'again':>8} "
             f"{'isolated':>9}  cold/base (target <= {TARGET})"]
    for r in results:
        iso = f"{r['isolated_s']:8.2f}s" if "isolated_s" in r else f"{'-':>9}"
        lines.append(f"{r['case']:<12} {r['patches']:>7} {r['baseline_s']:8.2f}s "
                     f"{r['cold_s']:7.2f}s {r['again_s']:7.2f}s {iso}  {r['ratio_cold']:.2f}x "
                     f"{'ok' if r['meets_target'] else 'OVER'} (again {r['ratio_again']:.2f}x"
                     + (f", isolated {r['ratio_isolated']:.2f}x" if "ratio_isolated" in r
                        else "") + ")")
    for r in results:
        lines.append(f"\n{r['case']}: steps of the cold run, then of the re-run")
        for label, rows in (("cold", r["cold_steps"]), ("again", r["again_steps"])):
            for s in rows:
                lines.append(f"  {label:<5} {s['order']}. {s['patch']:<24} {s['role']:<6} "
                             f"pin+{s['prefix']:<2} {s['result']:<9} {s['seconds']:7.2f}s "
                             f"{'cold' if s['cold'] else 'incr':<4} compiled {s['compiled']:>4} "
                             f"(upstream {s['upstream_compiled']})")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--reps", type=int, default=3, help="repetitions of the synthetic cases")
    ap.add_argument("--gen", type=int, default=150, help="generated TUs in tiny+gen")
    ap.add_argument("--llama", default=os.environ.get("PATCHCTL_LLAMA_CPP"),
                    help="llama.cpp clone at the pin [env: PATCHCTL_LLAMA_CPP]")
    ap.add_argument("--project", type=Path, default=ROOT,
                    help="project whose stack/ and reproducers/ the llama.cpp case uses")
    ap.add_argument("--cases", default="tiny,gen,llama", help="comma-separated subset")
    ap.add_argument("--jobs", type=int)
    args = ap.parse_args()
    for tool in ("cmake", "ninja", "git"):
        if shutil.which(tool) is None:
            raise SystemExit(f"bench: {tool} is not on PATH (pip install cmake ninja)")

    results = []
    with tempfile.TemporaryDirectory(prefix="bench-reproduce-") as tmp:
        keep = Path(tmp)
        cases = set(args.cases.split(","))
        if "tiny" in cases:
            results.append(run_case("tiny", lambda w: tiny_case(w, 0), args.reps, args.jobs,
                                    True, keep))
        if "gen" in cases:
            results.append(run_case(f"tiny+gen{args.gen}", lambda w: tiny_case(w, args.gen),
                                    args.reps, args.jobs, True, keep))
        if args.llama and "llama" in cases:
            llama = run_case("llama.cpp", lambda w: llama_case(w, Path(args.llama),
                                                               args.project.resolve()),
                             1, args.jobs, False, keep)
            if llama is None:
                print("  llama.cpp: skipped (no patch in stack/series names a reproducer)",
                      file=sys.stderr)
            else:
                results.append(llama)
    if args.json:
        print(json.dumps({"schema": SCHEMA, "machine": machine_facts(), "target": TARGET,
                          "results": results}, indent=2, sort_keys=True))
    else:
        print(render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
