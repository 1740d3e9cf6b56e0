"""bench/_pipeline_targets.py, bench/pipeline_vs_rpc.py's targets over rounds: every ratio
pairs the two designs round by round, so a drift of the machine between rounds cannot
decide it."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from _pipeline_targets import combine, evaluate


def row(design: str, n: int, gen: float, ttft: float = 1.0) -> dict:
    return {"design": design, "processes": n, "gen_tps": gen, "prompt_tps": 512 / ttft,
            "ttft_s": ttft, "wire_bytes_per_gen_token": 1.0, "load_wire_bytes": 0.0}


def test_a_ratio_is_the_median_of_the_rounds_ratios() -> None:
    # The machine ran at 30, then 20 (slow), then 40 tokens/s. Ours beat RPC by 5 % in
    # every round; the medians of each design alone (ours 31.5, RPC 30) would also say
    # 1.05 here, but not when the slow round falls on one design's median.
    rounds = [[row("ours", 2, 31.5), row("rpc", 2, 30.0)],
              [row("rpc", 2, 20.0), row("ours", 2, 21.0)],   # the order alternates
              [row("ours", 2, 42.0), row("rpc", 2, 40.0)]]
    rows = combine(rounds)
    assert [(r["design"], r["gen_tps_rounds"]) for r in rows] == \
        [("ours", [31.5, 21.0, 42.0]), ("rpc", [30.0, 20.0, 40.0])]
    assert evaluate(rows, None)["gen-tps/rpc@2/loopback"]["value"] == 1.05

    # A drift that lands on one design's median: ours 30, 40, 29.4; RPC 28, 38, 44.
    # Medians alone: 30 / 38 = 0.79, a loss; round by round ours won twice (1.07, 1.05)
    # and lost once (0.67): the median ratio is 1.05.
    rounds = [[row("ours", 2, 30.0), row("rpc", 2, 28.0)],
              [row("rpc", 2, 38.0), row("ours", 2, 40.0)],
              [row("ours", 2, 29.4), row("rpc", 2, 44.0)]]
    target = evaluate(combine(rounds), None)["gen-tps/rpc@2/loopback"]
    assert target["value"] == round(40.0 / 38.0, 4)
    assert target["pass"] is True


def test_one_round_is_the_plain_ratio() -> None:
    rows = combine([[row("ours", 2, 30.0, ttft=2.0), row("rpc", 2, 40.0, ttft=4.0)]])
    targets = evaluate(rows, None)
    assert targets["gen-tps/rpc@2/loopback"]["value"] == 0.75
    assert targets["ttft/rpc@2/loopback"]["value"] == 0.5
    assert targets["gen-tps/rpc@3/loopback"]["value"] is None
