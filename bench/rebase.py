"""Benchmark `patchctl rebase-pin` over a real span of upstream history.

The span is SPAN first-parent commits ending at NEW: with PATCHCTL_LLAMA_CPP (a
llama.cpp clone) NEW is the production pin (PATCHCTL_LLAMA_PIN overrides it) and
OLD = NEW~SPAN; without it, a synthetic C upstream of the same shape (random
small edits on 48 files, a merge every 25 commits) is generated. A stack of
narrow patches is made at OLD against files that change in the span, one file
per patch: `break` patches edit a line the span rewrites, `near` patches a line
two lines from a rewrite (inside the hunk's context), `far` patches a line at
least 30 lines from any change.

It prints, all from real runs of the console script:

  rebase-pin NEW --check --bisect   wall time (median of --reps), index-only, writes nothing
  rebase-pin NEW --drop-upstream    wall time of the real rebase in a copy of the project
                                    (stops at the first conflict: includes the work tree)
  per patch                         grade; for each broken patch the first-breaking commit,
                                    the bisect checks it took against ceil(log2 n) + 2, and
                                    a validation: it applies at the commit's parent and not
                                    at the commit (two independent `git apply --check`s)

    python bench/rebase.py [--json] [--span 300] [--reps 3] [--keep]
    patchctl record --name bench-rebase -- python bench/rebase.py
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    FIXED_DATE,
    IDENTITY,
    BenchError,
    comment_prefix,
    fast_import_blob,
    fast_import_commit,
    git,
    hermetic_env,
    init_bare,
    ls_tree,
    machine_facts,
    median,
    production_pin,
    read_blobs,
    run,
    write_project,
)

SCHEMA = "patchctl.bench.rebase/1"
PRODUCTION = production_pin()
LLAMA_PIN = PRODUCTION.commit
LLAMA_URL = PRODUCTION.url
KINDS = ("break", "break", "break", "near", "near", "near", "far", "far")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# -- the upstream -----------------------------------------------------------------------------


def _synthetic_file(i: int) -> bytes:
    lines = [f"/* src/mod{i:02d}.c: generated for patchctl's rebase benchmark. */", ""]
    for fn in range(30):
        k = i * 100 + fn
        lines += [f"int mod{i:02d}_fn{fn:02d}(int x)", "{", f"    int y = x * {k % 89 + 2};",
                  f"    y += {k % 113}; /* mod{i:02d} fn{fn:02d} */", f"    return y - {k % 7};",
                  "}", ""]
    return ("\n".join(lines) + "\n").encode()


def _commit(ref: str, mark: int, message: str, parent: str | None, files: list[bytes],
            merge: str | None = None) -> bytes:
    """One `git fast-import` commit with a mark, and optionally a second parent."""
    head = f"commit {ref}\nmark :{mark}\n"
    body = ""
    if parent:
        body = f"from {parent}\n" + (f"merge {merge}\n" if merge else "")
    msg = message.encode()
    return (head.encode() + f"author {IDENTITY} {FIXED_DATE}\ncommitter {IDENTITY} "
            f"{FIXED_DATE}\ndata {len(msg)}\n".encode() + msg + b"\n" + body.encode()
            + b"".join(files) + b"\n")


def make_synthetic(repo: Path, span: int) -> tuple[str, str]:
    """A bare repo: one base commit of 48 C files, then ``span`` first-parent commits of
    small random edits (every 25th merges a one-commit side branch); (old, new)."""
    init_bare(repo)
    rng = random.Random(20260301)
    files = {f"src/mod{i:02d}.c": _synthetic_file(i) for i in range(48)}
    stream = [_commit("refs/heads/main", 1, "synth : initial import\n", None,
                      [fast_import_blob(p, "100644", d) for p, d in files.items()])]
    for n in range(1, span + 1):
        path = rng.choice(sorted(files))
        lines = files[path].split(b"\n")
        at = rng.randrange(2, len(lines) - 2)
        if rng.random() < 0.5:
            lines[at] = lines[at] + f" /* edit {n} */".encode()
        else:
            lines.insert(at, f"/* note {n} */".encode())
        files[path] = b"\n".join(lines)
        changed = [fast_import_blob(path, "100644", files[path])]
        mark, parent = n + 1, f":{n}"
        if n % 25 == 0:
            side = fast_import_blob(f"docs/side{n:04d}.md", "100644", b"side\n")
            stream.append(_commit("refs/heads/side", 100000 + n, f"docs : side {n}\n",
                                  parent, [side]))
            # fast-import does not merge trees: the merge carries the side's file itself.
            stream.append(_commit("refs/heads/main", mark, f"Merge side {n} (#{1000 + n})\n",
                                  parent, [*changed, side], merge=f":{100000 + n}"))
        else:
            stream.append(_commit("refs/heads/main", mark, f"{path.split('/')[-1]} : change "
                                  f"{n} (#{1000 + n})\n", parent, changed))
    run(["git", "-C", repo, "fast-import", "--quiet", "--force"], input=b"".join(stream))
    new = git(repo, "rev-parse", "refs/heads/main").strip()
    old = git(repo, "rev-parse", f"{new}~{span}").strip()
    return old, new


def llama_upstream(root: Path, source: Path, new: str, span: int) -> tuple[Path, str, str]:
    """A bare repo borrowing the clone's objects (nothing is written into the clone)."""
    src_git = Path(git(source, "rev-parse", "--absolute-git-dir").strip())
    repo = init_bare(root / "upstream.git", alternates=src_git / "objects")
    if git(repo, "cat-file", "-t", new).strip() != "commit":
        raise BenchError(f"{new} is not a commit in {source}")
    return repo, git(repo, "rev-parse", f"{new}~{span}").strip(), new


