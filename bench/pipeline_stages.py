"""End-to-end tokens/s of the worker's stage mode for 1, 2 and 3 stage processes.

Needs a worker built against llama.cpp with the stack (the consumer path, see
native/README.md). The worker writes its tiny 4-layer llama model into a temp
dir; then, for each configuration, `worker --drive --json` runs a prompt of 8
tokens and N greedy single-token steps, and every configuration is checked
against the full model in one process (`--check-local`): a run whose logits
differ stops the bench. Configurations run round-robin, the median of --reps
is kept. Printed per configuration: tokens/s, decode steps/s, both as a ratio
of the in-process full model, and the boundary bytes per token per boundary
against the model's weights. Not a test: nothing about speed is asserted.

    python bench/pipeline_stages.py --worker W [--steps 64] [--reps 5] [--json] [--out FILE]
    patchctl record --name boundary-io-pipeline-bench --metrics M.json -- \
        python bench/pipeline_stages.py --worker W --out M.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import BenchError, machine_facts

CONFIGS = [
    ("full model, in-process", ["--local"]),
    ("1 stage process [0,4)", ["--split", "0:4"]),
    ("2 stages [0,2)+[2,4)", ["--split", "0:2,2:4"]),
    ("3 stages [0,1)+[1,3)+[3,4)", ["--split", "0:1,1:3,3:4"]),
]


def drive(worker: Path, model: Path, mode: list[str], steps: int, check: bool) -> dict:
    argv = [str(worker), "--drive", "--model", str(model), *mode, "--steps", str(steps),
            "--ctx", str(max(256, steps + 16)), "--json"] + (["--check-local"] if check else [])
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode != 0:
        raise BenchError(f"`{' '.join(argv)}` exited {proc.returncode}: {proc.stderr.strip()}")
    result: dict = json.loads(proc.stdout)
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", required=True, help="a worker built with WORKER_UPSTREAM_DIR")
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", help="also write the JSON result to this file (for record --metrics)")
    args = ap.parse_args(argv)
    worker = Path(args.worker).resolve()
    try:
        with tempfile.TemporaryDirectory(prefix="worker-bench-pipeline-") as tmp:
            model = Path(tmp) / "tiny-llama.gguf"
            subprocess.run([str(worker), "--write-tiny-model", str(model)], check=True)
            runs: dict[str, list[dict]] = {name: [] for name, _ in CONFIGS}
            for rep in range(args.reps):
                for name, mode in CONFIGS:
                    # The first round also proves every configuration bit-identical.
                    runs[name].append(drive(worker, model, mode, args.steps, check=rep == 0))
    except (BenchError, subprocess.CalledProcessError, OSError) as e:
        print(f"pipeline_stages: {e}", file=sys.stderr)
        return 3
    rows = []
    for name, _ in CONFIGS:
        r = runs[name]
        first = r[0]
        rows.append({
            "config": name,
            "stage_processes": len(first["stages"]),
            "identical_to_local": first["identical_to_local"],
            "tokens_per_s": statistics.median(x["tokens_per_s"] for x in r),
            "steps_per_s": statistics.median(x["steps_per_s"] for x in r),
            "boundary_bytes_per_token": first["boundary"]["bytes_per_token"],
            "boundary_payload_bytes_per_token": first["boundary"]["payload_bytes_per_token"],
            "n_embd_boundary": first["boundary"]["n_embd_boundary"],
            "logits_fnv1a64": first["logits_fnv1a64"],
        })
    base = rows[0]
    for row in rows:
        row["tokens_per_s_ratio"] = row["tokens_per_s"] / base["tokens_per_s"]
        row["steps_per_s_ratio"] = row["steps_per_s"] / base["steps_per_s"]
    weights = runs[CONFIGS[0][0]][0]["weights_bytes"]
    result = {"schema": "patchctl.bench-pipeline-stages/1", "worker": str(worker),
              "prompt_tokens": 8, "steps": args.steps, "reps": args.reps,
              "weights_bytes": weights, "rows": rows, "machine": machine_facts()}
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"tiny llama: 4 layers, weights {weights} bytes; 8 prompt tokens + {args.steps} "
          f"steps, median of {args.reps}")
    print(f"{'configuration':30} {'tokens/s':>10} {'ratio':>6} {'steps/s':>10} {'ratio':>6} "
          f"{'B/token/boundary':>17} {'weights/that':>13}")
    for row in rows:
        per = row["boundary_bytes_per_token"]
        print(f"{row['config']:30} {row['tokens_per_s']:10.1f} {row['tokens_per_s_ratio']:6.3f} "
              f"{row['steps_per_s']:10.1f} {row['steps_per_s_ratio']:6.3f} "
              f"{per:17.1f} {(weights / per if per else 0):13.0f}")
    same = {row["logits_fnv1a64"] for row in rows}
    print(f"logits: {'bit-identical in every configuration' if len(same) == 1 else 'DIFFER'} "
          f"(fnv1a64 {', '.join(sorted(same))})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
