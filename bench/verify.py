"""Benchmark `patchctl verify` against the ways a user would otherwise check a stack.

From one run it prints the median wall time (interleaved repetitions after a
warm-up) of, for stacks of 20, 200 and 2,000 narrow patches:

  patchctl verify --upstream REPO     the real console script, as a subprocess (and again
                                      with an empty cache: nothing parsed before)
  (a) per-patch loop                  `git apply --cached` per patch on a temp index, then
                                      `git apply --cached -R` per patch, last first (bash)
  (b) quilt                           `quilt push -a --fuzz=0 && quilt pop -a` in a fresh tree
  floor                               one batched `git apply --cached` forward, one `-R` back

and `patchctl --help`, with the ratios against the targets (see bench/README.md).
The inputs are generated in a temp dir: a synthetic upstream of ~1,200 C files,
and, when PATCHCTL_LLAMA_CPP names a llama.cpp clone, real llama.cpp files at the
pin. Nothing is written to the repository or to that clone.

    python bench/verify.py [--json] [--reps 7] [--warmup 1] [--sizes 20,200,2000] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    BenchError,
    Case,
    PatchSpec,
    build_patch_series,
    comment_prefix,
    fast_import_blob,
    fast_import_commit,
    first_line,
    git,
    hermetic_env,
    init_bare,
    loadavg,
    ls_tree,
    machine_facts,
    measure_round_robin,
    median,
    plan_patches,
    production_pin,
    read_blobs,
    run,
    timed,
    write_project,
)

SCHEMA = "patchctl.bench.verify/1"
SIZES = (20, 200, 2000)
PRODUCTION = production_pin()
LLAMA_PIN = PRODUCTION.commit
LLAMA_URL = PRODUCTION.url

# name -> (what, limit). A ratio passes when value <= limit.
TARGETS = {
    "verify/quilt@20": ("patchctl verify / quilt push+pop, 20 patches", 0.15),
    "verify/loop@20": ("patchctl verify / per-patch apply+reverse loop, 20 patches", 0.6),
    "verify/quilt@200": ("patchctl verify / quilt push+pop, 200 patches", 0.05),
    "verify/loop@200": ("patchctl verify / per-patch apply+reverse loop, 200 patches", 0.2),
    "verify200/verify20": ("patchctl verify 200 patches / 20 patches", 10.0),
    "verify/quilt@2000": ("patchctl verify / quilt push+pop, 2,000 patches", 0.05),
    "verify/loop@2000": ("patchctl verify / per-patch apply+reverse loop, 2,000 patches", 0.2),
    "verify/floor@2000": ("patchctl verify / batched floor (apply + apply -R), 2,000 patches",
                          1.5),
    "verify2000/verify200": ("patchctl verify 2,000 patches / 200 patches", 10.0),
}
HELP_LIMIT = 0.1  # seconds, `patchctl --help`

# (a): what a shell user writes to prove apply and reverse one patch at a time. One
# bash process for the whole loop, like theirs.
BARE_LOOP = r"""
set -eu
export GIT_INDEX_FILE="$1"
repo=$2 pin=$3 patches=$4 series=$5
git -C "$repo" read-tree "$pin"
while read -r p; do
    git -C "$repo" apply --cached "$patches/$p"
done < "$series"
tac "$series" | while read -r p; do
    git -C "$repo" apply --cached -R "$patches/$p"
