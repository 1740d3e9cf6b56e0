"""Helpers shared by the benchmarks under bench/: hermetic git, stack building, timing.

Benchmarks are scripts, not tests: they build their inputs in a temp dir outside
the repository, run the real console script as a subprocess, and print medians.
Everything here shells out with argument lists (no shell strings), and git runs
with the user's and the system's config switched off, so a local `core.fsmonitor`
or hook cannot skew the numbers.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchctl.model.stack import PIN_FILE, Pin, parse_pin


def production_pin() -> Pin:
    """The pin of this repository's own stack (stack/upstream.toml): what the
    llama.cpp benches measure at unless PATCHCTL_LLAMA_PIN says otherwise."""
    path = Path(__file__).resolve().parents[1] / "stack" / PIN_FILE
    return parse_pin(path.read_text(), source=path)


# Fixed identity and dates: generated commits (and so patch files) are byte-identical
# from run to run.
FIXED_DATE = "1767225600 +0000"  # 2026-01-01T00:00:00Z
IDENTITY = "Bench Dev <bench@bench.invalid>"


def hermetic_env(**extra: str) -> dict[str, str]:
    """The environment every benchmarked command runs in (patchctl, git, bash, quilt)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "QUILT_"))}
    env.update({
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "LC_ALL": "C",
        "PATCHCTL_QUIET": "1",
        "GIT_AUTHOR_NAME": "Bench Dev",
        "GIT_AUTHOR_EMAIL": "bench@bench.invalid",
        "GIT_COMMITTER_NAME": "Bench Dev",
        "GIT_COMMITTER_EMAIL": "bench@bench.invalid",
        "GIT_AUTHOR_DATE": FIXED_DATE,
        "GIT_COMMITTER_DATE": FIXED_DATE,
    })
    env.update(extra)
    return env


class BenchError(Exception):
    """Setup or a measured command failed; the message says which and why."""


def run(argv: Sequence[str | os.PathLike[str]], *, cwd: Path | None = None,
        env: dict[str, str] | None = None, input: bytes | None = None) -> bytes:
    """Run ``argv``; return stdout, raise BenchError with stderr on a non-zero exit."""
    args = [str(a) for a in argv]
    proc = subprocess.run(args, cwd=cwd, env=env or hermetic_env(), input=input,
                          capture_output=True, check=False)
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace").strip()[-2000:]
        raise BenchError(f"`{' '.join(args)}` exited {proc.returncode}: {tail}")
    return proc.stdout


def git(repo: Path | None, *args: str | os.PathLike[str], input: bytes | None = None,
        env: dict[str, str] | None = None) -> str:
    prefix: list[str | os.PathLike[str]] = ["git"] + (["-C", repo] if repo else [])
    return run([*prefix, *args], input=input, env=env).decode("utf-8", "surrogateescape")


# -- building an upstream and a stack ------------------------------------------------------


def fast_import_blob(path: str, mode: str, data: bytes | None) -> bytes:
    """One file command of a `git fast-import` commit; ``data`` None deletes the path."""
    if data is None:
        return f"D {path}\n".encode()
    return f"M {mode} inline {path}\ndata {len(data)}\n".encode() + data + b"\n"


def fast_import_commit(ref: str, message: str, parent: str | None,
                       files: Sequence[bytes], *, date: str = FIXED_DATE) -> bytes:
    """One commit of a `git fast-import` stream; ``date`` is "<unix seconds> +0000"."""
    msg = message.encode()
    out = [f"commit {ref}\n".encode(),
           f"author {IDENTITY} {date}\ncommitter {IDENTITY} {date}\n".encode(),
           f"data {len(msg)}\n".encode(), msg, b"\n"]
    if parent:
        out.append(f"from {parent}\n".encode())
    out += files
    out.append(b"\n")
    return b"".join(out)


def init_bare(path: Path, *, alternates: Path | None = None) -> Path:
    """A bare repo; with ``alternates`` it borrows that object store and writes only its own."""
    git(None, "init", "-q", "--bare", path)
    if alternates is not None:
        (path / "objects" / "info" / "alternates").write_text(f"{alternates.resolve()}\n")
    return path


def read_blobs(repo: Path, blob_ids: Sequence[str]) -> dict[str, bytes]:
    """Contents of many blobs with one `git cat-file --batch`."""
    if not blob_ids:
        return {}
    out = run(["git", "-C", repo, "cat-file", "--batch"],
              input="".join(f"{b}\n" for b in blob_ids).encode())
    blobs: dict[str, bytes] = {}
    pos = 0
    for blob in blob_ids:
        nl = out.index(b"\n", pos)
        header = out[pos:nl].split()
        if len(header) != 3:
            raise BenchError(f"cannot read blob {blob}: {out[pos:nl]!r}")
        size = int(header[2])
        blobs[blob] = out[nl + 1: nl + 1 + size]
        pos = nl + 1 + size + 1
    return blobs


@dataclass(frozen=True)
class TreeEntry:
    mode: str
    blob: str
    size: int
    path: str