# -- the stack ---------------------------------------------------------------------------------


@dataclass
class Spec:
    index: int
    kind: str  # break | near | far
    path: str
    line: int  # 0-based line in the file at OLD


def _changed_old_lines(repo: Path, old: str, new: str, path: str) -> set[int]:
    """0-based lines of ``path`` at OLD that the span removes or rewrites, and insertion
    points (the line after which something is inserted)."""
    out = git(repo, "diff", "-U0", "--no-color", "--no-renames", old, new, "--", path)
    lines: set[int] = set()
    for ln in out.splitlines():
        if ln.startswith("@@"):
            src = ln.split()[1][1:]
            start, _, count = src.partition(",")
            n = int(count) if count else 1
            s = int(start)
            lines |= set(range(s - 1, s - 1 + n)) if n else {s - 1, s}
    return lines


def plan(repo: Path, old: str, new: str, rng: random.Random) -> tuple[list[Spec], dict]:
    changed = git(repo, "diff", "--name-only", "--no-renames", "--diff-filter=M", old,
                  new).split()
    entries = {e.path: e for e in ls_tree(repo, old)}
    pool = [p for p in changed if p in entries and comment_prefix(p)
            and 2048 <= entries[p].size <= 256 * 1024]
    rng.shuffle(pool)
    blobs = read_blobs(repo, [entries[p].blob for p in pool])
    specs: list[Spec] = []
    contents: dict[str, bytes] = {}
    for path in pool:
        if len(specs) == len(KINDS):
            break
        data = blobs[entries[path].blob]
        if b"\0" in data or b"\r" in data:
            continue
        lines = data.split(b"\n")
        counts: dict[bytes, int] = {}
        for ln in lines:
            counts[ln] = counts.get(ln, 0) + 1
        ok = {i for i, ln in enumerate(lines[:-1]) if counts[ln] == 1 and ln.strip()
              and not ln.rstrip().endswith(b"\\") and i >= 3}
        hit = _changed_old_lines(repo, old, new, path)
        kind = KINDS[len(specs)]
        if kind == "break":
            choices = sorted(ok & hit)
        elif kind == "near":
            choices = sorted(i for i in ok if i not in hit and (i + 2 in hit or i - 2 in hit)
                             and i + 1 not in hit and i - 1 not in hit)
        else:
            choices = sorted(i for i in ok if all(abs(i - h) > 30 for h in hit))
        if not choices:
            continue
        specs.append(Spec(len(specs) + 1, kind, path, rng.choice(choices)))
        contents[path] = data
    if len(specs) < len(KINDS):
        raise BenchError(f"found only {len(specs)} usable files changed in the span")
    return specs, contents


def build_stack(repo: Path, root: Path, old: str, specs: list[Spec],
                contents: dict[str, bytes]) -> tuple[Path, list[str]]:
    """The patches as commits on OLD (one fast-import into a repo borrowing ``repo``'s
    objects), written with `git format-patch --zero-commit --no-signature`."""
    gen = init_bare(root / "gen.git", alternates=repo / "objects")
    stream: list[bytes] = []
    parent: str | None = old
    for s in specs:
        lines = contents[s.path].split(b"\n")
        note = f"{comment_prefix(s.path)} patchctl-bench rebase {s.index} ({s.kind})".encode()
        lines[s.line] = lines[s.line].rstrip() + b" " + note if comment_prefix(s.path) == "//" \
            and b"//" not in lines[s.line] and b"/*" not in lines[s.line] \
            and b'"' not in lines[s.line] else lines[s.line]
        if not lines[s.line].endswith(note):
            lines.insert(s.line + 1, note)
        mode = "100755" if s.path.endswith(".sh") else "100644"
        message = (f"bench : {s.kind} patch {s.index} in {s.path.rsplit('/', 1)[-1]}\n\n"
                   f"Concern: bench-{s.index}\nUpstream-Status: Pending\nScope: {s.path}\n")
        stream.append(fast_import_commit("refs/heads/stack", message, parent,
                                         [fast_import_blob(s.path, mode, b"\n".join(lines))]))
        parent = None
    run(["git", "-C", gen, "fast-import", "--quiet", "--force"], input=b"".join(stream))
    out = root / "patches"
    names = git(gen, "format-patch", "-N", "--zero-commit", "--no-signature", "-o", out,
                f"{old}..refs/heads/stack").split()
    return out, [Path(n).name for n in names]


