"""The verify bench's verdicts and its table: ratios against the targets (bench/README.md).

Every ratio comes from one run's medians, side by side, so it holds on a loaded machine
better than absolute times do.
"""

from __future__ import annotations

# name -> (what, limit). A ratio passes when value <= limit.
TARGETS = {
    "verify/quilt@20": ("patchctl verify / quilt push+pop, 20 patches", 0.15),
    "verify/loop@20": ("patchctl verify / per-patch apply+reverse loop, 20 patches", 0.6),
    "verify/quilt@200": ("patchctl verify / quilt push+pop, 200 patches", 0.05),
    "verify/loop@200": ("patchctl verify / per-patch apply+reverse loop, 200 patches", 0.2),
    "verify200/verify20": ("patchctl verify 200 patches / 20 patches", 10.0),
    "verify/quilt@2000": ("patchctl verify / quilt push+pop, 2,000 patches", 0.05),
    "verify/loop@2000": ("patchctl verify / per-patch apply+reverse loop, 2,000 patches", 0.2),
    "verify/floor@2000": ("patchctl verify / git's floor (read-tree, apply, apply -R, "
                          "write-tree: a process each), 2,000 patches", 1.5),
    "verify2000/verify200": ("patchctl verify 2,000 patches / 200 patches", 10.0),
}
HELP_LIMIT = 0.1  # seconds, `patchctl --help`

HELP_ROWS = {
    "help": "patchctl --help",
    "python -c pass": "interpreter start (python -c pass)",
    "import patchctl.cli": "python -c 'import patchctl.cli'",
    "import verify path": "python -c 'import <verify's modules>'",
    "help, no .pyc": "patchctl --help, PYTHONDONTWRITEBYTECODE=1",
}



def ratio(a: float, b: float) -> float:
    return a / b if b else float("inf")


def evaluate(suite_medians: dict[str, float]) -> dict[str, dict[str, object]]:
    m = suite_medians

    def r(a: str, b: str) -> float | None:
        return ratio(m[a], m[b]) if a in m and b in m else None

    values: dict[str, float | None] = {}
    for n in (20, 200, 2000):
        values[f"verify/loop@{n}"] = r(f"verify@{n}", f"loop@{n}")
        values[f"verify/quilt@{n}"] = r(f"verify@{n}", f"quilt@{n}")
    values["verify/floor@2000"] = r("verify@2000", "floor@2000")
    values["verify200/verify20"] = r("verify@200", "verify@20")
    values["verify2000/verify200"] = r("verify@2000", "verify@200")
    out = {}
    for key, (what, limit) in TARGETS.items():
        v = values.get(key)
        out[key] = {"what": what, "value": None if v is None else round(v, 4), "limit": limit,
                    "pass": None if v is None else v <= limit}
    return out


# -- output ---------------------------------------------------------------------------------


def fmt_s(x: float | None) -> str:
    return "-" if x is None else (f"{x * 1000:.1f} ms" if x < 1 else f"{x:.2f} s")


def verdict(t: dict[str, object]) -> str:
    if t["pass"] is None:
        return "n/a"
    return "PASS" if t["pass"] else "FAIL"


def render_table(result: dict) -> str:
    out: list[str] = []
    p = result["params"]
    out.append(f"patchctl verify benchmark: median of {p['reps']} interleaved runs after "
               f"{p['warmup']} warm-up (quilt: {p['quilt_reps']} at 20 patches, "
               f"{p['quilt_reps_200']} at 200 and 2,000, no warm-up; the per-patch loop: "
               f"{p['loop_reps_2000']} at 2,000)")
    m = result["machine"]
    t = result["tools"]
    out.append(f"machine: {m['nproc']} CPUs, load {m.get('loadavg_start')} -> "
               f"{m.get('loadavg_end')}; python {m['python']}; {t.get('git')}; "
               f"quilt {t.get('quilt') or 'missing'}; {t.get('patchctl')}")
    src = t.get("patchctl_source") or {}
    if src:
        dirty = ", ".join(src["uncommitted"]) or "none"
        out.append(f"patchctl source: {src['commit'][:12]}, uncommitted: {dirty}")
    for name, s in result["suites"].items():
        f = s["facts"]
        out.append("")
        out.append(f"== {name}: {f['upstream_files']} files at {s['pin'][:12]}, "
                   f"{f['files_touched']} files / {f['hunks']} hunks in {f['patches']} patches "
                   f"(setup {f['setup_seconds']} s, not timed)")
        med = s["medians"]
        rows = [
            ("patchctl verify --upstream REPO", "verify"),
            ("  the same, nothing parsed before", "cold"),
            ("(a) per-patch apply, then apply -R", "loop"),
            ("(b) quilt push -a --fuzz=0; pop -a", "quilt"),
            ("floor: read-tree, apply, apply -R, write-tree", "floor"),
        ]
        w = 44
        sizes = s["sizes"]
        out.append(f"{'':<{w}}" + "".join(f" {f'{n} patches':>14}" for n in sizes))
        for label, key in rows:
            out.append(f"{label:<{w}}" + "".join(f" {fmt_s(med.get(f'{key}@{n}')):>14}"
                                                 for n in sizes))
        out.append(f"{'  verify / floor':<{w}}" + "".join(
            f" {ratio(med[f'verify@{n}'], med[f'floor@{n}']):>13.2f}x" for n in sizes))
        for n in sizes:
            v = s["verify_report"][str(n)]
            parts = f" in {v['parts']} parts" if v.get("parts", 1) > 1 else ""
            out.append(f"  verify@{n}: {v['mode']}{parts}, {v['git_calls']} git calls, "
                       f"{fmt_s(v['in_process_seconds'])} in-process (self-reported, one warm run)")
        rel = s["relative_project_check"]
        if not rel["ok"]:
            out.append(f"  NOTE: `patchctl verify` from inside the project (-C .) exits "
                       f"{rel['exit']}: {rel['first_failure']}; timed with -C <absolute dir>")
        out.append(f"{'target':<44} {'value':>8} {'limit':>8}  result")
        for key, tg in s["targets"].items():
            val = "-" if tg["value"] is None else f"{tg['value']:.3f}"
            out.append(f"{key:<44} {val:>8} {'<= ' + str(tg['limit']):>8}  {verdict(tg)}")
    h = result["help"]
    out.append("")
    out.append("== patchctl --help (and what it is made of)")
    for key, label in HELP_ROWS.items():
        if key in h["medians"]:
            out.append(f"  {label:<44} {fmt_s(h['medians'][key]):>10}")
    own = h["medians"]["help"] - h["medians"]["python -c pass"]
    out.append(f"  {'patchctl --help minus interpreter start':<44} {fmt_s(own):>10}")
    tg = h["target"]
    out.append(f"{'help seconds':<44} {tg['value']:>8.3f} {'<= ' + str(tg['limit']):>8}  "
               f"{verdict(tg)}")
    s = result["summary"]
    out.append("")
    out.append(f"targets: {s['passed']} pass, {s['failed']} fail, {s['not_applicable']} n/a; "
               f"total {result['seconds']:.1f} s")
    if s["failed_targets"]:
        out.append("failing: " + ", ".join(s["failed_targets"]))
    return "\n".join(out) + "\n"
