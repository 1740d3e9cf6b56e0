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
import hashlib
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import BenchError, emit, loadavg, machine_facts
from _relay import (
    Counter,
    Link,
    Relays,
    echo_rtt,
    link_fidelity,
    parse_profile,
    profile_label,
    start_echo,
)

# About 0.5 B parameters: 24 x (4 x 1024^2 / (1, 2, 2, 1) + 3 x 1024 x 4864) + 2 x 32000 x 1024.
SHAPE = {"n-layer": 24, "n-embd": 1024, "n-head": 16, "n-head-kv": 8, "n-ff": 4864,
         "n-vocab": 32000}
SEED = 26
SPLITS = {1: [(0, 24)], 2: [(0, 12), (12, 24)], 3: [(0, 8), (8, 16), (16, 24)]}


def shape(n_embd: int) -> dict[str, int]:
    """SHAPE at another width (--n-embd): heads of 64, half as many KV heads, the
    feed-forward as wide relative to it; the same layers and vocabulary. A narrower
    model computes less per token and leaves the links' share of it larger;
    1024 gives SHAPE itself."""
    return {**SHAPE, "n-embd": n_embd, "n-head": n_embd // 64, "n-head-kv": n_embd // 128,
            "n-ff": SHAPE["n-ff"] * n_embd // SHAPE["n-embd"]}


def model_label(n_embd: int) -> str:
    """`0.5b` for SHAPE, `e256` for --n-embd 256: the model file's name."""
    return "0.5b" if n_embd == SHAPE["n-embd"] else f"e{n_embd}"


# target: (what, limit, "min" or "max"); {n} processes, {at} the link profile
TARGETS = {
    "gen-tps/rpc@{n}/{at}": ("generation tokens/s, ours / llama.cpp RPC", 1.0, "min"),
    "ttft/rpc@{n}/{at}": ("time to first token, ours / llama.cpp RPC", 1.0, "max"),
    # The prompt streams through our chain (state parts, protocol 3); RPC gets the same
    # micro-batch (-ub = our --batch).
    "prompt-tps/rpc@{n}/{at}": ("prompt tokens/s, ours / llama.cpp RPC", 1.1, "min"),
    "wire-bytes/rpc@{n}/{at}": ("wire bytes per generated token, ours / RPC", 0.1, "max"),
}
# Where a link's latency shows, the chain's fewer round trips per token must pay twice over.
WAN_RTT_MS, WAN_GEN_TPS = 20.0, 2.0
LOCAL_TARGETS = {  # loopback only: the full model in one process crosses no link
    "gen-tps/local@{n}": ("generation tokens/s, ours / in-process full model", 0.9, "min"),
    # Bytes of a run that are not per token (load, setup, close): no weights, under 1 KiB.
    "load-wire-bytes@{n}": ("bytes over the wire not per token (load), ours", 1024, "max"),
}


def log(msg: str) -> None:
    print(f"[pipeline_vs_rpc] {msg}", file=sys.stderr, flush=True)


# -- the byte-counting relay ----------------------------------------------------------------



def relay_overhead() -> dict[str, float]:
    """The relay's own cost (without a --link model), against a local echo: round trip
    of 64 bytes direct and relayed, and the relayed throughput of one 256 MiB transfer
    each way."""
    relays = Relays()
    srv = start_echo()
    port = srv.getsockname()[1]
    rport, _ = relays.add(port)

    def bulk(p: int, total: int = 256 << 20) -> float:
        with socket.create_connection(("127.0.0.1", p)) as s:
            chunk = b"\0" * (1 << 20)
            t0 = time.perf_counter()
            done = threading.Event()

            def drain() -> None:
                got = 0
                while got < total:
                    got += len(s.recv(1 << 20))
                done.set()

            threading.Thread(target=drain, daemon=True).start()
            for _ in range(total // len(chunk)):
                s.sendall(chunk)
            done.wait(120)
            return total / (time.perf_counter() - t0)

    out = {"rtt_direct_us": statistics.fmean(echo_rtt(port, 2000)) * 1e6,
           "rtt_relayed_us": statistics.fmean(echo_rtt(rport, 2000)) * 1e6,
           "bulk_relayed_MBps": bulk(rport) / 1e6}
    srv.close()
    relays.close()
    return out


# -- processes ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    t_end = time.monotonic() + timeout
    while time.monotonic() < t_end:
        if proc.poll() is not None:
            raise BenchError(f"`{' '.join(proc.args)}` exited {proc.returncode} before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise BenchError(f"nothing listens on {port} after {timeout} s")


def stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


@dataclass
class Tools:
    worker: Path
    llama_bench: Path
    rpc_server: Path
    threads: int
    batch: int
    reply: str
    flash_attn: str = "auto"  # llama.cpp's, for both designs


def write_model(tools: Tools, model_dir: Path, kind: str,
                n_embd: int = SHAPE["n-embd"]) -> tuple[Path, str]:
    """The seeded model (written once; the sha256 proves a rebuild is the same bytes)."""
    model_dir.mkdir(parents=True, exist_ok=True)
    model = model_dir / f"rand-llama-{model_label(n_embd)}-{kind}-seed{SEED}.gguf"
    if not model.exists():
        tmp = model.with_suffix(".tmp")
        argv = [str(tools.worker), "--write-tiny-model", str(tmp), "--seed", str(SEED), "--type",
                kind]
        for k, v in shape(n_embd).items():
            argv += [f"--{k}", str(v)]
        log(f"writing {model.name}")
        subprocess.run(argv, check=True)
        tmp.rename(model)
    h = hashlib.sha256()
    with model.open("rb") as f:
        while chunk := f.read(1 << 24):
            h.update(chunk)
    return model, h.hexdigest()


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


def tensor_split(n: int) -> str:
    """-ts making llama.cpp give RPC server k exactly our stage k's layers: layer il goes to
    the first device whose cumulative share exceeds il / (n_layer + 1)."""
    ends = [b for _, b in SPLITS[n]]
    cum = [(e - 0.5) / (SHAPE["n-layer"] + 1) for e in ends[:-1]] + [1.0]
    shares = [cum[0]] + [cum[i] - cum[i - 1] for i in range(1, n)]
    return "/".join(f"{s * 50:g}" for s in shares)


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


# -- the result -----------------------------------------------------------------------------


def ratio(a: dict, b: dict, key: str) -> float:
    """a's speed over b's. With rounds, the median of each round's ratio: the two were
    measured one after the other in every round, so a drift of the machine's speed
    between rounds (this machine: the same run 28 to 44 ms per token within minutes)
    reaches both sides of each ratio instead of one side of the median."""
    pairs = list(zip(a.get(f"{key}_rounds", []), b.get(f"{key}_rounds", []), strict=True))
    if not pairs:
        return float(a[key] / b[key])
    return statistics.median(x / y for x, y in pairs)


def evaluate(rows: list[dict], link: Link | None) -> dict[str, dict[str, object]]:
    """The targets of one profile's rows, named by process count and profile."""
    at = profile_label(link)
    by = {(r["design"], r["processes"]): r for r in rows}
    values: dict[str, float] = {}
    local = by.get(("ours", 1))
    for n in (2, 3):
        ours, rpc = by.get(("ours", n)), by.get(("rpc", n))
        if ours and rpc:
            values[f"gen-tps/rpc@{n}/{at}"] = ratio(ours, rpc, "gen_tps")
            values[f"ttft/rpc@{n}/{at}"] = ratio(ours, rpc, "ttft_s")
            values[f"prompt-tps/rpc@{n}/{at}"] = ratio(ours, rpc, "prompt_tps")
            values[f"wire-bytes/rpc@{n}/{at}"] = (ours["wire_bytes_per_gen_token"]
                                                  / rpc["wire_bytes_per_gen_token"])
        if ours and local:
            values[f"gen-tps/local@{n}"] = ratio(ours, local, "gen_tps")
        if ours and link is None:
            values[f"load-wire-bytes@{n}"] = ours["load_wire_bytes"]
    out: dict[str, dict[str, object]] = {}
    table = {**TARGETS, **(LOCAL_TARGETS if link is None else {})}
    for n in (2, 3):
        for pattern, (what, limit, sense) in table.items():
            key = pattern.format(n=n, at=at)
            if key.startswith("gen-tps/rpc@") and link is not None and \
                    link.rtt_ms >= WAN_RTT_MS:
                limit = WAN_GEN_TPS
            v = values.get(key)
            ok = None if v is None else (v >= limit if sense == "min" else v <= limit)
            out[key] = {"what": f"{what}, {n} processes, {at}", "limit": limit, "sense": sense,
                        "value": None if v is None else round(v, 4), "pass": ok}
    return out


def render(result: dict) -> str:
    def fidelity(lk: Link | None) -> str:
        f = result.get("link_fidelity", {}).get(profile_label(lk))
        return "" if f is None else (f" (4 KiB round trip {f['measured_rtt_ms']:.2f} ms, "
                                     f"the model's {f['model_rtt_ms']:.2f})")

    p = result["params"]
    m = result["machine"]
    out = [f"pipeline vs llama.cpp RPC: {result['model']['name']} "
           f"({result['model']['bytes'] / 1e6:.0f} MB, sha256 {result['model']['sha256'][:16]}), "
           f"{p['prompt']}-token prompt, {p['steps']} steps, {p['threads']} thread(s) per process, "
           f"batch {p['batch']}, our reply mode {p['reply']}, "
           f"flash attention {p.get('flash_attn', 'auto')}",
           f"machine: {m['nproc']} CPUs ({m.get('cpu')}), run on CPUs {p.get('cpus')}, "
           f"load {p['load_start']} -> {p['load_end']}; "
           f"relay: {result['relay']['rtt_direct_us']:.0f} us direct / "
           f"{result['relay']['rtt_relayed_us']:.0f} us relayed round trip, "
           f"{result['relay']['bulk_relayed_MBps']:.0f} MB/s relayed bulk",
           "profiles (the link modelled behind every relay): "
           + "; ".join(f"{profile_label(lk)}: {lk or 'plain loopback'}{fidelity(lk)}"
                       for lk in (None if q is None else Link(**q) for q in p["links"])),
           "",
           f"{'profile':9} {'design':22} {'procs':>5} {'prompt t/s':>11} {'gen t/s':>9} "
           f"{'TTFT s':>8} {'wire B/gen tok':>15} {'RT/gen tok':>10} {'load wire B':>13}",
           f"(t/s: median of {p['reps']} runs for ours, llama-bench's mean of -r {p['reps']}; "
           f"the median of {p.get('rounds', 1)} round(s) of every design in turn, "
           f"the first design alternating)"]
    for r in result["rows"]:
        out.append(f"{r['profile']:9} {r['design']:22} {r['processes']:>5} "
                   f"{r['prompt_tps']:>11.1f} {r['gen_tps']:>9.2f} {r['ttft_s']:>8.2f} "
                   f"{r['wire_bytes_per_gen_token']:>15,.0f} "
                   f"{r['round_trips_per_gen_token']:>10.1f} {r['load_wire_bytes']:>13,.0f}")
    out.append("")
    out.append(f"{'target':<30} {'value':>10} {'limit':>10}  result"
               + ("  (a ratio: the median of the rounds' ratios)"
                  if p.get("rounds", 1) > 1 else ""))
    for key, t in result["targets"].items():
        val = "-" if t["value"] is None else f"{t['value']:.3f}"
        lim = ("<= " if t["sense"] == "max" else ">= ") + str(t["limit"])
        res = "n/a" if t["pass"] is None else ("PASS" if t["pass"] else "FAIL")
        out.append(f"{key:<30} {val:>10} {lim:>10}  {res}")
    return "\n".join(out)


def combine(rounds: list[list[dict]]) -> list[dict]:
    """One row per design and process count: the median of each speed over the rounds, the
    rest from the first round; each round's speeds are kept."""
    if len(rounds) == 1:
        return rounds[0]
    rows = []
    for first in rounds[0]:
        # The same design and process count in every round (rounds differ in their order).
        same = [next(r for r in done if (r["design"], r["processes"]) ==
                     (first["design"], first["processes"])) for done in rounds]
        row = dict(first)
        for key in ("prompt_tps", "gen_tps", "ttft_s"):
            row[key] = statistics.median(r[key] for r in same)
            row[f"{key}_rounds"] = [r[key] for r in same]
        rows.append(row)
    return rows


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