# -- measuring -------------------------------------------------------------------------------


def rebase_json(patchctl: Path, project: Path, upstream: Path, *args: str
                ) -> tuple[int, dict | None, float, str]:
    """One timed run of the console script: (exit, JSON or None, seconds, last stderr line)."""
    t0 = time.perf_counter()
    proc = subprocess.run([str(patchctl), "rebase-pin", *args, "--upstream", str(upstream),
                           "--json"], cwd=project, env=hermetic_env(), capture_output=True,
                          text=True, check=False)
    seconds = time.perf_counter() - t0
    err = (proc.stderr.strip().splitlines() or [""])[-1]
    try:
        return proc.returncode, json.loads(proc.stdout), seconds, err
    except json.JSONDecodeError:
        return proc.returncode, None, seconds, err


def _full_rebase(patchctl: Path, project: Path, copy: Path, upstream: Path, new: str,
                 names: list[str]) -> dict:
    if copy != project:
        shutil.copytree(project, copy)
    code, data, seconds, err = rebase_json(patchctl, copy, upstream, new, "--drop-upstream")
    out: dict = {"patches": len(names), "exit": code, "seconds": round(seconds, 3)}
    if data is None:
        out["error"] = err
    else:
        out.update(status=data["status"], conflict=data.get("conflict"))
    return out


def applies(repo: Path, commit: str, patch: Path, index: Path) -> bool:
    env = hermetic_env(GIT_INDEX_FILE=str(index))
    run(["git", "-C", repo, "read-tree", commit], env=env)
    proc = subprocess.run(["git", "-C", str(repo), "apply", "--cached", "--check", str(patch)],
                          env=env, capture_output=True, check=False)
    return proc.returncode == 0


def measure(name: str, root: Path, upstream: Path, old: str, new: str, span: int,
            patchctl: Path, reps: int, seed: int) -> dict:
    t0 = time.perf_counter()
    specs, contents = plan(upstream, old, new, random.Random(seed))
    patch_dir, names = build_stack(upstream, root, old, specs, contents)
    project = write_project(root / "project", name=name, url=str(upstream), pin=old,
                            patch_dir=patch_dir, patch_names=names, patchctl=patchctl)
    setup = time.perf_counter() - t0
    log(f"{name}: {len(names)} patches at {old[:12]}, rebasing to {new[:12]} ({span} commits)")
    times: list[float] = []
    report: dict | None = None
    for _ in range(reps):
        code, report, seconds, err = rebase_json(patchctl, project, upstream, new, "--check",
                                                 "--bisect")
        if report is None:
            raise BenchError(f"rebase-pin --check --bisect exited {code}: {err}")
        times.append(seconds)
    assert report is not None
    # The real thing on a copy: with the broken patches it stops at the first conflict
    # and leaves a work tree (a mirror without some large blobs cannot check one out).
    full = _full_rebase(patchctl, project, root / "project-rebase", upstream, new, names)
    # Only the patches that apply: the whole refresh-and-swap path, ending "rebased".
    clean = [p["name"] for p in report["patches"] if p["grade"] in ("exact", "offset", "3way")]
    subset = write_project(root / "project-clean", name=name, url=str(upstream), pin=old,
                           patch_dir=patch_dir, patch_names=clean, patchctl=patchctl)
    applied = _full_rebase(patchctl, subset, subset, upstream, new, clean)
    n = report["commits"]
    bound = math.ceil(math.log2(n)) + 2
    rows = []
    for spec, p in zip(specs, report["patches"], strict=True):
        row = {"patch": p["name"], "kind": spec.kind, "file": spec.path, "grade": p["grade"],
               "change": p["change"]}
        b = p.get("bisect")
        if b:
            row.update(checks=b["checks"], bound=b["bound"], within=b["checks"] <= b["bound"],
                       first_bad=b["commit"], note=b["note"])
            if b["commit"]:
                first = b["commit"]["id"]
                parent = git(upstream, "rev-parse", f"{first}^1").strip()
                idx = root / "validate.index"
                row["validated"] = (applies(upstream, parent, patch_dir / p["name"], idx)
                                    and not applies(upstream, first, patch_dir / p["name"], idx))
        if p.get("landed"):
            row["landed"] = p["landed"]
        rows.append(row)
    broken = [r for r in rows if "checks" in r]
    return {
        "name": name, "old": old, "new": new, "commits": n, "bound": bound,
        "setup_seconds": round(setup, 2),
        "check_bisect_seconds": [round(t, 3) for t in times],
        "check_bisect_median": round(median(times), 3),
        "check_exit": code, "bisect_checks_total": report["bisect_checks"],
        "rebase_all": full, "rebase_applying": applied,
        "patches": rows,
        "max_checks_per_broken_patch": max((r["checks"] for r in broken), default=0),
        "all_within_bound": all(r["within"] for r in broken),
        "all_validated": all(r.get("validated", True) for r in broken),
    }


