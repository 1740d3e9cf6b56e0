"""The worker's stage pipeline against llama.cpp's own RPC split, side by side.

Needs a worker built against llama.cpp with the stack (the consumer path, see
native/README.md) and, from the same configure, llama.cpp's `llama-bench` and
`ggml-rpc-server` (`-DGGML_RPC=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_COMMON=ON`,
then `ninja llama-bench ggml-rpc-server`).

The model is a seeded random llama of about 0.5 B parameters written by the
worker itself (`worker --write-tiny-model` with a shape; the same bytes from the
same seed), kept in --model-dir outside the repository; `--n-embd 256` writes the
same 24 layers four times narrower (about 43 M parameters), where compute per token
is small beside a link's latency. For 1, 2 and 3
processes it measures:

  ours: `worker --stage` processes on loopback (one per layer range), driven by
        `worker --drive --connect ... --ring` as a ring: each stage forwards its
        state, the last answers the driver on its own link (`--direct`, `--answers`)
        and feeds each greedy token straight back to the first stage (`--ring`), so
        the driver sends the prompt and only reads; with --direct also as a direct
        chain without the ring (the driver sends each step), with --relayed also as
        a chain whose stages relay each reply back up; 1 process is
        `worker --drive --local`;
  rpc:  `ggml-rpc-server` processes on loopback driven by upstream's own
        `llama-bench -ngl 99 --rpc A,B,... -ts ...`, the tensor split chosen so
        that each server holds exactly the same layers as our stage (the output
        layer with the last one); 1 process is llama-bench in-process.

Both take the prompt in chunks of --batch tokens (128; llama-bench -ub): our
stages stream each chunk's boundary state on as soon as it is decoded (state
parts), so the stages of a chain work on one prompt at once; llama.cpp
pipelines RPC ubatches as it can.

Every process that takes connections sits behind a byte-counting relay (an
asyncio TCP proxy in this process, the same code for both designs, bench/_relay.py).
Each `--link RTT_MS:MBIT` (repeatable; `loopback` is no model) is a profile: the
relays of every design then model that network link, each direction paced at
MBIT megabit/s and delayed by RTT_MS / 2 (e.g. `1:1000` a LAN, `20:100` a WAN),
so loopback stands in for machines apart; RPC's weight upload then pays the
bandwidth too. All profiles are measured in one run, one after the other (1
process, which crosses no link, on the first only). Reported for each: prompt
tokens/s (--prompt tokens), generation tokens/s (--steps), time to first token,
wire bytes and round trips per generated token and wire bytes at load (a round
trip: a request on a connection, bytes sent after bytes came back). Per
generated token and at load come from two short runs that differ in their
generation steps only: (B_long - B_short) / (steps difference), and B_short
minus its tokens' share. Our logits are checked bit-identical to the
full model in every run (the digest of every reply row against `--local`),
and once per split with every row's full logits (`--reply all --check-local`).
Nothing about speed is asserted: the targets are printed as in bench/verify.py.

    python bench/pipeline_vs_rpc.py --build BUILD [--model-dir DIR]
        [--link loopback --link 1:1000 --link 5:1000 --link 20:100] [--json] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import BenchError, emit, loadavg, machine_facts
from _model import (
    SEED,
    SHAPE,
    SPLITS,
    Tools,
    free_port,
    shape,
    stop,
    tensor_split,
    wait_port,
    write_model,
)
from _pipeline_targets import combine, evaluate, render
from _relay import (
    Counter,
    Link,
    Relays,
    link_fidelity,
    parse_profile,
    profile_label,
    relay_overhead,
)


def log(msg: str) -> None:
    print(f"[pipeline_vs_rpc] {msg}", file=sys.stderr, flush=True)


# -- ours -----------------------------------------------------------------------------------


CHAINS = {  # our chain's designs: the row's name, and what the stages run with
    "ring": "ours",                     # --direct, --answers, and --ring
    "direct": "ours, direct answers",   # --direct and --answers
    "relayed": "ours, relayed replies",  # every stage relays the reply back up
}


def drive_ours(tools: Tools, model: Path, n: int, prompt: int, steps: int, relays: Relays,
               *, reply: str | None = None, check_local: bool = False,
               chain: str = "ring") -> dict:
    """One sequence through our stages (n >= 2, behind relays) or in-process (n == 1).
    ring: the last stage answers the driver on its own link (--direct, --answers) and
    feeds each greedy token straight back to the first stage (--ring); direct: the
    driver sends every step; relayed: every stage relays the reply back up the chain."""
    direct = chain in ("ring", "direct")
    reply = reply or tools.reply
    common = ["--threads", str(tools.threads), "--ctx", str(max(256, prompt + steps)),
              "--batch", str(tools.batch), "--reply", reply, "--timeout-ms", "600000",
              "--flash-attn", tools.flash_attn]
    drive = [str(tools.worker), "--drive", "--model", str(model), "--prompt", str(prompt),
             "--steps", str(steps), "--json", *common]
    if check_local:
        drive.append("--check-local")
    if chain == "ring" and n > 1:
        drive.append("--ring")
    counters: list[Counter] = []
    procs: list[subprocess.Popen] = []
    try:
        if n == 1:
            drive.append("--local")
        else:
            nxt: int | None = None
            ring: int | None = None  # the relay to the last stage's --ring listener
            # Who sends on each relay, so that what one process sends on several links at
            # once counts as one trip: the stage before (or the driver) connects to a
            # stage's listener, the first stage to the last one's ring, the driver to its
            # answer link.
            before = {b: f"{a}:{b}" for a, b in SPLITS[n]}
            first = f"0:{SPLITS[n][0][1]}"
            for a, b in reversed(SPLITS[n]):
                argv = [str(tools.worker), "--stage", "--model", str(model), "--layers",
                        f"{a}:{b}", "--listen", "127.0.0.1:0", *common]
                if nxt is not None:
                    argv += ["--next", f"127.0.0.1:{nxt}"]
                if direct:
                    argv += ["--direct"] if nxt is not None else ["--answers", "127.0.0.1:0"]
                if chain == "ring" and (nxt is None or a == 0):
                    argv += ["--ring", "127.0.0.1:0" if nxt is None else f"127.0.0.1:{ring}"]
                p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
                procs.append(p)
                line = p.stdout.readline() if p.stdout else ""
                if not line.startswith("listening "):
                    raise BenchError(f"stage {a}:{b} did not start: {line!r} "
                                     f"{p.stderr.read() if p.stderr else ''}")
                if direct and nxt is None:
                    answers = p.stdout.readline() if p.stdout else ""
                    if not answers.startswith("answers "):
                        raise BenchError(f"stage {a}:{b} did not say where it answers: "
                                         f"{answers!r}")
                    port, counter = relays.add(int(answers.split(":")[-1]), owner=f"{a}:{b}",
                                               client="driver")
                    drive += ["--answers", f"127.0.0.1:{port}"]
                    counters.append(counter)
                    if chain == "ring":
                        joins = p.stdout.readline() if p.stdout else ""
                        if not joins.startswith("ring "):
                            raise BenchError(f"stage {a}:{b} did not say where its ring is: "
                                             f"{joins!r}")
                        ring, counter = relays.add(int(joins.split(":")[-1]),
                                                   owner=f"{a}:{b}", client=first)
                        counters.append(counter)
                port = int(line.split(":")[-1])
                nxt, counter = relays.add(port, owner=f"{a}:{b}",
                                          client=before.get(a, "driver"))
                counters.append(counter)
            drive += ["--connect", f"127.0.0.1:{nxt}"]
        proc = subprocess.run(drive, capture_output=True, text=True, timeout=1800, check=False)
        if proc.returncode != 0:
            raise BenchError(f"`{' '.join(drive)}` exited {proc.returncode}: "
                             f"{proc.stderr.strip()[-2000:]}")
        for p in procs:
            p.wait(60)
        result: dict = json.loads(proc.stdout)
    finally:
        stop(procs)
    result["wire_bytes"] = sum(c.total for c in counters)
    result["round_trips"] = sum(c.round_trips for c in counters)
    return result


def measure_ours(tools: Tools, model: Path, n: int, a: argparse.Namespace, relays: Relays,
                 reference: dict | None, *, chain: str = "ring") -> dict:
    design = "ours" if n == 1 else CHAINS[chain]
    runs = [drive_ours(tools, model, n, a.prompt, a.steps, relays, chain=chain)
            for _ in range(a.reps)]
    for timed in runs:
        if reference is not None and timed["logits_fnv1a64"] != reference["logits_fnv1a64"]:
            raise BenchError(f"{design}@{n}: the reply digests differ from the full model's")
    ttft = statistics.median(r["prompt_seconds"] for r in runs)
    gen = [r["steps_per_s"] for r in runs]
    row = {"design": design, "processes": n,
           "prompt_tps": a.prompt / ttft,
           "gen_tps": statistics.median(gen),
           "gen_tps_stddev": statistics.stdev(gen) if len(gen) > 1 else 0.0,
           "ttft_s": ttft,
           "logits_fnv1a64": timed["logits_fnv1a64"],
           "identical_to_local": reference is None or
           timed["logits_fnv1a64"] == reference["logits_fnv1a64"]}
    if n >= 2:
        short = drive_ours(tools, model, n, 1, a.short_steps, relays, chain=chain)
        long = drive_ours(tools, model, n, 1, a.short_steps + a.bytes_steps, relays,
                          chain=chain)
        per = (long["wire_bytes"] - short["wire_bytes"]) / a.bytes_steps
        row["wire_bytes_per_gen_token"] = per
        row["round_trips_per_gen_token"] = (long["round_trips"] - short["round_trips"]) \
            / a.bytes_steps
        # What is not per token: nothing at load (each stage reads its own file), the
        # `end` handshake (a 48-byte frame each way per hop) at the close.
        row["load_wire_bytes"] = short["wire_bytes"] - per * (1 + a.short_steps)
        full = drive_ours(tools, model, n, 8, 4, relays, reply="all", check_local=True,
                          chain=chain)
        row["full_logits_identical"] = full["identical_to_local"]
        if full["identical_to_local"] is not True:
            raise BenchError(f"{design}@{n}: full logits differ from the full model")
        row["stage_stats"] = [s.get("stats") for s in timed.get("stages", [])]
    else:
        row["wire_bytes_per_gen_token"] = 0.0
        row["round_trips_per_gen_token"] = 0.0
        row["load_wire_bytes"] = 0.0
    return row


# -- llama.cpp's RPC ------------------------------------------------------------------------


def llama_bench(tools: Tools, model: Path, endpoints: list[str], n: int, prompt: int, gen: int,
                *, warmup: bool, reps: int, depth: int = 0) -> list[dict]:
    argv = [str(tools.llama_bench), "-m", str(model), "-t", str(tools.threads), "-p", str(prompt),
            "-n", str(gen), "-r", str(reps), "-o", "json", "-ub", str(tools.batch),
            "-fa", tools.flash_attn]
    if depth:
        argv += ["-d", str(depth)]
    if endpoints:
        argv += ["-ngl", "99", "--rpc", ",".join(endpoints), "-ts", tensor_split(n)]
    if not warmup:
        argv.append("--no-warmup")
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=1800, check=False)
    if proc.returncode != 0:
        raise BenchError(f"`{' '.join(argv)}` exited {proc.returncode}: "
                         f"{proc.stderr.strip()[-2000:]}")
    out: list[dict] = json.loads(proc.stdout)
    return out


def measure_rpc(tools: Tools, model: Path, n: int, a: argparse.Namespace,
                relays: Relays) -> dict:
    procs: list[subprocess.Popen] = []
    counters: list[Counter] = []
    endpoints: list[str] = []
    servers = 0 if n == 1 else n
    try:
        for _ in range(servers):
            port = free_port()
            p = subprocess.Popen([str(tools.rpc_server), "-H", "127.0.0.1", "-p", str(port), "-t",
                                  str(tools.threads)], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            procs.append(p)
            wait_port(port, p)
            # llama-bench writes to every server in turn: one process, one trip.
            rport, counter = relays.add(port, owner=f"rpc-server {len(procs)}",
                                        client="llama-bench")
            counters.append(counter)
            endpoints.append(f"127.0.0.1:{rport}")
        pp = llama_bench(tools, model, endpoints, n, a.prompt, 0, warmup=True, reps=a.reps)[0]
        # Generation after the prompt, as ours: -d puts the KV cache at the prompt's depth.
        tg = llama_bench(tools, model, endpoints, n, 0, a.steps, warmup=True, reps=a.reps,
                         depth=a.prompt)[0]
        row = {"design": "rpc" if servers else "llama.cpp in-process", "processes": n,
               "prompt_tps": pp["avg_ts"], "prompt_tps_stddev": pp["stddev_ts"],
               "gen_tps": tg["avg_ts"], "gen_tps_stddev": tg["stddev_ts"],
               "ttft_s": a.prompt / pp["avg_ts"],
               "tensor_split": tensor_split(n) if servers else None}
        if servers:
            def wire(steps: int) -> tuple[int, float]:
                before = (sum(c.total for c in counters), sum(c.round_trips for c in counters))
                llama_bench(tools, model, endpoints, n, 0, steps, warmup=False, reps=1)
                return (sum(c.total for c in counters) - before[0],
                        sum(c.round_trips for c in counters) - before[1])

            short = wire(a.short_steps)
            long = wire(a.short_steps + a.bytes_steps)
            per = (long[0] - short[0]) / a.bytes_steps
            row["wire_bytes_per_gen_token"] = per
            row["round_trips_per_gen_token"] = (long[1] - short[1]) / a.bytes_steps
            row["load_wire_bytes"] = short[0] - per * a.short_steps
        else:
            row["wire_bytes_per_gen_token"] = 0.0
            row["round_trips_per_gen_token"] = 0.0
            row["load_wire_bytes"] = 0.0
        return row
    finally:
        stop(procs)


def parse_cpus(text: str) -> set[int]:
    """`0`, `0-1`, `0,2`: the CPUs of --cpus."""
    cpus: set[int] = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, type=Path,
                    help="the consumer build: bin/worker, bin/llama-bench, bin/ggml-rpc-server")
    ap.add_argument("--model-dir", type=Path, default=Path("/tmp/patchctl-bench-models"))
    ap.add_argument("--type", default="q8_0", choices=["f16", "q8_0"])
    ap.add_argument("--n-embd", type=int, default=SHAPE["n-embd"],
                    help="the model's width (default 1024: about 0.5 B parameters); a "
                         "multiple of 128, heads of 64: 256 computes about a tenth as much per "
                         "token, which shows what the links cost each design at less compute")
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--steps", type=int, default=128)
    ap.add_argument("--short-steps", type=int, default=8)
    ap.add_argument("--bytes-steps", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=128,
                    help="our --batch and llama-bench -ub: the prompt goes through both designs "
                         "in chunks of this many tokens (ours streams them down the chain)")
    ap.add_argument("--reply", default="digest", choices=["all", "last", "digest"])
    ap.add_argument("--flash-attn", default="auto", choices=["auto", "on", "off"],
                    help="llama.cpp's flash attention for both designs (our --flash-attn, "
                         "llama-bench -fa); on one CPU thread at a depth of 512, off decodes "
                         "about 1.7 times as fast in both")
    ap.add_argument("--reps", type=int, default=3,
                    help="timed runs of ours (median) and llama-bench -r (mean)")
    ap.add_argument("--processes", default="1,2,3")
    ap.add_argument("--rounds", type=int, default=1,
                    help="measure every design this many times, in turn, and report the median "
                         "of the rounds: a drift of the machine's speed then reaches all designs")
    ap.add_argument("--cpus", help="run everything (this process, its relay, every stage, "
                    "server and driver of both designs) on these CPUs, e.g. 0 or 0-1: "
                    "shows what the processes' placement on the cores costs")
    ap.add_argument("--link", type=parse_profile, action="append", metavar="RTT_MS:MBIT",
                    help="a link profile, repeatable, measured in turn: a network modelled "
                         "behind every relay, for both designs, each direction paced at MBIT "
                         "megabit/s and delayed by RTT_MS / 2 (e.g. 1:1000 a LAN, 20:100 a "
                         "WAN), or `loopback` (no model); default: loopback only")
    ap.add_argument("--relayed", action="store_true",
                    help="also measure our chain with every stage relaying the reply back up "
                         "(without --direct): what the last stage answering the driver saves")
    ap.add_argument("--direct", action="store_true",
                    help="also measure our chain as a direct chain without the ring (the "
                         "driver sends every step): what feeding the tokens back saves")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    if a.n_embd < 128 or a.n_embd % 128:
        ap.error(f"--n-embd takes a positive multiple of 128, not {a.n_embd}")
    links: list[Link | None] = a.link or [None]
    labels = [profile_label(lk) for lk in links]
    if len(set(labels)) != len(labels):
        ap.error(f"--link: two profiles with the same round trip ({', '.join(labels)})")
    b = a.build.resolve()
    tools = Tools(b / "bin" / "worker", b / "bin" / "llama-bench",
                  b / "bin" / "ggml-rpc-server", a.threads, a.batch, a.reply, a.flash_attn)
    for t in (tools.worker, tools.llama_bench, tools.rpc_server):
        if not t.exists():
            print(f"pipeline_vs_rpc: {t} is missing (see the docstring for the build)",
                  file=sys.stderr)
            return 3
    if a.cpus:
        # children inherit the affinity: the same placement for both designs
        os.sched_setaffinity(0, parse_cpus(a.cpus))
    load_start = loadavg()
    rows: list[dict] = []
    targets: dict[str, dict[str, object]] = {}
    loads: dict[str, list[list[float] | None]] = {}
    fidelity: dict[str, dict[str, float]] = {}
    try:
        relay = relay_overhead()
        log(f"relay: {relay}")
        model, sha = write_model(tools, a.model_dir, a.type, a.n_embd)
        reference: dict | None = None
        for i, link in enumerate(links):
            at = profile_label(link)
            log(f"profile {at}: {link or 'plain loopback'}")
            loads[at] = [loadavg()]
            if link is not None:
                fidelity[at] = link_fidelity(link)
                log(f"link {at}: {fidelity[at]}")
            relays = Relays(link)
            try:
                rounds: list[list[dict]] = []
                for k in range(a.rounds):
                    done: list[dict] = []
                    for n in [int(x) for x in a.processes.split(",")]:
                        if n == 1 and i > 0:
                            continue  # crosses no link: measured with the first profile
                        if n == 1 and reference is None:
                            reference = drive_ours(tools, model, 1, a.prompt, a.steps, relays)
                        designs = ["ring", "rpc"]
                        if n > 1:
                            designs += (["direct"] if a.direct else []) + \
                                (["relayed"] if a.relayed else [])
                        if k % 2:
                            designs.reverse()  # neither design always goes first
                        for design in designs:
                            log(f"{at} round {k + 1}: {design}@{n}")
                            done.append(measure_rpc(tools, model, n, a, relays)
                                        if design == "rpc" else
                                        measure_ours(tools, model, n, a, relays, reference,
                                                     chain=design))
                            log(f"  {done[-1]['gen_tps']:.2f} gen t/s, "
                                f"{done[-1]['round_trips_per_gen_token']:.1f} round trips "
                                f"per generated token")
                    rounds.append(done)
            finally:
                relays.close()
            profile_rows = [{"profile": at, **r} for r in combine(rounds)]
            rows += profile_rows
            targets.update(evaluate(profile_rows, link))
            loads[at].append(loadavg())
    except (BenchError, subprocess.SubprocessError, OSError, StopIteration) as e:
        print(f"pipeline_vs_rpc: {e}", file=sys.stderr)
        return 3
    result = {"schema": "patchctl.bench-pipeline-vs-rpc/2",
              "model": {"name": model.name, "bytes": model.stat().st_size, "sha256": sha,
                        "shape": shape(a.n_embd), "seed": SEED, "type": a.type},
              "params": {"prompt": a.prompt, "steps": a.steps, "threads": a.threads,
                         "flash_attn": a.flash_attn,
                         "batch": a.batch, "reply": a.reply, "reps": a.reps,
                         "rounds": a.rounds,
                         "bytes_steps": a.bytes_steps, "short_steps": a.short_steps,
                         "splits": {str(k): v for k, v in SPLITS.items()},
                         "cpus": sorted(os.sched_getaffinity(0)),
                         "links": [None if lk is None else {"rtt_ms": lk.rtt_ms,
                                                            "mbit": lk.mbit} for lk in links],
                         "load_start": load_start, "load_end": loadavg(),
                         "load_per_profile": loads},
              "relay": relay, "link_fidelity": fidelity, "rows": rows, "targets": targets,
              "machine": machine_facts()}
    return emit(result, a.out, a.json, render)


if __name__ == "__main__":
    sys.exit(main())
