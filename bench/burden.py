"""Benchmark `patchctl burden` against `git blame` run per file by hand.

From one run it prints the median wall time (interleaved repetitions after a warm-up) of,
for a synthetic stack of 2,000 narrow patches on an upstream with six months of history:

  patchctl burden --upstream REPO    the real console script, as a subprocess, its cache
                                     warm (a second run), and again with the cache emptied
                                     before each run (cold: every patch parsed and blamed)
  by hand                            one `git blame --porcelain PIN -- FILE` per file the
                                     stack stands on, one after another (bash), which still
                                     leaves the lines and dates to match by hand

and the ratios. Untimed, it checks that burden's answer is the by-hand one: for each
patch, the commits of the window that the whole-file blames name on its hunks' context
and removed lines (no patch here shares a file with another, so its line numbers are the
pin's). The inputs are generated in a temp dir; nothing is written to the repository.

    python bench/burden.py [--json] [--patches 2000] [--history 400] [--reps 3] [--keep]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    BenchError,
    Case,
    build_patch_series,
    edit_text,
    fast_import_blob,
    fast_import_commit,
    find_patchctl,
    first_line,
    git,
    hermetic_env,
    init_bare,
    loadavg,
    ls_tree,
    machine_facts,
    measure_round_robin,
    median,
    plan_patches,
    read_blobs,
    run,
    timed,
    write_project,
)
from verify_inputs import areas_for, make_synthetic_upstream

SCHEMA = "patchctl.bench.burden/1"
DAY = 86400
START = 1767225600  # 2026-01-01: the initial import (bench/_common.py's FIXED_DATE)
PIN_AT = START + 181 * DAY  # 2026-07-01: the pin; the history lies between the two
FILES_PER_COMMIT = 8

# By hand: blame each file the stack stands on, whole, one git process after another.
BY_HAND = r"""
set -eu
repo=$1 pin=$2 files=$3
while IFS= read -r f; do
    git -C "$repo" blame --porcelain "$pin" -- "$f"
done < "$files" > /dev/null
"""


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def make_upstream(repo: Path, patches: int, history: int, rng: random.Random) -> str:
    """The verify bench's synthetic upstream, then ``history`` commits spread over the six
    months before the pin, each a narrow edit of a few files; returns the pin."""
    initial = make_synthetic_upstream(repo, areas_for(patches))
    entries = {e.path: e for e in ls_tree(repo, initial)}
    sources = sorted(p for p in entries if p.endswith(".c"))
    current = {p: b for p, b in zip(sources, read_blobs(
        repo, [entries[p].blob for p in sources]).values(), strict=True)}
    stream = []
    parent: str | None = initial
    for i in range(history):
        when = START + DAY + (PIN_AT - START - 2 * DAY) * i // max(history, 1)
        files = []
        for path in rng.sample(sources, FILES_PER_COMMIT):
            current[path] = edit_text(current[path], path=path, tag=f"hist-{i:04d}", rng=rng,
                                      hunks=2)
            files.append(fast_import_blob(path, "100644", current[path]))
        stream.append(fast_import_commit("refs/heads/main", f"synth : change {i:04d}\n",
                                         parent, files, date=f"{when} +0000"))
        parent = None
    stream.append(fast_import_commit(
        "refs/heads/main", "synth : the pin\n", parent,
        [fast_import_blob("README.md", "100644", b"# synth\n\nPinned.\n")],
        date=f"{PIN_AT} +0000"))
    run(["git", "-C", repo, "fast-import", "--quiet"], input=b"".join(stream))
    return git(repo, "rev-parse", "refs/heads/main").strip()


_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")


def standing(patch: bytes) -> dict[str, set[int]]:
    """path -> the pre-image lines of the patch's context and removed lines (a patch
    parser of its own: the check must not share burden's)."""
    out: dict[str, set[int]] = {}
    path: str | None = None
    line = 0
    for raw in patch.split(b"\n"):
        if raw.startswith(b"--- "):
            path = None if raw == b"--- /dev/null" else raw[6:].decode()
        elif (m := _HUNK.match(raw)) is not None:
            line = int(m.group(1)) + (0 if m.group(2) != b"0" else 1)
        elif path is not None and raw[:1] in (b" ", b"-") and not raw.startswith(b"-- "):
            out.setdefault(path, set()).add(line)
            line += 1
    return out


