"""Benchmark `patchctl import` of a quilt series against `git am` of the same patches.

The upstream is bench/verify.py's synthetic one (1,202 distinct C files, one
commit). The series is N narrow patches (default 2,000) made as real commits on
the pin (one `git fast-import`) and written with `git format-patch`; a file may
be edited by several patches, every 25th patch also adds a file. They sit in a
quilt directory (`series` + the patch files), as a quilt or Debian user has them.

Timed, interleaved (round-robin, after no warm-up: one import of 2,000 patches
is itself an average over 2,000):

  patchctl import   `patchctl -C PROJECT import QUILT_DIR` into a fresh project made
                    by `patchctl init` (untimed)
  git am            `git -C WORK am -q PATCHES...` on a fresh clone checked out at the
                    pin (the clone and checkout are untimed)

Before timing, one import is checked: its result must verify (`patchctl verify`)
and its final tree must equal the tree `git am` gives.

    python bench/import_series.py [--patches 2000] [--reps 1] [--json] [--keep]
    patchctl record --name bench-import -- python bench/import_series.py
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    BenchError,
    Case,
    PatchSpec,
    build_patch_series,
    find_patchctl,
    git,
    hermetic_env,
    loadavg,
    ls_tree,
    machine_facts,
    measure_round_robin,
    median,
    run,
    timed,
)
from verify_inputs import make_synthetic_upstream


def plan(candidates: list[str], count: int, rng: random.Random) -> list[PatchSpec]:
    """``count`` patches of one or two files each; files may repeat across patches."""
    specs = []
    for i in range(1, count + 1):
        adds = i % 25 == 0
        edits = rng.sample(candidates, 1 if adds or rng.random() < 0.6 else 2)
        spec = PatchSpec(index=i, edits=edits,
                         new_file=f"bench/added_{i:04d}.c" if adds else None)
        spec.hunks = {p: (2 if rng.random() < 0.25 else 1) for p in edits}
        specs.append(spec)
    return specs


def setup(root: Path, n: int) -> dict[str, object]:
    upstream = root / "upstream.git"
    pin = make_synthetic_upstream(upstream)
    entries = {e.path: e for e in ls_tree(upstream, pin)}
    candidates = sorted(p for p in entries if p.endswith((".c", ".h")))
    gen = root / "gen.git"
    git(None, "init", "-q", "--bare", gen)
    (gen / "objects/info/alternates").write_text(f"{(upstream / 'objects').resolve()}\n")
    specs = plan(candidates, n, random.Random(20261130))
    out = root / "quilt"
    names = build_patch_series(gen, pin, entries, specs, random.Random(7), out)
    if len(names) != n:
        raise BenchError(f"format-patch wrote {len(names)} patches, expected {n}")
    (out / "series").write_text("".join(f"{p}\n" for p in names))
    expected = git(gen, "rev-parse", "refs/heads/bench-stack^{tree}").strip()
    return {"upstream": upstream, "pin": pin, "quilt": out, "names": names,
            "expected_tree": expected,
            "patch_bytes": sum((out / p).stat().st_size for p in names)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--patches", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=1, help="timed runs of each (default 1)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir and print it")
    ap.add_argument("--patchctl", help="console script (default: next to this Python)")
    args = ap.parse_args(argv)
    patchctl = find_patchctl(args.patchctl)
    root = Path(tempfile.mkdtemp(prefix="patchctl-bench-import-"))
    env = hermetic_env()
    try:
        t0 = time.perf_counter()
        s = setup(root, args.patches)
        upstream, pin, quilt = s["upstream"], str(s["pin"]), s["quilt"]
        assert isinstance(upstream, Path) and isinstance(quilt, Path)
        names = list(s["names"])  # type: ignore[call-overload]
        setup_s = time.perf_counter() - t0
        state = {"round": 0}

        def fresh_project() -> None:
            state["round"] += 1
            project = root / f"project-{state['round']}"
            run([patchctl, "-C", project, "init", "--upstream", upstream, "--pin", pin], env=env)
            state["project"] = project  # type: ignore[assignment]

        def fresh_clone() -> None:
            work = root / f"work-{state['round']}"
            shutil.rmtree(work, ignore_errors=True)
            git(None, "clone", "-q", "--shared", "--no-checkout", upstream, work, env=env)
            git(work, "checkout", "-q", "--detach", pin, env=env)
            state["work"] = work  # type: ignore[assignment]

        def import_() -> float:
            return timed([patchctl, "-C", state["project"], "import", quilt], env=env)

        def am() -> float:
            return timed(["git", "-C", state["work"], "am", "-q",
                          *(str(quilt / n) for n in names)], env=env)

        # Correctness, once: the import verifies and gives git am's tree.
        fresh_project()
        fresh_clone()
        import_()
        am()
        run([patchctl, "-C", state["project"], "verify", "--upstream", upstream], env=env)
        am_tree = git(state["work"], "rev-parse", "HEAD^{tree}").strip()  # type: ignore[arg-type]
        applied = root / "applied"
        run([patchctl, "-C", state["project"], "apply", "--into", applied, "--upstream",
             upstream], env=env)
        stamp = (applied / ".patchctl-stamp").read_text()
        ours = next(ln.split('"')[1] for ln in stamp.splitlines() if ln.startswith("tree ="))
        if not (ours == am_tree == s["expected_tree"]):
            raise BenchError(f"trees differ: import {ours}, git am {am_tree}, "
                             f"commits {s['expected_tree']}")

        cases = [Case("patchctl import", import_, prepare=fresh_project),
                 Case("git am", am, prepare=fresh_clone)]
        samples = measure_round_robin(cases, reps=args.reps, warmup=0)
        med = {k: median(v) for k, v in samples.items()}
        result = {
            "schema": "patchctl.bench-import/1",
            "patches": args.patches,
            "patch_bytes": s["patch_bytes"],
            "setup_seconds": round(setup_s, 2),
            "samples": {k: [round(x, 3) for x in v] for k, v in samples.items()},
            "median_seconds": {k: round(v, 3) for k, v in med.items()},
            "ms_per_patch": {k: round(1000 * v / args.patches, 2) for k, v in med.items()},
            "ratio_import_to_git_am": round(med["patchctl import"] / med["git am"], 2),
            "same_tree_as_git_am": True,
            "target": "patchctl import <= 1.0x git am",
            "machine": machine_facts(),
            "loadavg_after": loadavg(),
        }
        result["meets_target"] = result["ratio_import_to_git_am"] <= 1.0
        if args.json:
            print(json.dumps(result, indent=2, sort_keys=True))
        else:
            print(f"import of a {args.patches}-patch quilt series "
                  f"({s['patch_bytes']} bytes), synthetic upstream of 1,202 files")
            for k in med:
                print(f"  {k:<16} {med[k]:8.2f} s  {result['ms_per_patch'][k]:6.2f} ms/patch  "
                      f"samples {result['samples'][k]}")
            print(f"  ratio patchctl import / git am: {result['ratio_import_to_git_am']}x "
                  f"(target <= 1.0x: {'met' if result['meets_target'] else 'NOT met'})")
            print("  same final tree as git am: yes")
            print(f"  machine: {result['machine']}; loadavg after {result['loadavg_after']}")
        return 0
    finally:
        if args.keep:
            print(f"kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
