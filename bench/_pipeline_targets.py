"""bench/pipeline_vs_rpc.py's result: its targets, every round's rows combined into one
row per design and process count, each target's value and verdict, and the table it prints.
"""

from __future__ import annotations

import statistics

from _relay import Link, profile_label

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
            values[f"wire-bytes/rpc@{n}/{at}"] = (
                ours["wire_bytes_per_gen_token"] / rpc["wire_bytes_per_gen_token"]
            )
        if ours and local:
            values[f"gen-tps/local@{n}"] = ratio(ours, local, "gen_tps")
        if ours and link is None:
            values[f"load-wire-bytes@{n}"] = ours["load_wire_bytes"]
    out: dict[str, dict[str, object]] = {}
    table = {**TARGETS, **(LOCAL_TARGETS if link is None else {})}
    for n in (2, 3):
        for pattern, (what, limit, sense) in table.items():
            key = pattern.format(n=n, at=at)
            if key.startswith("gen-tps/rpc@") and link is not None and link.rtt_ms >= WAN_RTT_MS:
                limit = WAN_GEN_TPS
            v = values.get(key)
            ok = None if v is None else (v >= limit if sense == "min" else v <= limit)
            out[key] = {
                "what": f"{what}, {n} processes, {at}",
                "limit": limit,
                "sense": sense,
                "value": None if v is None else round(v, 4),
                "pass": ok,
            }
    return out


def render(result: dict) -> str:
    def fidelity(lk: Link | None) -> str:
        f = result.get("link_fidelity", {}).get(profile_label(lk))
        return (
            ""
            if f is None
            else (
                f" (4 KiB round trip {f['measured_rtt_ms']:.2f} ms, "
                f"the model's {f['model_rtt_ms']:.2f})"
            )
        )

    p = result["params"]
    m = result["machine"]
    out = [
        f"pipeline vs llama.cpp RPC: {result['model']['name']} "
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
        + "; ".join(
            f"{profile_label(lk)}: {lk or 'plain loopback'}{fidelity(lk)}"
            for lk in (None if q is None else Link(**q) for q in p["links"])
        ),
        "",
        f"{'profile':9} {'design':22} {'procs':>5} {'prompt t/s':>11} {'gen t/s':>9} "
        f"{'TTFT s':>8} {'wire B/gen tok':>15} {'RT/gen tok':>10} {'load wire B':>13}",
        f"(t/s: median of {p['reps']} runs for ours, llama-bench's mean of -r {p['reps']}; "
        f"the median of {p.get('rounds', 1)} round(s) of every design in turn, "
        f"the first design alternating)",
    ]
    for r in result["rows"]:
        out.append(
            f"{r['profile']:9} {r['design']:22} {r['processes']:>5} "
            f"{r['prompt_tps']:>11.1f} {r['gen_tps']:>9.2f} {r['ttft_s']:>8.2f} "
            f"{r['wire_bytes_per_gen_token']:>15,.0f} "
            f"{r['round_trips_per_gen_token']:>10.1f} {r['load_wire_bytes']:>13,.0f}"
        )
    out.append("")
    out.append(
        f"{'target':<30} {'value':>10} {'limit':>10}  result"
        + ("  (a ratio: the median of the rounds' ratios)" if p.get("rounds", 1) > 1 else "")
    )
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
        same = [
            next(
                r
                for r in done
                if (r["design"], r["processes"]) == (first["design"], first["processes"])
            )
            for done in rounds
        ]
        row = dict(first)
        for key in ("prompt_tps", "gen_tps", "ttft_s"):
            row[key] = statistics.median(r[key] for r in same)
            row[f"{key}_rounds"] = [r[key] for r in same]
        rows.append(row)
    return rows
