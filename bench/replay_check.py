"""`rebase-pin --check` on a real downstream's pin bumps: the time of one patchctl against
another's, on the same projects, in one run.

For each bump of the replay (bench/replay.py: ollama's queue before the bump, imported at the
pin before it) the project is made once, then `rebase-pin NEW --check` runs with each console
script in turn, the order rotated every round, so both see the same machine. A change to the
grading (a new strategy, a finding) shows here as the ratio of the totals:

    PATCHCTL_OLLAMA=<ollama> PATCHCTL_LLAMA_CPP=<llama.cpp> \\
        python bench/replay_check.py --baseline OLD/.venv/bin/patchctl [--rounds 2] [--json]

The first script (default: the one next to this Python) makes the projects; --baseline is the
one the ratio is against. Without the two variables it says so in one line and exits 0.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import BenchError, find_patchctl, git, init_bare, machine_facts
from replay import OLLAMA_TIP, inputs, make_project
from replay_drive import patchctl_json
from replay_history import bumps

SCHEMA = "patchctl.bench.replay-check/1"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def time_check(patchctl: Path, project: Path, upstream: Path, new: str) -> tuple[float, int]:
    """Seconds of one `rebase-pin NEW --check`, and the conflicts it counted to resolve."""
    t0 = time.perf_counter()
    code, out, err = patchctl_json(
        patchctl, project, "rebase-pin", new, "--check", "--upstream", str(upstream)
    )
    seconds = time.perf_counter() - t0
    if out is None:
        raise BenchError(f"{patchctl}: rebase-pin --check exited {code}: {err}")
    return seconds, int(out["to_resolve"])


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per script, the sum over bumps of each bump's median; the ratio to the baseline."""
    totals = {
        k: round(sum(r["median"][k] for r in rows), 2) for k in ("patchctl", "baseline")
    }
    ratio = totals["patchctl"] / totals["baseline"] if totals["baseline"] else None
    return {**totals, "ratio": round(ratio, 2) if ratio is not None else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", required=True, help="the console script to compare with")
    ap.add_argument("--patchctl", help="console script (default: next to this Python)")
    ap.add_argument("--rounds", type=int, default=2, help="checks per script and bump")
    ap.add_argument("--bumps", type=int, default=12, help="the N most recent bumps in range")
    ap.add_argument("--until", default="2025-04-01", help="bumps before this date")
    ap.add_argument("--tip", default=OLLAMA_TIP, help="the downstream commit to read back from")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if (found_inputs := inputs("bench/replay_check.py")) is None:
        return 0
    ollama, llama = found_inputs
    root = Path(tempfile.mkdtemp(prefix="patchctl-bench-replay-check-"))
    rows: list[dict[str, Any]] = []
    try:
        scripts = {"patchctl": find_patchctl(args.patchctl), "baseline": Path(args.baseline)}
        mirror = Path(git(Path(llama), "rev-parse", "--absolute-git-dir").strip())
        found = bumps(Path(ollama), args.tip, since=None, until=args.until, limit=args.bumps)
        for i, bump in enumerate(found, 1):
            where = root / str(i)
            where.mkdir()
            upstream = init_bare(where / "upstream.git", alternates=mirror / "objects")
            project, _, _ = make_project(scripts["patchctl"], where, upstream, bump)
            seconds: dict[str, list[float]] = {k: [] for k in scripts}
            counts: dict[str, int] = {}
            for r in range(args.rounds):
                order = list(scripts) if r % 2 == 0 else list(reversed(scripts))
                for k in order:
                    s, counts[k] = time_check(scripts[k], project, upstream, bump.new)
                    seconds[k].append(round(s, 3))
            rows.append({
                "commit": bump.commit,
                "patches": len(bump.before),
                "seconds": seconds,
                "median": {k: statistics.median(v) for k, v in seconds.items()},
                "to_resolve": counts,
            })
            log(f"[{i}/{len(found)}] {bump.commit[:9]}: " + ", ".join(
                f"{k} {rows[-1]['median'][k]:.2f} s ({counts[k]} to resolve)" for k in scripts))
    except BenchError as e:
        log(f"bench/replay_check.py: {e}")
        return 2
    finally:
        shutil.rmtree(root, ignore_errors=True)
    result = {
        "schema": SCHEMA,
        "machine": machine_facts(),
        "scripts": {k: str(v) for k, v in scripts.items()},
        "rounds": args.rounds,
        "bumps": rows,
        "totals": summary(rows),
    }
    t = result["totals"]
    print(json.dumps(result, indent=2) if args.json else
          f"rebase-pin --check over {len(rows)} bumps: {t['patchctl']} s against the "
          f"baseline's {t['baseline']} s, ratio {t['ratio']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
