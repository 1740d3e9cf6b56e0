"""Instructions per generated token, ours against llama.cpp, counted by callgrind.

Wall time on a shared machine drifts (on the 2-vCPU VM the same in-process
run took 28 to 44 ms per token within minutes); the instructions a process executes do
not. Each design runs two generations that differ only in their number of steps under
`valgrind --tool=callgrind`, and the difference per step is reported, so loading, the
prompt and the close cancel:

  llama.cpp: `llama-bench -p 0 -n S -r 1 --no-warmup`, in-process, and split over n
             `ggml-rpc-server` processes (`-ngl 99 --rpc ... -ts ...`, each server holding
             the layers of our stage k, as in bench/pipeline_vs_rpc.py), every server under
             callgrind too (stopped with SIGTERM once llama-bench is done: callgrind
             writes its counts then);
  ours:      `worker --drive --local --prompt 1 --steps S`, in-process, and the chain
             `worker --drive --split ... --direct --ring --prompt 1 --steps S` spawns,
             every stage under callgrind too (`--trace-children=yes`).

For each process, per generated token: the instructions inside `llama_decode` (llama.cpp's
own work on the same model at the same depth: equal for the same layers), inside our
digest of the logits row (`--reply digest`; a ring's last stage makes it after the token
has gone back to the first stage, so it is off the token's path), and the rest (the
harness: llama-bench's loop; our frames, their checks and checksums, the greedy choice,
the sockets' user-space side; an RPC server's work is all "rest": it computes the graphs
it is sent without llama_decode), and each design's sum over its processes.
Kernel time, waits and wake-ups are not instructions of the process:
bench/pipeline_vs_rpc.py measures those, in seconds.

    python bench/decode_cost.py --build BUILD [--model-dir DIR] [--n-embd 256]
        [--processes 1,2] [--json] [--out FILE]

The model is bench/pipeline_vs_rpc.py's (the same seed and shape, the same file).
Needs valgrind and callgrind_annotate on PATH. At --n-embd 256 with --processes 1,2,3
the whole run takes about 3 minutes.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import BenchError, emit, loadavg, machine_facts
from _model import SHAPE, SPLITS, Tools, free_port, tensor_split, wait_port, write_model

# callgrind_annotate --inclusive=yes lines: "30,184,324 (80.5%)  ???:llama_decode [...]".
ANNOTATED = re.compile(r"^\s*([\d,]+)\s.*?(PROGRAM TOTALS|:llama_decode |:worker::digest_row\()")
PART = {"PROGRAM TOTALS": "total", ":llama_decode ": "decode", ":worker::digest_row(": "digest"}
Counts = dict[str, int]


def log(msg: str) -> None:
    print(f"[decode_cost] {msg}", file=sys.stderr, flush=True)


def parse_annotated(text: str, source: str) -> Counts:
    """`callgrind_annotate --inclusive=yes` output: the instructions in all, inside
    llama_decode and inside our digest of a logits row (inclusive of what they call)."""
    found = {"total": 0, "decode": 0, "digest": 0}
    for line in text.splitlines():
        m = ANNOTATED.match(line)
        if m is not None:
            part = PART[m.group(2)]
            found[part] = max(found[part], int(m.group(1).replace(",", "")))
    if found["total"] == 0:
        raise BenchError(f"{source}: no PROGRAM TOTALS in callgrind_annotate's output")
    return found


def counts(out: Path) -> Counts:
    """One callgrind output file's counts (parse_annotated)."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", str(out)],
                          capture_output=True, text=True, check=True).stdout
    return parse_annotated(text, str(out))


def process_name(out: Path) -> str:
    """`stage 0:12` for a stage's output file (its command line names the range), else
    the program's name."""
    with out.open(errors="replace") as f:  # the header's line: not the whole profile
        cmd = next((ln for ln in f if ln.startswith("cmd:")), "cmd: ?")
    argv = cmd[4:].split()
    if "--stage" in argv and "--layers" in argv:
        return f"stage {argv[argv.index('--layers') + 1]}"
    return Path(argv[0]).name if argv else "?"


VALGRIND = ["valgrind", "--tool=callgrind", "--trace-children=yes"]


def collect(outdir: Path, names: dict[str, str] | None = None) -> dict[str, Counts]:
    """The counts of every callgrind output under outdir, by process name (names: a
    file's name for the process, else process_name)."""
    found: dict[str, Counts] = {}
    for out in sorted(outdir.iterdir()):
        name = (names or {}).get(out.name) or process_name(out)
        if name in found:
            raise BenchError(f"two processes named {name} under {outdir}")
        found[name] = counts(out)
    return found


