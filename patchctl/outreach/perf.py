"""A per-prefix performance record (``scripts/perf-prefixes.sh``: llama-bench rounds and
llama-perplexity at the pin and after each patch) as first-screen lines for one patch.

Every figure comes from the record's own metrics, with the spread of its rounds and what
the run cannot show (its threads, backend and model are read from the record too).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

_PPL = re.compile(r"Final estimate: PPL = ([\d.]+) \+/- ([\d.]+)")


def lines(metrics: dict[str, Any], position: int) -> list[str]:
    """The lines for the patch at ``position`` (1-based): llama-bench per test, the
    median and the min-max of each round at the pin, before the patch and after it, the
    perplexity, and what the run cannot show. Empty when the metrics are of another shape."""
    labels = metrics.get("labels")
    runs = metrics.get("runs")
    if not isinstance(labels, list) or not isinstance(runs, list) or len(labels) <= position:
        return []
    here = str(labels[position])
    shown = list(dict.fromkeys(["pin" if "pin" in labels else str(labels[0]),
                                str(labels[position - 1]), here]))
    tests = metrics.get("tests")
    tests = tests if isinstance(tests, dict) else {}
    bench = []
    for test in sorted(tests):
        parts = []
        for label in shown:
            rate = [float(r["avg_ts"]) for r in runs if isinstance(r, dict)
                    and r.get("label") == label and _test(r) == test and "avg_ts" in r]
            median = (tests[test].get(label) or {}).get("median_tps")
            if rate and median is not None:
                parts.append(f"{median} ({min(rate):.0f}-{max(rate):.0f})")
        if len(parts) == len(shown):
            bench.append(f"{test} " + " / ".join(parts))
    rounds = len({r.get("round") for r in runs if isinstance(r, dict)})
    out = [f"llama-bench t/s, median (min-max of {rounds} rounds) at {' / '.join(shown)}: "
           + "; ".join(bench)] if bench else []
    ppl = metrics.get("perplexity")
    ppl = ppl if isinstance(ppl, dict) else {}
    found = {k: m.groups() for k, v in ppl.items() if (m := _PPL.search(str(v)))}
    same = metrics.get("perplexity_identical")
    if here in found:
        value, err = found[here]
        everywhere = isinstance(same, list) and set(same) >= set(str(x) for x in labels)
        out.append(f"llama-perplexity {value} +/- {err} at {here}"
                   + (", identical at the pin and every prefix" if everywhere else ""))
    if out:
        out[-1] += "; " + _limits(runs)
    return out


def _test(run: dict[str, Any]) -> str:
    return f"pp{run.get('n_prompt')}" if run.get("n_prompt") else f"tg{run.get('n_gen')}"


def _limits(runs: Sequence[Any]) -> str:
    """What the run cannot show, from how it ran."""
    first = next((r for r in runs if isinstance(r, dict)), {})
    model = str(first.get("model_filename", "")).rsplit("/", 1)[-1]
    return (f"cannot show other backends, thread counts or a trained model: "
            f"{first.get('backends')}, {first.get('n_threads')} threads, {model}")