done
"""

# (b): quilt in a plain tree; QUILTRC=/dev/null keeps ~/.quiltrc and /etc out of it.
QUILT = "quilt push -a --fuzz=0 && quilt pop -a"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# -- inputs ---------------------------------------------------------------------------------

AREAS = 40  # at least; more when the largest stack needs more files (one patch per file)
C_PER_AREA = 25
H_PER_AREA = 5


def areas_for(patches: int) -> int:
    """Enough areas that ``patches`` patches of up to two files each find distinct files."""
    return max(AREAS, -(-patches * 2 // (C_PER_AREA + H_PER_AREA)))


def _c_file(area: int, unit: int) -> bytes:
    ident = f"a{area:02d}u{unit:02d}"
    out = [f"/* src/area{area:02d}/unit{unit:02d}.c: generated for patchctl's verify "
           "benchmark. */",
           f'#include "area{area:02d}/unit{unit % H_PER_AREA:02d}.h"', "",
           f"static const int {ident}_table[4] = {{ {area + 3}, {unit + 5}, "
           f"{(area * unit) % 97}, {area + unit + 11} }};", ""]
    for fn in range(8):
        k = area * 1000 + unit * 10 + fn
        out += [
            f"int {ident}_op{fn}(int x)",
            "{",
            f"    int y = x * {k % 89 + 2};",
            f"    y += {k % 113};",
            f"    /* {ident} step {fn}: keep the value bounded */",
            f"    if (y > {1000 + k}) {{",
            f"        y -= {k % 31 + 1};",
            "    }",
            f"    return y + {ident}_table[{fn % 4}];",
            "}",
            "",
        ]
    return ("\n".join(out) + "\n").encode()


def _h_file(area: int, unit: int) -> bytes:
    guard = f"AREA{area:02d}_UNIT{unit:02d}_H"
    out = [f"#ifndef {guard}", f"#define {guard}", "",
           f"#define AREA{area:02d}_UNIT{unit:02d}_VERSION {area * 100 + unit}", ""]
    for u in range(unit, C_PER_AREA, H_PER_AREA):
        for fn in range(8):
            out.append(f"int a{area:02d}u{u:02d}_op{fn}(int x);")
        out.append("")
    out += [f"#endif /* {guard} */"]
    return ("\n".join(out) + "\n").encode()


def make_synthetic_upstream(repo: Path, areas: int = AREAS) -> str:
    """A bare repo, one commit of ``areas`` x 30 distinct C files; returns the pin."""
    init_bare(repo)
    files = [fast_import_blob("README.md", "100644", b"# synth\n\nA generated upstream.\n"),
             fast_import_blob("CMakeLists.txt", "100644",
                              b"cmake_minimum_required(VERSION 3.16)\nproject(synth C)\n")]
    for a in range(areas):
        for u in range(C_PER_AREA):
            files.append(fast_import_blob(f"src/area{a:02d}/unit{u:02d}.c", "100644",
                                          _c_file(a, u)))
        for u in range(H_PER_AREA):
            files.append(fast_import_blob(f"include/area{a:02d}/unit{u:02d}.h", "100644",
                                          _h_file(a, u)))
    stream = fast_import_commit("refs/heads/main", "synth : initial import\n", None, files)
    run(["git", "-C", repo, "fast-import", "--quiet"], input=stream)
    return git(repo, "rev-parse", "refs/heads/main").strip()


def _safe(path: str) -> bool:
    return all(c.isalnum() or c in "._/+-" for c in path)


class Suite:
    """One upstream with stacks of 20 and 200 patches, and everything the runs need."""

    def __init__(self, name: str, root: Path, upstream: Path, pin: str, url: str,
                 sparse: bool, patchctl: Path, sizes: tuple[int, ...]) -> None:
        self.name, self.root, self.upstream, self.pin, self.url = name, root, upstream, pin, url
        self.sizes = sizes
        self.sparse = sparse  # quilt tree: only the files the stack touches
        self.patchctl = patchctl
        self.files = 0
        self.patch_names: list[str] = []
        self.specs: list[PatchSpec] = []
        self.facts: dict[str, object] = {}
        self.relative_ok = True  # `patchctl verify` works with cwd = project (-C .)

    def build_stack(self, candidates: list[str], entries, rng: random.Random,
                    new_every: int) -> None:
        gen = init_bare(self.root / "gen.git", alternates=self.upstream / "objects")
        specs = plan_patches(candidates, max(self.sizes), rng, new_every=new_every)
        out = self.root / "generated-patches"
        self.patch_names = build_patch_series(gen, self.pin, entries, specs, rng, out)
        if len(self.patch_names) != max(self.sizes):
            raise BenchError(f"format-patch wrote {len(self.patch_names)} patches, "
                             f"expected {max(self.sizes)}")
        self.specs = specs
        for n in self.sizes:
            write_project(self.project(n), name=self.name, url=self.url, pin=self.pin,
                          patch_dir=out, patch_names=self.patch_names[:n],
                          patchctl=self.patchctl)
            (self.root / f"series-{n}").write_text("".join(
                f"{p}\n" for p in self.patch_names[:n]))
        hunks = sum(ln.startswith(b"@@ ") for p in self.patch_names
                    for ln in (out / p).read_bytes().split(b"\n"))
        self.facts.update({
            "patches": max(self.sizes),
            "files_touched": sum(len(s.paths) for s in specs),
            "hunks": hunks,
            f"patch_bytes_{max(self.sizes)}": sum((out / p).stat().st_size
                                             for p in self.patch_names),
        })

    def project(self, n: int) -> Path:
        return self.root / f"project-{n}"

    def patches_dir(self, n: int) -> Path:
        return self.project(n) / "stack" / "patches"

    def touched_paths(self, n: int) -> list[str]:
        return sorted({p for s in self.specs[:n] for p in s.edits})


def synthetic_suite(root: Path, patchctl: Path, sizes: tuple[int, ...]) -> Suite:
    t0 = time.perf_counter()
    upstream = root / "upstream.git"
    pin = make_synthetic_upstream(upstream, areas_for(max(sizes)))
    entries = {e.path: e for e in ls_tree(upstream, pin)}
    suite = Suite("synthetic", root, upstream, pin, str(upstream), sparse=False,
                  patchctl=patchctl, sizes=sizes)
    suite.files = len(entries)
    candidates = sorted(p for p in entries if p.endswith((".c", ".h")))
    suite.build_stack(candidates, entries, random.Random(20260101), new_every=25)
    suite.facts.update({"upstream_files": len(entries),
                        "setup_seconds": round(time.perf_counter() - t0, 2)})
    return suite


def llama_suite(root: Path, source: Path, pin: str, patchctl: Path,
                sizes: tuple[int, ...]) -> Suite:
    """Real llama.cpp files at the pin, read from ``source`` without a checkout.

    The timed upstream is a bare repo in the temp dir that borrows ``source``'s
    objects (alternates), so the blobs and trees `git apply --cached` writes land
    there and the clone stays untouched.
    """
    t0 = time.perf_counter()
    src_git = Path(git(source, "rev-parse", "--absolute-git-dir").strip())
    upstream = init_bare(root / "upstream.git", alternates=src_git / "objects")
    if git(upstream, "cat-file", "-t", pin).strip() != "commit":
        raise BenchError(f"pin {pin} is not a commit in {source}")
    all_entries = ls_tree(upstream, pin)
    entries = {e.path: e for e in all_entries}
    suite = Suite("llama.cpp", root, upstream, pin, LLAMA_URL, sparse=True, patchctl=patchctl,
                  sizes=sizes)
    suite.files = int(git(upstream, "ls-tree", "-r", "--name-only", "-z", pin).count("\0"))
    maybe = [e for e in all_entries if comment_prefix(e.path) and 2048 <= e.size <= 256 * 1024
             and _safe(e.path)]
    blobs = read_blobs(upstream, [e.blob for e in maybe])
    candidates = sorted(e.path for e in maybe
                        if b"\0" not in blobs[e.blob] and b"\r" not in blobs[e.blob])
    suite.sizes = tuple(n for n in sizes if n * 2 <= len(candidates)) or sizes[:1]
    if suite.sizes != sizes:
        log(f"llama.cpp: {len(candidates)} editable files: stacks of {suite.sizes} only")
    suite.build_stack(candidates, entries, random.Random(45155597), new_every=25)
    suite.facts.update({"upstream_files": suite.files, "candidate_files": len(candidates),
                        "source": str(source), "pin": pin,
                        "setup_seconds": round(time.perf_counter() - t0, 2)})
    return suite


# -- measuring ------------------------------------------------------------------------------


def verify_argv(suite: Suite, n: int) -> list[str]:
    """`patchctl verify --upstream REPO`, run in the project dir (cwd).

    Where that form is broken (patchctl f156eac and before hand git patch paths
    relative to the project while git runs in the upstream: `git -C REPO apply
    stack/patches/...`, so every patch "fails"), ``-C <absolute project>`` is added.
    """
    base = [str(suite.patchctl)]
    if not suite.relative_ok:
        base += ["-C", str(suite.project(n).resolve())]
    return [*base, "verify", "--upstream", str(suite.upstream)]


def check_relative_project(suite: Suite, n: int) -> dict[str, object]:
    """Untimed: does plain `patchctl verify` work from inside the project (`-C .`)?"""
    argv = [str(suite.patchctl), "verify", "--upstream", str(suite.upstream), "--json"]
    proc = subprocess.run(argv, cwd=suite.project(n), env=hermetic_env(), capture_output=True,
                          text=True, check=False)
    reason = None
    if proc.returncode != 0:
        try:
            first = json.loads(proc.stdout)["patches"][0]
            reason = (first.get("failure") or {}).get("reason")
        except (json.JSONDecodeError, KeyError, IndexError):
            reason = proc.stderr.strip()[-300:]
    return {"argv": "patchctl verify --upstream REPO (cwd: project)", "exit": proc.returncode,
            "ok": proc.returncode == 0, "first_failure": reason,
            "timed_form": "patchctl verify --upstream REPO (cwd: project)"
            if proc.returncode == 0 else "patchctl -C <absolute project> verify --upstream REPO"}


def check_verify_report(suite: Suite, n: int) -> dict[str, object]:
    """One untimed `verify --json`: the stack must be clean, batched and lock-current."""
    argv = [*verify_argv(suite, n), "--json"]
    proc = subprocess.run(argv, cwd=suite.project(n), env=hermetic_env(), capture_output=True,
                          text=True, check=False)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise BenchError(f"{suite.name}/{n}: `patchctl verify --json` exited {proc.returncode} "
                         f"without JSON: {proc.stderr.strip()[-1500:]}") from e
    grades = sorted({p["grade"] for p in report["patches"]})
    if proc.returncode != 0 or not report.get("ok") or grades != ["exact"]:
        problems = [f"{p['name']}: {p['grade']} {p.get('failure')} {p.get('findings')}"
                    for p in report["patches"] if not p.get("ok") or p["grade"] != "exact"]
        raise BenchError(f"{suite.name}/{n}: the generated stack does not verify clean "
                         f"(exit {proc.returncode}): {problems[:3]} {report.get('findings')}")
    return {"mode": report["mode"], "parts": report.get("parts", 1),
            "git_calls": report["git_calls"],
            "in_process_seconds": report["seconds"], "lock": report["lock"],
            "grades": grades}


def cases_for(suite: Suite, n: int, scratch: Path, quilt: str | None) -> list[Case]:
    env = hermetic_env()
    upstream, pin = suite.upstream, suite.pin
    index = scratch / f"{suite.name}-{n}.index"
    patches = suite.patches_dir(n)
    series = suite.root / f"series-{n}"
    files = [patches / p for p in suite.patch_names[:n]]
    idx_env = hermetic_env(GIT_INDEX_FILE=str(index))

    def verify() -> float:
        return timed(verify_argv(suite, n), cwd=suite.project(n), env=env)

    cold_cache = scratch / f"{suite.name}-{n}.cold-cache"
    cold_env = {**env, "PATCHCTL_CACHE_DIR": str(cold_cache)}

    def verify_cold() -> float:
        return timed(verify_argv(suite, n), cwd=suite.project(n), env=cold_env)

    def empty_cache() -> None:
        shutil.rmtree(cold_cache, ignore_errors=True)

    def loop() -> float:
        return timed(["bash", "-c", BARE_LOOP, "bare-loop", index, upstream, pin, patches,
                      series], env=env)

    def floor() -> float:
        t0 = time.perf_counter()
        for argv in (["read-tree", pin], ["apply", "--cached", *files],
                     ["apply", "--cached", "-R", *reversed(files)]):
            proc = subprocess.run(["git", "-C", str(upstream), *map(str, argv)], env=idx_env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
            if proc.returncode != 0:
                raise BenchError(f"floor: git {argv[0]} failed: {proc.stderr.decode()[-800:]}")
        return time.perf_counter() - t0

    def fresh_index() -> None:
        index.unlink(missing_ok=True)

    cases = [Case(f"verify@{n}", verify),
             Case(f"cold@{n}", verify_cold, prepare=empty_cache),
             Case(f"loop@{n}", loop, prepare=fresh_index),
             Case(f"floor@{n}", floor, prepare=fresh_index)]
    if quilt:
        tree = scratch / f"{suite.name}-{n}.tree"
        checkout_index = scratch / f"{suite.name}-{n}.checkout-index"
        run(["git", "-C", upstream, "read-tree", pin],
            env=hermetic_env(GIT_INDEX_FILE=str(checkout_index)))
        co_env = hermetic_env(GIT_INDEX_FILE=str(checkout_index))
        only = ["--", *suite.touched_paths(n)] if suite.sparse else ["-a"]
        quilt_env = hermetic_env(QUILTRC=os.devnull, QUILT_PATCHES=str(patches),
                                 QUILT_SERIES=str(series))

        def fresh_tree() -> None:
            # Not timed: a fresh tree at the pin (sparse: only the files the stack touches).
            shutil.rmtree(tree, ignore_errors=True)
            tree.mkdir()
            run(["git", f"--git-dir={upstream}", f"--work-tree={tree}", "checkout-index", "-f",
                 *only], env=co_env)

        def quilt_run() -> float:
            return timed(["bash", "-c", QUILT], cwd=tree, env=quilt_env)

        cases.append(Case(f"quilt@{n}", quilt_run, prepare=fresh_tree))
    return cases


HELP_ROWS = {
    "help": "patchctl --help",
    "python -c pass": "interpreter start (python -c pass)",
    "import patchctl.cli": "python -c 'import patchctl.cli'",
    "import verify path": "python -c 'import <verify's modules>'",
    "help, no .pyc": "patchctl --help, PYTHONDONTWRITEBYTECODE=1",
}


def python_cases(patchctl: Path, scratch: Path, *, no_pyc: bool) -> list[Case]:
    """`patchctl --help`, and what it is made of: interpreter start, then imports."""
    py = _script_python(patchctl)
    env = hermetic_env()
    verify_imports = ("import patchctl.cli, patchctl.commands.verify, patchctl.verify.engine, "
                      "patchctl.verify.render")
    cases = [
        Case("help", lambda: timed([patchctl, "--help"], cwd=scratch, env=env)),
        Case("python -c pass", lambda: timed([py, "-c", "pass"], cwd=scratch, env=env)),
        Case("import patchctl.cli", lambda: timed([py, "-c", "import patchctl.cli"],
                                                  cwd=scratch, env=env)),
        Case("import verify path", lambda: timed([py, "-c", verify_imports], cwd=scratch,
                                                 env=env)),
    ]
    if no_pyc:
        # What this machine's environment gives: the editable package is compiled from
        # source on every run (site-packages keep the .pyc files pip wrote).
        raw = {k: v for k, v in env.items() if k != "PYTHONPYCACHEPREFIX"}
        raw["PYTHONDONTWRITEBYTECODE"] = "1"
        cases.append(Case("help, no .pyc", lambda: timed([patchctl, "--help"], cwd=scratch,
                                                         env=raw)))
    return cases


def source_state() -> dict[str, object]:
    """Which patchctl is measured: the checkout's commit and its uncommitted files."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = git(root, "rev-parse", "HEAD").strip()
        dirty = git(root, "status", "--porcelain", "--", "patchctl", "pyproject.toml")
    except BenchError:
        return {}
    return {"commit": head, "uncommitted": [ln[3:] for ln in dirty.splitlines()]}