def ls_tree(repo: Path, treeish: str) -> list[TreeEntry]:
    """Regular files of ``treeish`` whose blobs are present (a mirror may lack big ones)."""
    entries = []
    for line in git(repo, "ls-tree", "-r", "-l", "-z", treeish).split("\0"):
        if not line:
            continue
        meta, path = line.split("\t", 1)
        mode, kind, blob, size = meta.split()
        if kind == "blob" and mode in ("100644", "100755") and size.isdigit():
            entries.append(TreeEntry(mode, blob, int(size), path))
    return entries


_COMMENT = {
    ".c": "//", ".cc": "//", ".cpp": "//", ".cxx": "//", ".h": "//", ".hh": "//",
    ".hpp": "//", ".cu": "//", ".cuh": "//", ".m": "//", ".mm": "//", ".metal": "//",
    ".comp": "//", ".glsl": "//", ".cl": "//", ".js": "//", ".ts": "//", ".swift": "//",
    ".py": "#", ".cmake": "#", ".sh": "#",
}


def comment_prefix(path: str) -> str | None:
    name = path.rsplit("/", 1)[-1]
    if name == "CMakeLists.txt":
        return "#"
    return _COMMENT.get(os.path.splitext(name)[1].lower())


def edit_text(data: bytes, *, path: str, tag: str, rng: random.Random, hunks: int) -> bytes:
    """A narrow edit: at ``hunks`` places far apart, insert a comment line after a unique
    line, or append a comment to it. The result differs from ``data`` in those places only.
    """
    prefix = comment_prefix(path)
    if prefix is None:
        raise BenchError(f"no comment syntax known for {path}")
    lines = data.split(b"\n")
    counts: dict[bytes, int] = {}
    for ln in lines:
        counts[ln] = counts.get(ln, 0) + 1
    # Unique, non-blank, no continuation: a comment after it changes nothing else.
    usable = [i for i, ln in enumerate(lines[:-1]) if counts[ln] == 1 and ln.strip()
              and not ln.rstrip().endswith(b"\\") and b"\r" not in ln and i >= 4]
    if not usable:
        raise BenchError(f"{path}: no line to edit")
    picked: list[int] = []
    for i in rng.sample(usable, len(usable)):
        if all(abs(i - j) > 12 for j in picked):
            picked.append(i)
        if len(picked) == hunks:
            break
    for n, i in enumerate(sorted(picked, reverse=True)):
        note = f"{prefix} patchctl-bench {tag}.{n}".encode()
        if (rng.random() < 0.5 and prefix == "//" and b"//" not in lines[i]
                and b"/*" not in lines[i] and b'"' not in lines[i]):
            lines[i] = lines[i].rstrip() + b" " + note  # a changed line: one '-', one '+'
        else:
            indent = re.match(rb"[ \t]*", lines[i]).group(0)  # type: ignore[union-attr]
            lines.insert(i + 1, indent + note)
    return b"\n".join(lines)


@dataclass
class PatchSpec:
    """One narrow patch: the files it edits (and, optionally, a file it adds)."""

    index: int  # 1-based
    edits: list[str]  # existing paths to edit
    new_file: str | None = None
    hunks: dict[str, int] = field(default_factory=dict)  # path -> number of hunks

    @property
    def concern(self) -> str:
        return f"bench-{self.index:04d}"

    @property
    def paths(self) -> list[str]:
        return self.edits + ([self.new_file] if self.new_file else [])


def plan_patches(candidates: Sequence[str], count: int, rng: random.Random,
                 *, new_every: int = 0, new_dir: str = "bench") -> list[PatchSpec]:
    """``count`` patches of one or two files each; a file is edited by one patch at most."""
    pool = list(candidates)
    rng.shuffle(pool)
    specs: list[PatchSpec] = []
    for i in range(1, count + 1):
        adds = bool(new_every) and i % new_every == 0
        n_edit = 1 if adds or rng.random() < 0.6 else 2
        if len(pool) < n_edit:
            raise BenchError(f"only {len(candidates)} editable files for {count} patches")
        edits = [pool.pop() for _ in range(n_edit)]
        spec = PatchSpec(index=i, edits=edits,
                         new_file=f"{new_dir}/added_{i:04d}.c" if adds else None)
        spec.hunks = {p: (2 if rng.random() < 0.25 else 1) for p in edits}
        specs.append(spec)
    return specs


