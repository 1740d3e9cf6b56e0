"""Replay a real downstream's own llama.cpp pin bumps through `patchctl rebase-pin`.

For each bump of the downstream's pin (ollama's, read from its history: see
replay_history.py) the queue before it is imported into a fresh patchctl project at the
pin before, and moved to the pin after as a person would: a real `rebase-pin NEW
--drop-upstream`, each stop resolved with the maintainers' own version of that patch
(same subject; one they dropped is dropped) and `--continue` (replay_drive.py). The
same inputs go through `git am -3` on the new pin, each stop resolved the same way.

Measured per bump and in total: stops met (patchctl, git am -3) and --check's count of
them beforehand (conflicts to resolve, and waiting); the confirmations a stop took
(`--continue --widen-scope`: its resolution reaches files outside ``Scope:``) and, apart,
the hand edits it needed beyond the resolution; why each stop stopped
(replay_classify.py); for every patch patchctl moved without a person, whether it equals
the maintainers' version (same tree), differs, or they dropped it; and of the patches the
maintainers dropped at the bump, how many `--drop-upstream` dropped too (proven in the
tree), how many it kept as `superseded?`, stopped on, or carried on.

    PATCHCTL_OLLAMA=<ollama clone or mirror> PATCHCTL_LLAMA_CPP=<llama.cpp clone or mirror> \\
        python bench/replay.py [--bumps 10] [--since DATE] [--until 2025-04-01] [--json]
    patchctl record --name bench-replay-ollama -- python bench/replay.py --json

Without the two variables it says so in one line and exits 0 (skipped).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import BenchError, find_patchctl, git, init_bare, machine_facts
from replay_classify import VERDICTS, compare_moves
from replay_drive import DOUBTED, drive_am, drive_patchctl, patchctl_json, touched_paths
from replay_history import Bump, bumps
from replay_proc import call

from patchctl.model.grades import APPLIES
from patchctl.rebase.classify import CLASSES, OTHER

SCHEMA = "patchctl.bench.replay/1"
OLLAMA_TIP = "fb30760996871fa9460115c753afd2c60d4ab0f7"
LLAMA_URL = "https://github.com/ggml-org/llama.cpp"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def series_names(project: Path) -> list[str]:
    lines = (project / "stack" / "series").read_text().splitlines()
    return [ln.split()[0] for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]


def make_project(
    patchctl: Path, root: Path, upstream: Path, bump: Bump
) -> tuple[Path, dict[str, str], list[str]]:
    """A project at the old pin holding the queue before the bump (`patchctl import` of it
    as a quilt series); its patch names -> the queue's, and the queue files not imported."""
    queue = root / "queue"
    queue.mkdir()
    for p in bump.before:
        (queue / p.name).write_bytes(p.data)
    (queue / "series").write_text("".join(f"{p.name}\n" for p in bump.before))
    project = root / "project"
    project.mkdir()
    call(
        [
            patchctl,
            "init",
            "--upstream",
            upstream,
            "--pin",
            bump.old,
            "--name",
            "llama.cpp",
            "--url",
            LLAMA_URL,
        ],
        cwd=project,
    )
    done = call([patchctl, "import", queue, "--upstream", upstream], cwd=project, check=False)
    left_out = []
    if done.returncode != 0:  # all or nothing: then one at a time, keeping what applies
        for p in bump.before:
            one = root / "one" / p.name
            one.mkdir(parents=True)
            shutil.copyfile(queue / p.name, one / p.name)
            (one / "series").write_text(f"{p.name}\n")
            if (
                call(
                    [patchctl, "import", one, "--upstream", upstream], cwd=project, check=False
                ).returncode
                != 0
            ):
                left_out.append(p.name)
    names = series_names(project)
    kept = [p.name for p in bump.before if p.name not in left_out]
    if len(names) != len(kept):
        raise BenchError(f"imported {len(names)} patches of {len(kept)}")
    return project, dict(zip(names, kept, strict=True)), left_out