def callgrind(argv: list[str], outdir: Path) -> None:
    """Runs argv under callgrind (its children too), an output file per process in outdir."""
    proc = subprocess.run([*VALGRIND, f"--callgrind-out-file={outdir}/cg.%p", *argv],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise BenchError(f"`{' '.join(argv)}` under callgrind exited {proc.returncode}: "
                         f"{proc.stderr.strip()[-1500:]}")


def run_ours(argv: list[str], work: Path, tag: str) -> dict[str, Counts]:
    outdir = work / tag
    outdir.mkdir()
    callgrind(argv, outdir)
    return collect(outdir)


def run_rpc(tools: Tools, model: Path, n: int, steps: int, work: Path,
            tag: str) -> dict[str, Counts]:
    """llama-bench over n RPC servers, each server under callgrind in its own valgrind."""
    outdir = work / tag
    outdir.mkdir()
    servers: list[subprocess.Popen[bytes]] = []
    endpoints: list[str] = []
    try:
        for i in range(n):
            port = free_port()
            servers.append(subprocess.Popen(
                [*VALGRIND, f"--callgrind-out-file={outdir}/server{i + 1}",
                 str(tools.rpc_server), "-H", "127.0.0.1", "-p", str(port), "-t", "1"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            wait_port(port, servers[-1], timeout=600)
            endpoints.append(f"127.0.0.1:{port}")
        callgrind([*llama_argv(tools, model, steps), "-ngl", "99", "--rpc", ",".join(endpoints),
                   "-ts", tensor_split(n)], outdir)
    finally:
        for p in servers:
            p.terminate()
        for p in servers:
            p.wait(300)
    return collect(outdir, {f"server{i + 1}": f"rpc-server {i + 1}" for i in range(n)})


def llama_argv(tools: Tools, model: Path, steps: int) -> list[str]:
    return [str(tools.llama_bench), "-m", str(model), "-t", "1", "-p", "0",
            "-n", str(steps), "-r", "1", "--no-warmup", "-ub", str(tools.batch),
            "-fa", tools.flash_attn, "-o", "json"]


def per_token(short: dict[str, Counts], long: dict[str, Counts],
              steps: int) -> dict[str, dict[str, float]]:
    """Each process's instructions per step: (long - short) / steps, inside llama_decode,
    inside the digest, the rest, and in all."""
    if short.keys() != long.keys():
        raise BenchError(f"the two runs had other processes: {sorted(short)} / {sorted(long)}")
    out = {}
    for name in short:
        d = {k: (long[name][k] - short[name][k]) / steps for k in ("total", "decode", "digest")}
        d["rest"] = d["total"] - d["decode"] - d["digest"]
        out[name] = d
    return out


Runner = Callable[[int, Path, str], dict[str, Counts]]


def designs(tools: Tools, model: Path, processes: list[int]) -> dict[str, Runner]:
    """Each design's run for a number of steps: the counts of its processes."""
    def ours(n: int, steps: int, work: Path, tag: str) -> dict[str, Counts]:
        argv = [str(tools.worker), "--drive", "--model", str(model), "--prompt", "1",
                "--steps", str(steps), "--json", "--threads", "1", "--ctx", "256",
                "--batch", str(tools.batch), "--reply", tools.reply,
                "--flash-attn", tools.flash_attn, "--timeout-ms", "3600000"]
        if n == 1:
            argv.append("--local")
        else:
            argv += ["--split", ",".join(f"{a}:{b}" for a, b in SPLITS[n]), "--direct", "--ring"]
        return run_ours(argv, work, tag)

    def llama(steps: int, work: Path, tag: str) -> dict[str, Counts]:
        return run_ours(llama_argv(tools, model, steps), work, tag)

    out: dict[str, Runner] = {"llama.cpp in-process": llama}
    for n in processes:
        out["ours in-process" if n == 1 else f"ours, ring of {n}"] = partial(ours, n)
        if n > 1:
            out[f"llama.cpp RPC, {n} servers"] = partial(run_rpc, tools, model, n)
    return out


def render(result: dict[str, Any]) -> str:
    p = result["params"]
    lines = [f"instructions per generated token (callgrind; runs of {p['short']} and "
             f"{p['long']} steps, the difference per step), {result['model']['name']}, "
             f"reply {p['reply']}, flash attention {p['flash_attn']}",
             "",
             f"{'design':28} {'process':14} {'llama_decode':>12} {'digest':>10} "
             f"{'the rest':>10} {'in all':>12}"]
    for design, procs in result["designs"].items():
        rows = [*procs.items()]
        if len(rows) > 1:
            rows.append(("all", {k: sum(c[k] for c in procs.values())
                                 for k in ("decode", "digest", "rest", "total")}))
        for name, c in rows:
            lines.append(f"{design if name != 'all' else '':28} {name:14} {c['decode']:>12,.0f} "
                         f"{c['digest']:>10,.0f} {c['rest']:>10,.0f} {c['total']:>12,.0f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", type=Path, required=True,
                    help="the consumer build: bin/worker and bin/llama-bench")
    ap.add_argument("--model-dir", type=Path, default=Path("/tmp/patchctl-bench-models"),
                    help="where the seeded model is written once (pipeline_vs_rpc.py's default)")
    ap.add_argument("--type", choices=["f16", "q8_0"], default="q8_0")
    ap.add_argument("--n-embd", type=int, default=256,
                    help="the model's width as in bench/pipeline_vs_rpc.py (default 256: "
                         "43 M parameters; 1024 is the 0.5 B model, about ten times as long)")
    ap.add_argument("--short", type=int, default=8, help="steps of the short run")
    ap.add_argument("--long", type=int, default=24, help="steps of the long run")
    ap.add_argument("--processes", default="1,2",
                    help="ours in-process (1) and as a ring of 2 or 3 stages")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--reply", choices=["all", "last", "digest"], default="digest")
    ap.add_argument("--flash-attn", choices=["auto", "on", "off"], default="off")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    if a.n_embd <= 0 or a.n_embd % 128:
        ap.error(f"--n-embd {a.n_embd}: a positive multiple of 128 (heads of 64, 8 KV heads)")
    if not 0 < a.short < a.long:
        ap.error(f"--short {a.short} --long {a.long}: 0 < short < long")
    processes = [int(x) for x in a.processes.split(",") if x.isdigit()]
    if len(processes) != len(a.processes.split(",")):
        processes = []
    if not processes or any(n not in SPLITS for n in processes):
        ap.error(f"--processes {a.processes}: 1, 2 or 3, comma-separated")
    for tool in ("valgrind", "callgrind_annotate"):
        if shutil.which(tool) is None:
            print(f"decode_cost: {tool} is not on PATH (Debian: apt-get install valgrind)",
                  file=sys.stderr)
            return 2
    tools = Tools(worker=a.build / "bin" / "worker", llama_bench=a.build / "bin" / "llama-bench",
                  rpc_server=a.build / "bin" / "ggml-rpc-server", threads=1, batch=a.batch,
                  reply=a.reply, flash_attn=a.flash_attn)
    for t in (tools.worker, tools.llama_bench):
        if not t.is_file():
            print(f"decode_cost: {t} is missing (see bench/pipeline_vs_rpc.py for the build)",
                  file=sys.stderr)
            return 2
    load_start = loadavg()
    measured: dict[str, dict[str, dict[str, float]]] = {}
    try:
        model, sha = write_model(tools, a.model_dir, a.type, a.n_embd)
        with tempfile.TemporaryDirectory(prefix="decode-cost-") as tmp:
            work = Path(tmp)
            for i, (design, run) in enumerate(designs(tools, model, processes).items()):
                log(f"{design}: {a.short} and {a.long} steps under callgrind")
                short = run(a.short, work, f"{i}-short")
                long = run(a.long, work, f"{i}-long")
                measured[design] = per_token(short, long, a.long - a.short)
    except (BenchError, subprocess.SubprocessError, OSError) as e:
        print(f"decode_cost: {e}", file=sys.stderr)
        return 3
    result = {"schema": "patchctl.bench-decode-cost/1",
              "model": {"name": model.name, "bytes": model.stat().st_size, "sha256": sha,
                        "n_embd": a.n_embd, "n_layer": SHAPE["n-layer"], "type": a.type},
              "params": {"short": a.short, "long": a.long, "batch": a.batch, "reply": a.reply,
                         "flash_attn": a.flash_attn, "processes": processes,
                         "load_start": load_start, "load_end": loadavg()},
              "designs": measured,
              "machine": machine_facts()}
    return emit(result, a.out, a.json, render)


if __name__ == "__main__":
    sys.exit(main())