def by_hand_answer(repo: Path, pin: str, since: int,
                   patches: dict[str, dict[str, set[int]]]) -> dict[str, list[str]]:
    """What the by-hand blames say: per patch, the commits of the window on its lines."""
    blamed: dict[str, dict[int, str]] = {}
    times: dict[str, int] = {}
    for path in sorted({p for s in patches.values() for p in s}):
        text = git(repo, "blame", "--porcelain", pin, "--", path)
        lines: dict[int, str] = {}
        commit = ""
        for ln in text.split("\n"):
            head = ln.split(" ")
            if len(head) >= 3 and len(head[0]) == 40 and head[1].isdigit():
                commit = head[0]
                lines[int(head[2])] = commit
            elif ln.startswith("committer-time "):
                times[commit] = int(ln.split()[1])
        blamed[path] = lines
    return {name: sorted({c for path, ns in s.items() for n in ns
                          if times[(c := blamed[path][n])] >= since},
                         key=lambda c: (-times[c], c))
            for name, s in patches.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true", help="print one JSON object, not the table")
    ap.add_argument("--patches", type=int, default=2000, help="stack size (default 2000)")
    ap.add_argument("--history", type=int, default=400,
                    help="upstream commits in the six months before the pin (default 400)")
    ap.add_argument("--days", type=int, default=90, help="burden's window (default 90)")
    ap.add_argument("--reps", type=int, default=3, help="timed repetitions (default 3)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed warm-up rounds (default 1)")
    ap.add_argument("--patchctl", help="the console script (default: next to this python)")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir and print its path")
    args = ap.parse_args(argv)
    if args.reps < 1 or args.warmup < 0 or args.patches < 1 or args.history < 0:
        ap.error("--reps, --patches >= 1; --warmup, --history >= 0")
    started = time.perf_counter()
    patchctl = find_patchctl(args.patchctl)
    machine = machine_facts()
    machine["loadavg_start"] = loadavg()
    tools = {"git": first_line(["git", "--version"]),
             "patchctl": first_line([str(patchctl), "--version"]),
             "patchctl_path": str(patchctl)}
    tmp = Path(tempfile.mkdtemp(prefix="patchctl-bench-burden-"))
    try:
        log(f"generating inputs in {tmp}")
        rng = random.Random(20260701)
        upstream = tmp / "upstream.git"
        pin = make_upstream(upstream, args.patches, args.history, rng)
        entries = {e.path: e for e in ls_tree(upstream, pin)}
        candidates = sorted(p for p in entries if p.endswith((".c", ".h")))
        specs = plan_patches(candidates, args.patches, rng, new_every=25)
        gen = init_bare(tmp / "gen.git", alternates=upstream / "objects")
        out = tmp / "generated-patches"
        names = build_patch_series(gen, pin, entries, specs, rng, out)
        project = write_project(tmp / "project", name="synthetic", url=str(upstream), pin=pin,
                                patch_dir=out, patch_names=names, patchctl=patchctl)
        stands = {n: standing((out / n).read_bytes()) for n in names}
        files = sorted({p for s in stands.values() for p in s})
        (tmp / "files").write_text("".join(f"{p}\n" for p in files))
        facts = {"patches": len(names), "history_commits": args.history,
                 "files_blamed": len(files),
                 "lines_blamed": sum(len(ns) for s in stands.values() for ns in s.values()),
                 "setup_seconds": round(time.perf_counter() - started, 2)}

        env = hermetic_env()
        cold_cache = tmp / "cold-cache"
        cold_env = {**env, "PATCHCTL_CACHE_DIR": str(cold_cache)}
        argv_burden = [str(patchctl), "burden", "--upstream", str(upstream), "--days",
                       str(args.days)]

        def report() -> dict:
            return json.loads(run([*argv_burden, "--json"], cwd=project, env=env))

        first = report()
        since = PIN_AT - args.days * DAY
        expected = by_hand_answer(upstream, pin, since, stands)
        got = {p["name"]: p["commits"] for p in first["patches"]}
        differ = sorted(n for n in names if got.get(n) != expected[n])
        facts.update({"distinct_commits": first["total"],
                      "patches_hit": sum(bool(c) for c in got.values()),
                      "same_answer_as_by_hand": not differ, "patches_differing": differ[:10]})
        if differ:
            log(f"burden and the by-hand blames differ on {len(differ)} patches, "
                f"e.g. {differ[0]}")

        cases = [
            Case("burden warm", lambda: timed(argv_burden, cwd=project, env=env)),
            Case("burden cold", lambda: timed(argv_burden, cwd=project, env=cold_env),
                 prepare=lambda: shutil.rmtree(cold_cache, ignore_errors=True)),
            Case("by hand", lambda: timed(["bash", "-c", BY_HAND, "by-hand", upstream, pin,
                                           tmp / "files"], env=env)),
        ]
        log("measuring")
        samples = measure_round_robin(cases, reps=args.reps, warmup=args.warmup, log=log)
        medians = {k: median(v) for k, v in samples.items()}
        last = report()
    finally:
        if args.keep:
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    machine["loadavg_end"] = loadavg()
    result = {
        "schema": SCHEMA, "machine": machine, "tools": tools,
        "params": {"patches": args.patches, "history": args.history, "days": args.days,
                   "reps": args.reps, "warmup": args.warmup},
        "facts": facts,
        "burden_report": {k: last[k] for k in ("git_calls", "seconds", "cached", "total")},
        "medians": {k: round(v, 4) for k, v in medians.items()},
        "samples": {k: [round(x, 4) for x in v] for k, v in samples.items()},
        "ratios": {"by hand / burden cold": round(medians["by hand"] / medians["burden cold"], 2),
                   "by hand / burden warm": round(medians["by hand"] / medians["burden warm"],
                                                  2)},
        "seconds": round(time.perf_counter() - started, 2),
    }
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        print(render(result), end="")
    return 0 if facts["same_answer_as_by_hand"] else 1


def render(r: dict) -> str:
    f, m = r["facts"], r["medians"]
    out = [f"burden bench: {f['patches']} patches, {f['files_blamed']} files and "
           f"{f['lines_blamed']} lines blamed, {f['history_commits']} upstream commits in the "
           f"181 days before the pin, window {r['params']['days']} days",
           f"burden's answer: {f['distinct_commits']} distinct commits on the lines of "
           f"{f['patches_hit']} patches; the same as the by-hand blames: "
           f"{'yes' if f['same_answer_as_by_hand'] else 'NO'}",
           f"{'case':<14} {'median s':>9}   samples"]
    for k in ("burden cold", "burden warm", "by hand"):
        out.append(f"{k:<14} {m[k]:>9.3f}   {', '.join(f'{x:.3f}' for x in r['samples'][k])}")
    out += [f"{k}: {v}x" for k, v in r["ratios"].items()]
    out.append(f"({r['machine']['nproc']} cores, load {r['machine'].get('loadavg_start')} -> "
               f"{r['machine'].get('loadavg_end')}; {r['seconds']} s in all)")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (BenchError, subprocess.CalledProcessError) as e:
        print(f"bench/burden.py: error: {e}", file=sys.stderr)
        sys.exit(3)