def said_of(p: dict[str, Any]) -> list[str]:
    """What rebase-pin said of a patch it moved that its tree may not be the patch's
    intent: part of its change already upstream, names gone upstream, or a hunk it placed by
    a rule (moved, union, anchored: each hunk's new place and why, in the report and the
    range-diff). Empty for a plain move, and for one a person resolved."""
    if p["resolved"]:
        return []
    return [
        *(f"upstream in part: {a['file']}" for a in p.get("absorbed", [])),
        *(f"names gone: {g['file']} ({', '.join(g['names'])})" for g in p.get("gone", [])),
        *(f"{p['grade']}: {h['file']} hunk #{h['hunk']}, {h['note']}" for h in p["placed"]),
        *(f"moved: {m['file']} hunk #{m['hunk']} -> {m['to']}" for m in p["moved"]),
    ]


def replay_bump(patchctl: Path, mirror: Path, root: Path, bump: Bump) -> dict[str, Any]:
    t0 = time.perf_counter()
    upstream = init_bare(root / "upstream.git", alternates=mirror / "objects")
    row: dict[str, Any] = {
        "commit": bump.commit,
        "date": bump.date,
        "title": bump.title,
        "old": bump.old,
        "new": bump.new,
        "pin_file": bump.layout,
        "before": len(bump.before),
        "after": len(bump.after),
        "added_by_them": bump.added,
    }
    if (
        call(
            ["git", "-C", upstream, "merge-base", "--is-ancestor", bump.new, bump.old], check=False
        ).returncode
        == 0
    ):
        return {**row, "skipped": "the pin moved back (a downgrade)"}
    row["commits"] = int(
        git(upstream, "rev-list", "--count", "--first-parent", f"{bump.old}..{bump.new}").strip()
    )
    project, origin, left_out = make_project(patchctl, root, upstream, bump)
    row["not_imported"] = left_out
    theirs = {n: bump.theirs[origin[n]] for n in origin}
    code, check, err = patchctl_json(
        patchctl, project, "rebase-pin", bump.new, "--check", "--upstream", str(upstream)
    )
    if check is None:
        raise BenchError(f"rebase-pin --check exited {code}: {err}")
    row["check"] = {
        "to_resolve": check["to_resolve"],
        "waiting": check["waiting"],
        "grades": {p["name"]: p["grade"] for p in check["patches"]},
    }
    before = root / "before"
    shutil.copytree(project / "stack" / "patches", before)
    files = [before / n for n in origin]
    ours = drive_patchctl(patchctl, project, upstream, bump.new, bump.theirs, origin, log)
    results = {p["name"]: p for p in ours["patches"]}
    series = [
        (
            n,
            (project / "stack" / "patches" / n).read_bytes(),
            results[n]["grade"] in APPLIES and not results[n]["resolved"],
        )
        for n in series_names(project)
    ]
    verdicts = compare_moves(
        upstream,
        bump.new,
        series,
        {n: t.data if t else None for n, t in theirs.items()},
        old={n: (before / n).read_bytes() for n in origin},
        said=frozenset(n for n, p in results.items() if said_of(p)),
    )
    paths = touched_paths([f.read_bytes() for f in files] + [p.data for p in bump.after])
    am = drive_am(mirror, root, bump.new, files, bump.theirs, origin, paths, log)
    dropped = [n for n, t in theirs.items() if t is None]
    fate = {
        n: (
            "dropped as upstream"
            if results[n]["grade"] == "upstream"
            else "kept, superseded?"
            if results[n].get("superseded")
            else "stopped"
            if any(s["patch"] == n for s in ours["stops"])
            else "carried on"
        )
        for n in dropped
    }
    row.update(
        {
            "patches": [
                {
                    "name": n,
                    "theirs": t.name if (t := theirs[n]) else None,
                    "check_grade": row["check"]["grades"].get(n),
                    "grade": results[n]["grade"],
                    "change": results[n]["change"],
                    "resolved": results[n]["resolved"],
                    "superseded": bool(results[n].get("superseded")),
                    "auto_vs_theirs": verdicts.get(n),
                    "said": said_of(results[n]),
                }
                for n in origin
            ],
            "stops": ours["stops"],
            "am_stops": am["stops"],
            "git_am_error": am.get("error"),
            "patchctl_stops": len(ours["stops"]),
            "git_am_stops": len(am["stops"]),
            "hand_edits": sum(len(s["hand_edits"]) for s in ours["stops"]),
            "confirmations": sum(len(s["confirmations"]) for s in ours["stops"]),
            "auto": {k: sum(v == k for v in verdicts.values()) for k in VERDICTS},
            "they_dropped": len(dropped),
            "drop_upstream": fate,
            "seconds": round(time.perf_counter() - t0, 1),
        }
    )
    return row


def totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    done = [r for r in rows if "skipped" not in r]
    out: dict[str, Any] = {"bumps": len(done), "skipped": len(rows) - len(done)}
    keys = ("patchctl_stops", "git_am_stops", "hand_edits", "confirmations", "they_dropped")
    for key in (*keys, "before"):
        out[key] = sum(r[key] for r in done)
    out["git_am_incomplete"] = sum(bool(r["git_am_error"]) for r in done)
    out["check_to_resolve"] = sum(r["check"]["to_resolve"] for r in done)
    out["check_waiting"] = sum(r["check"]["waiting"] for r in done)
    out["check_equals_stops"] = sum(r["check"]["to_resolve"] == r["patchctl_stops"] for r in done)
    out["auto"] = {k: sum(r["auto"][k] for r in done) for k in done[0]["auto"]} if done else {}
    for who, key in (("classes", "stops"), ("am_classes", "am_stops")):
        out[who] = {
            c: sum(s["class"] == c for r in done for s in r[key])
            for c in (*CLASSES, OTHER, DOUBTED)
        }
    fates = [f for r in done for f in r["drop_upstream"].values()]
    out["drop_upstream"] = {
        f: fates.count(f)
        for f in ("dropped as upstream", "kept, superseded?", "stopped", "carried on")
    }
    return out


def render(result: dict[str, Any]) -> str:
    lines = [
        f"replay of {result['downstream']} pin bumps through patchctl rebase-pin "
        f"({result['machine']['nproc']} CPUs; {result['seconds']} s)",
        "",
        f"{'bump':9} {'date':10} {'old..new':19} {'n':>3} {'check':>7} {'stops':>5} "
        f"{'am -3':>5} {'edits':>5} {'conf':>4} {'auto =/said/theirs/≠/drop':>25} {'they drop':>9} "
        f"{'ours: up/sup?/stop/kept':>23}",
    ]
    for r in result["bumps"]:
        head = f"{r['commit'][:9]} {r['date']} {r['old'][:8]}..{r['new'][:8]}"
        if "skipped" in r:
            lines.append(f"{head} skipped: {r['skipped']}")
            continue
        f = list(r["drop_upstream"].values())
        a = r["auto"]
        lines.append(
            f"{head} {r['before']:>3} {r['check']['to_resolve']:>3}+{r['check']['waiting']:<3}"
            f" {r['patchctl_stops']:>5} {r['git_am_stops']:>5} {r['hand_edits']:>5}"
            f" {r['confirmations']:>4} "
            f"{a['equal']:>11}/{a['differs, said so']}/{a['differs, they changed it']}/"
            f"{a['differs']}/{a['dropped by them']:<5} {r['they_dropped']:>9} "
            f"{f.count('dropped as upstream'):>11}/{f.count('kept, superseded?')}/"
            f"{f.count('stopped')}/{f.count('carried on')}"
        )
        for p in r["patches"]:
            if p["auto_vs_theirs"] not in (None, "equal"):
                what = "; ".join(p["said"]) or "no finding"
                lines.append(f"    move {p['name']}: {p['auto_vs_theirs']} ({what})")
        for s in r["stops"]:
            lines.append(
                f"    stop {s['patch']}: {s['class']}; {s['resolution']}"
                + (f"; hand edits: {'; '.join(s['hand_edits'])}" if s["hand_edits"] else "")
                + (f"; confirmed: {'; '.join(s['confirmations'])}" if s["confirmations"] else "")
            )
    t = result["totals"]
    lines += [
        "",
        f"total: {t['bumps']} bumps ({t['skipped']} skipped), {t['before']} patches; "
        f"patchctl stops {t['patchctl_stops']}, git am -3 stops {t['git_am_stops']} "
        f"(cut short in {t['git_am_incomplete']} bumps: a blob the mirror lacks); "
        f"--check said {t['check_to_resolve']} (+{t['check_waiting']} waiting), equal to "
        f"the stops met in {t['check_equals_stops']} bumps; hand edits {t['hand_edits']}, "
        f"confirmations (--widen-scope) {t['confirmations']}",
        f"automatic moves against the maintainers': {t['auto']}",
        f"stop classes: patchctl {t['classes']}; git am -3 {t['am_classes']}",
        f"the maintainers dropped {t['they_dropped']}; patchctl: {t['drop_upstream']}",
    ]
    return "\n".join(lines) + "\n"