def build_patch_series(gen_repo: Path, base: str, entries: dict[str, TreeEntry],
                       specs: Sequence[PatchSpec], rng: random.Random, out_dir: Path) -> list[str]:
    """Commit ``specs`` on ``base`` in ``gen_repo`` (one fast-import) and write them with
    `git format-patch --zero-commit --no-signature` into ``out_dir``; returns file names.
    """
    wanted = sorted({entries[p].blob for s in specs for p in s.edits})
    blobs = read_blobs(gen_repo, wanted)
    current: dict[str, bytes] = {}
    stream: list[bytes] = []
    parent: str | None = base
    for spec in specs:
        files: list[bytes] = []
        for path in spec.edits:
            old = current.get(path, blobs[entries[path].blob])
            new = edit_text(old, path=path, tag=spec.concern, rng=rng, hunks=spec.hunks[path])
            current[path] = new
            files.append(fast_import_blob(path, entries[path].mode, new))
        if spec.new_file:
            body = (f"/* {spec.new_file}: added by {spec.concern}. */\n"
                    f"int bench_added_{spec.index:04d}(void)\n{{\n"
                    f"    return {spec.index};\n}}\n").encode()
            files.append(fast_import_blob(spec.new_file, "100644", body))
        first = spec.edits[0].rsplit("/", 1)[-1]
        message = (f"bench : narrow change {spec.index:04d} in {first}\n\n"
                   f"Generated by patchctl's verify benchmark: a one-concern patch.\n\n"
                   f"Concern: {spec.concern}\n"
                   f"Upstream-Status: Pending\n"
                   f"Scope: {' '.join(spec.paths)}\n"
                   f"Reproducer: reproducers/{spec.concern}\n")
        stream.append(fast_import_commit("refs/heads/bench-stack", message, parent, files))
        parent = None  # later commits continue the branch
    run(["git", "-C", gen_repo, "fast-import", "--quiet", "--force"], input=b"".join(stream))
    out_dir.mkdir(parents=True, exist_ok=True)
    names = git(gen_repo, "format-patch", "-N", "--zero-commit", "--no-signature",
                "-o", out_dir, f"{base}..refs/heads/bench-stack").split()
    return [Path(n).name for n in names]


def write_project(project: Path, *, name: str, url: str, pin: str, patch_dir: Path,
                  patch_names: Sequence[str], patchctl: Path) -> Path:
    """``project/stack``: pin, series, patches, and a current lock written by `patchctl lock`."""
    stack = project / "stack"
    (stack / "patches").mkdir(parents=True, exist_ok=True)
    (stack / "upstream.toml").write_text(
        f'name = "{name}"\nurl = "{url}"\ncommit = "{pin}"\n')
    for n in patch_names:
        shutil.copyfile(patch_dir / n, stack / "patches" / n)
    (stack / "series").write_text("".join(f"{n}\n" for n in patch_names))
    run([patchctl, "lock"], cwd=project)
    return project


# -- timing ---------------------------------------------------------------------------------


def timed(argv: Sequence[str | os.PathLike[str]], *, cwd: Path | None = None,
          env: dict[str, str] | None = None) -> float:
    """Wall seconds of one run of ``argv``; output discarded, non-zero exit is an error."""
    args = [str(a) for a in argv]
    t0 = time.perf_counter()
    proc = subprocess.run(args, cwd=cwd, env=env or hermetic_env(), stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace").strip()[-2000:]
        raise BenchError(f"`{' '.join(args)}` exited {proc.returncode}: {tail}")
    return elapsed


@dataclass
class Case:
    """One measured thing: ``prepare`` (untimed) runs before each ``measure`` call."""

    name: str
    measure: Callable[[], float]
    prepare: Callable[[], None] | None = None
    reps: int | None = None  # None: the run's default
    warmup: int | None = None  # None: the run's default


def measure_round_robin(cases: Sequence[Case], *, reps: int, warmup: int,
                        log: Callable[[str], None] | None = None) -> dict[str, list[float]]:
    """Warm up, then time the cases interleaved, so a load spike on a shared machine
    hits all of them alike instead of skewing one. Returns the timed samples by name.
    A case with fewer repetitions than the others runs in the last rounds.
    """
    plan = {c.name: (c.warmup if c.warmup is not None else warmup,
                     c.reps if c.reps is not None else reps) for c in cases}
    rounds = max(w + r for w, r in plan.values())
    samples: dict[str, list[float]] = {c.name: [] for c in cases}
    for r in range(rounds):
        for c in cases:
            w, n = plan[c.name]
            start = rounds - (w + n)  # align every case's runs to the end
            if r < start:
                continue
            if c.prepare:
                c.prepare()
            t = c.measure()
            if r >= start + w:
                samples[c.name].append(t)
        if log:
            log(f"  round {r + 1}/{rounds}")
    return samples


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs)


def find_patchctl(given: str | None) -> Path:
    """The console script to measure: ``given``, else the one next to this Python, else
    the one on PATH."""
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


# -- facts about the machine ----------------------------------------------------------------


def first_line(argv: Sequence[str]) -> str | None:
    if shutil.which(argv[0]) is None:
        return None
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (proc.stdout or proc.stderr).strip().splitlines()
    return lines[0] if lines else None


def machine_facts() -> dict[str, object]:
    facts: dict[str, object] = {
        "nproc": os.cpu_count(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "python_executable": sys.executable,
    }
    with contextlib.suppress(OSError):
        facts["loadavg"] = [round(x, 2) for x in os.getloadavg()]
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                facts["cpu"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return facts


def loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def emit(result: dict[str, Any], out: Path | None, as_json: bool,
         render: Callable[[dict[str, Any]], str]) -> int:
    """A bench's result: written to out (JSON) when given, printed as JSON or rendered."""
    if out:
        out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2) if as_json else render(result))
    return 0
