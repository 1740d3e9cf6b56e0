"""What TLS costs the worker's stage links: the same chain plain and with `--key`.

Needs a worker built against llama.cpp with the stack (the consumer path, see
native/README.md). The model is the seeded random llama of about 0.5 B parameters
that bench/pipeline_vs_rpc.py writes (the same bytes from the same seed, kept in
--model-dir). `worker --drive --split 0:12,12:24` spawns two stages and runs a
--prompt-token prompt in chunks of --batch and --steps greedy tokens, every link
plain TCP on loopback or TLS 1.3 with a pre-shared key (a fresh 32-byte key file,
mode 0600, in a temporary directory), the chain relaying replies and direct (the
last stage answering the driver). The four configurations run in turn, --reps
times; the medians of prompt and generation tokens/s are printed with TLS over
plain, and the reply digests must be the same in every run. Not a test: nothing
about speed is asserted.

    python bench/stage_tls.py --worker W [--model-dir DIR] [--reps 5] [--json] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import BenchError, loadavg, machine_facts, run
from _model import SPLITS, Tools, write_model

CONFIGS = [(tls, direct) for direct in (False, True) for tls in (False, True)]


def name(tls: bool, direct: bool) -> str:
    return f"{'TLS' if tls else 'plain'}, {'direct' if direct else 'relayed'}"


def drive(worker: Path, model: Path, a: argparse.Namespace, key: Path | None,
          direct: bool) -> dict:
    split = ",".join(f"{s}:{e}" for s, e in SPLITS[2])
    argv = [str(worker), "--drive", "--model", str(model), "--split", split,
            "--prompt", str(a.prompt), "--steps", str(a.steps), "--batch", str(a.batch),
            "--ctx", str(max(256, a.prompt + a.steps)), "--reply", "digest", "--json"]
    argv += ["--key", str(key)] if key is not None else []
    argv += ["--direct"] if direct else []
    result: dict = json.loads(run(argv, env=dict(os.environ)))
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", required=True, type=Path,
                    help="a worker built with WORKER_UPSTREAM_DIR")
    ap.add_argument("--model-dir", type=Path, default=Path("/tmp/patchctl-bench-models"))
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", type=Path, help="also write the JSON result (record --metrics)")
    a = ap.parse_args(argv)
    worker = a.worker.resolve()
    load_start = loadavg()
    runs: dict[str, list[dict]] = {name(*c): [] for c in CONFIGS}
    try:
        tools = Tools(worker, Path(), Path(), 1, a.batch, "digest")
        model, sha = write_model(tools, a.model_dir, "q8_0")
        with tempfile.TemporaryDirectory(prefix="stage-tls-") as tmp:
            key = Path(tmp) / "chain.key"
            key.write_text(secrets.token_hex(32) + "\n")
            os.chmod(key, 0o600)
            for rep in range(a.reps):
                for tls, direct in CONFIGS:
                    r = drive(worker, model, a, key if tls else None, direct)
                    runs[name(tls, direct)].append(r)
                    print(f"[stage_tls] {rep + 1}/{a.reps} {name(tls, direct)}: "
                          f"{a.prompt / r['prompt_seconds']:.1f} prompt t/s, "
                          f"{r['steps_per_s']:.2f} gen t/s", file=sys.stderr, flush=True)
    except (BenchError, subprocess.SubprocessError, OSError, ValueError) as e:
        print(f"stage_tls: {e}", file=sys.stderr)
        return 3
    digests = {r["logits_fnv1a64"] for rs in runs.values() for r in rs}
    rows = []
    for label, rs in runs.items():
        rows.append({"config": label,
                     "prompt_tps": statistics.median(a.prompt / r["prompt_seconds"] for r in rs),
                     "gen_tps": statistics.median(r["steps_per_s"] for r in rs),
                     "prompt_tps_runs": [round(a.prompt / r["prompt_seconds"], 2) for r in rs],
                     "gen_tps_runs": [round(r["steps_per_s"], 3) for r in rs]})
    by = {r["config"]: r for r in rows}
    ratios = {f"{what}/{mode}":
              by[f"TLS, {mode}"][f"{what}_tps"] / by[f"plain, {mode}"][f"{what}_tps"]
              for what in ("prompt", "gen") for mode in ("relayed", "direct")}
    result = {"schema": "patchctl.bench-stage-tls/1",
              "model": {"name": model.name, "sha256": sha},
              "params": {"prompt": a.prompt, "steps": a.steps, "batch": a.batch, "reps": a.reps,
                         "split": SPLITS[2], "load_start": load_start, "load_end": loadavg()},
              "rows": rows, "tls_over_plain": ratios,
              "same_digest_in_every_run": len(digests) == 1, "machine": machine_facts()}
    if a.out:
        a.out.write_text(json.dumps(result, indent=2) + "\n")
    if a.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"stage links plain and TLS: {model.name}, 2 stages {SPLITS[2]}, {a.prompt}-token "
              f"prompt at --batch {a.batch}, {a.steps} steps, median of {a.reps} runs in turn; "
              f"load {load_start} -> {result['params']['load_end']}")
        print(f"{'config':18} {'prompt t/s':>11} {'gen t/s':>9}")
        for r in rows:
            print(f"{r['config']:18} {r['prompt_tps']:>11.1f} {r['gen_tps']:>9.2f}")
        print("TLS / plain: " + ", ".join(f"{k} {v:.3f}" for k, v in ratios.items()))
        print(f"the same reply digest in every run: {'yes' if len(digests) == 1 else 'NO'}")
    return 0 if len(digests) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