def _script_python(patchctl: Path) -> str:
    """The interpreter named on the console script's #! line (the one users get)."""
    try:
        first = patchctl.read_bytes().split(b"\n", 1)[0].decode()
    except OSError:
        return sys.executable
    return first[2:].strip().split()[0] if first.startswith("#!") else sys.executable


def find_patchctl(given: str | None) -> Path:
    if given:
        return Path(given).resolve()
    sibling = Path(sys.executable).parent / "patchctl"
    if sibling.is_file():
        return sibling
    found = shutil.which("patchctl")
    if not found:
        raise BenchError("no `patchctl` console script; install the package (pip install -e .) "
                         "or pass --patchctl PATH")
    return Path(found)


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
            ("floor: batched apply + apply -R", "floor"),
        ]
        w = 38
        sizes = s["sizes"]
        out.append(f"{'':<{w}}" + "".join(f" {f'{n} patches':>14}" for n in sizes))
        for label, key in rows:
            out.append(f"{label:<{w}}" + "".join(f" {fmt_s(med.get(f'{key}@{n}')):>14}"
                                                 for n in sizes))
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


# -- main -----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true", help="print one JSON object, not the table")
    ap.add_argument("--reps", type=int, default=7, help="timed repetitions (default 7)")
    ap.add_argument("--quilt-reps", type=int, default=3,
                    help="timed repetitions for quilt, 20 patches (default 3)")
    ap.add_argument("--quilt-reps-200", type=int, default=1,
                    help="timed repetitions for quilt, 200 and 2,000 patches (default 1; "
                    "~20-40 s each at 200, ten times that at 2,000)")
    ap.add_argument("--loop-reps-2000", type=int, default=3,
                    help="timed repetitions for the per-patch loop at 2,000 patches (default 3)")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)),
                    help="stack sizes, a subset of 20,200,2000 (default: all)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed warm-up rounds (default 1)")
    ap.add_argument("--patchctl", help="the console script (default: next to this python)")
    ap.add_argument("--no-quilt", action="store_true", help="skip the quilt baseline")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir and print its path")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target fails")
    args = ap.parse_args(argv)
    if min(args.reps, args.quilt_reps, args.quilt_reps_200, args.loop_reps_2000) < 1 or \
            args.warmup < 0:
        ap.error("repetitions must be >= 1 and --warmup >= 0")
    quilt_reps, quilt_reps_200 = args.quilt_reps, args.quilt_reps_200
    try:
        sizes = tuple(sorted({int(x) for x in args.sizes.split(",")}))
    except ValueError:
        ap.error("--sizes: comma-separated numbers")
    if not sizes or not set(sizes) <= set(SIZES):
        ap.error(f"--sizes: a subset of {','.join(map(str, SIZES))}")

    started = time.perf_counter()
    patchctl = find_patchctl(args.patchctl)
    quilt = None if args.no_quilt else shutil.which("quilt")
    if quilt is None and not args.no_quilt:
        log("quilt is not installed (apt-get install -y quilt); its targets are n/a")
    machine = machine_facts()
    machine["loadavg_start"] = loadavg()
    tools = {
        "git": first_line(["git", "--version"]),
        "quilt": first_line(["quilt", "--version"]),
        "patch": first_line(["patch", "--version"]),
        "bash": first_line(["bash", "--version"]),
        "patchctl": first_line([str(patchctl), "--version"]),
        "patchctl_path": str(patchctl),
    }
    llama_src = os.environ.get("PATCHCTL_LLAMA_CPP")
    llama_pin = os.environ.get("PATCHCTL_LLAMA_PIN", LLAMA_PIN)

    tmp = Path(tempfile.mkdtemp(prefix="patchctl-bench-verify-"))
    # Users' Python caches bytecode; this machine may set PYTHONDONTWRITEBYTECODE=1,
    # which makes every run compile patchctl from source. Measured runs cache it under
    # the temp dir instead (nothing is written into the repository).
    inherited_no_pyc = os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    tools["patchctl_source"] = source_state()
    try:
        suites: list[Suite] = []
        log(f"generating inputs in {tmp}")
        suites.append(synthetic_suite(tmp / "synthetic", patchctl, sizes))
        if llama_src:
            log(f"generating llama.cpp patches from {llama_src} @ {llama_pin[:12]}")
            (tmp / "llama").mkdir()
            suites.append(llama_suite(tmp / "llama", Path(llama_src), llama_pin, patchctl,
                                      sizes))
        scratch = tmp / "scratch"
        scratch.mkdir()

        result: dict = {"schema": SCHEMA, "machine": machine, "tools": tools,
                        "params": {"reps": args.reps, "quilt_reps": quilt_reps if quilt else 0,
                                   "quilt_reps_200": quilt_reps_200 if quilt else 0,
                                   "bytecode": "cached under PYTHONPYCACHEPREFIX=<tmp>/pycache"
                                   + (" (PYTHONDONTWRITEBYTECODE=1 lifted)"
                                      if inherited_no_pyc else ""),
                                   "loop_reps_2000": args.loop_reps_2000,
                                   "warmup": args.warmup, "sizes": list(sizes)},
                        "suites": {}}
        help_cases = python_cases(patchctl, scratch, no_pyc=bool(inherited_no_pyc))
        help_names = {c.name for c in help_cases}
        help_samples: dict[str, list[float]] = {}
        for i, suite in enumerate(suites):
            log(f"measuring {suite.name}" + ("" if i else " and patchctl --help"))
            relative = check_relative_project(suite, suite.sizes[0])
            suite.relative_ok = bool(relative["ok"])
            reports = {str(n): check_verify_report(suite, n) for n in suite.sizes}
            cases = [c for n in suite.sizes for c in cases_for(suite, n, scratch, quilt)]
            for c in cases:
                # quilt costs ~0.1 s a patch: a few runs at 20 patches, fewer at 200
                # and 2,000 (it averages over the patches itself), and no warm-up
                # there: the 20-patch runs already warmed quilt's scripts and the page
                # cache. The per-patch loop at 2,000 is 4,000 git processes a run.
                if c.name == "quilt@20":
                    c.reps = quilt_reps
                elif c.name in ("quilt@200", "quilt@2000"):
                    c.reps, c.warmup = quilt_reps_200, 0
                elif c.name == "loop@2000":
                    c.reps, c.warmup = args.loop_reps_2000, 0
            if i == 0:
                # `--help` interleaved with the first suite's runs: the same load.
                cases += help_cases
            samples = measure_round_robin(cases, reps=args.reps, warmup=args.warmup, log=log)
            help_samples.update({k: samples.pop(k) for k in help_names if k in samples})
            # Again, warm (bytecode cached), for the self-reported in-process time.
            reports = {str(n): check_verify_report(suite, n) for n in suite.sizes}
            medians = {k: median(v) for k, v in samples.items()}
            result["suites"][suite.name] = {
                "pin": suite.pin, "sizes": list(suite.sizes), "facts": suite.facts,
                "verify_report": reports,
                "relative_project_check": relative,
                "medians": {k: round(v, 5) for k, v in medians.items()},
                "samples": {k: [round(x, 5) for x in v] for k, v in samples.items()},
                "targets": evaluate(medians),
            }
        help_medians = {k: median(v) for k, v in help_samples.items()}
        result["help"] = {
            "medians": {k: round(v, 5) for k, v in help_medians.items()},
            "samples": {k: [round(x, 5) for x in v] for k, v in help_samples.items()},
            "target": {"what": "patchctl --help wall seconds",
                       "value": round(help_medians["help"], 4), "limit": HELP_LIMIT,
                       "pass": help_medians["help"] <= HELP_LIMIT},
        }
    finally:
        if args.keep:
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    machine["loadavg_end"] = loadavg()
    verdicts = {f"{name}:{k}": t["pass"] for name, s in result["suites"].items()
                for k, t in s["targets"].items()}
    verdicts["help"] = result["help"]["target"]["pass"]
    result["summary"] = {
        "passed": sum(v is True for v in verdicts.values()),
        "failed": sum(v is False for v in verdicts.values()),
        "not_applicable": sum(v is None for v in verdicts.values()),
        "failed_targets": [k for k, v in verdicts.items() if v is False],
    }
    result["ok"] = not result["summary"]["failed_targets"]
    result["seconds"] = round(time.perf_counter() - started, 2)
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        print(render_table(result), end="")
    return 1 if args.check and not result["ok"] else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        print(f"bench/verify.py: error: {e}", file=sys.stderr)
        sys.exit(3)