def inputs(script: str) -> tuple[str, str] | None:
    """The ollama and llama.cpp clones the replay reads (PATCHCTL_OLLAMA, PATCHCTL_LLAMA_CPP);
    None, said in one line, when either is not set: the bench is skipped."""
    ollama, llama = os.environ.get("PATCHCTL_OLLAMA"), os.environ.get("PATCHCTL_LLAMA_CPP")
    if not ollama or not llama:
        print(
            f"{script}: skipped: set PATCHCTL_OLLAMA and PATCHCTL_LLAMA_CPP (clones or "
            "mirrors of ollama and llama.cpp)"
        )
        return None
    return ollama, llama


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--bumps", type=int, default=10, help="the N most recent bumps in range")
    ap.add_argument("--since", help="bumps on or after this date")
    ap.add_argument("--until", default="2025-04-01", help="bumps before this date")
    ap.add_argument("--tip", default=OLLAMA_TIP, help="the downstream commit to read back from")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir and print it")
    ap.add_argument("--patchctl", help="console script (default: next to this Python)")
    args = ap.parse_args(argv)
    if (found_inputs := inputs("bench/replay.py")) is None:
        return 0
    ollama, llama = found_inputs
    started = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix="patchctl-bench-replay-"))
    rows = []
    try:
        patchctl = find_patchctl(args.patchctl)
        mirror = Path(git(Path(llama), "rev-parse", "--absolute-git-dir").strip())
        found = bumps(Path(ollama), args.tip, since=args.since, until=args.until, limit=args.bumps)
        log(
            f"{len(found)} bumps from {found[-1].date if found else '-'} to "
            f"{found[0].date if found else '-'}"
        )
        for i, bump in enumerate(found, 1):
            log(
                f"[{i}/{len(found)}] {bump.commit[:9]} {bump.date}: {len(bump.before)} "
                f"patches, {bump.old[:10]} -> {bump.new[:10]}"
            )
            (root / str(i)).mkdir()
            rows.append(replay_bump(patchctl, mirror, root / str(i), bump))
            r = rows[-1]
            log(
                f"    {r.get('skipped') or ''}"
                if "skipped" in r
                else f"    {r['patchctl_stops']} stops (check said {r['check']['to_resolve']}), "
                f"git am -3 {r['git_am_stops']}, {r['seconds']} s"
            )
    except BenchError as e:
        log(f"bench/replay.py: {e}")
        return 2
    finally:
        if args.keep:
            log(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    result = {
        "schema": SCHEMA,
        "downstream": "ollama",
        "tip": args.tip,
        "since": args.since,
        "until": args.until,
        "machine": machine_facts(),
        "git": git(None, "--version").strip(),
        "bumps": rows,
        "totals": totals(rows),
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(result, indent=2) if args.json else render(result), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