def render(result: dict) -> str:
    out = [f"patchctl rebase-pin benchmark ({result['machine']['nproc']} CPUs, load "
           f"{result['machine'].get('loadavg')}; {result['git']})"]
    for s in result["suites"]:
        out += ["", f"== {s['name']}: {s['old'][:12]} -> {s['new'][:12]}, {s['commits']} "
                f"first-parent commits, {len(s['patches'])} patches (setup {s['setup_seconds']} "
                "s, not timed)",
                f"rebase-pin NEW --check --bisect: median {s['check_bisect_median']:.3f} s over "
                f"{len(s['check_bisect_seconds'])} runs {s['check_bisect_seconds']} "
                f"(exit {s['check_exit']}; {s['bisect_checks_total']} bisect checks in all)",
                *(f"rebase-pin NEW --drop-upstream, {r['patches']} patches ({what}): "
                  f"{r['seconds']:.3f} s -> exit {r['exit']}, "
                  + (r.get("error") or f"{r['status']}"
                     + (f" at {r['conflict']}" if r.get("conflict") else ""))
                  for what, r in (("all", s["rebase_all"]),
                                  ("those that apply", s["rebase_applying"]))),
                f"bisect bound ceil(log2 {s['commits']}) + 2 = {s['bound']}; max checks per "
                f"broken patch {s['max_checks_per_broken_patch']}; all within bound: "
                f"{s['all_within_bound']}; first-bad commits validated: {s['all_validated']}"]
        for r in s["patches"]:
            line = f"  {r['patch'][:46]:<46} {r['kind']:<5} {r['grade']:<8}"
            if "checks" in r:
                fb = r["first_bad"]
                what = f"{fb['id'][:10]} {fb['subject'][:50]!r}" if fb else r["note"]
                line += f" {r['checks']}/{r['bound']} checks -> {what}"
                if "validated" in r:
                    line += " (validated)" if r["validated"] else " (NOT validated)"
            elif r.get("landed"):
                c = r["landed"]["commit"]
                line += f" landed in {c['id'][:10] if c else '?'}"
            out.append(line.rstrip())
    out.append(f"total {result['seconds']:.1f} s")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--span", type=int, default=300, help="first-parent commits OLD..NEW")
    ap.add_argument("--reps", type=int, default=3, help="timed --check --bisect runs")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir and print it")
    ap.add_argument("--patchctl", help="console script (default: next to this Python)")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    patchctl = Path(args.patchctl).resolve() if args.patchctl else \
        Path(sys.executable).parent / "patchctl"
    if not patchctl.is_file():
        patchctl = Path(shutil.which("patchctl") or "patchctl")
    root = Path(tempfile.mkdtemp(prefix="patchctl-bench-rebase-"))
    suites = []
    try:
        source = os.environ.get("PATCHCTL_LLAMA_CPP")
        if source:
            new = os.environ.get("PATCHCTL_LLAMA_PIN", LLAMA_PIN)
            (root / "llama").mkdir()
            up, old, new = llama_upstream(root / "llama", Path(source), new, args.span)
            suites.append(measure("llama.cpp", root / "llama", up, old, new, args.span,
                                  patchctl, args.reps, seed=45155597))
        else:
            (root / "synthetic").mkdir()
            up = root / "synthetic" / "upstream.git"
            old, new = make_synthetic(up, args.span)
            suites.append(measure("synthetic", root / "synthetic", up, old, new, args.span,
                                  patchctl, args.reps, seed=20260301))
    except BenchError as e:
        log(f"bench/rebase.py: {e}")
        return 2
    finally:
        if args.keep:
            log(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    result = {"schema": SCHEMA, "machine": machine_facts(),
              "git": git(None, "--version").strip(), "suites": suites,
              "seconds": round(time.perf_counter() - started, 1)}
    print(json.dumps(result, indent=2) if args.json else render(result), end="")
    return 0 if all(s["all_within_bound"] and s["all_validated"] for s in suites) else 1


if __name__ == "__main__":
    sys.exit(main())
