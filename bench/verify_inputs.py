"""The verify bench's inputs: a synthetic upstream (or llama.cpp's files at a pin) and a
stack of narrow patches on it, as projects of 20, 200 and 2,000 patches.

Everything is generated in a temp dir that bench/verify.py owns; nothing is written to
the repository or to a llama.cpp clone (its objects are borrowed through alternates).
bench/burden.py and bench/import_series.py build the same synthetic upstream.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

from _common import (
    BenchError,
    PatchSpec,
    build_patch_series,
    comment_prefix,
    fast_import_blob,
    fast_import_commit,
    git,
    init_bare,
    ls_tree,
    plan_patches,
    production_pin,
    read_blobs,
    run,
    write_project,
)

LLAMA_URL = production_pin().url


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


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
        self.pin_tree = git(upstream, "rev-parse", f"{pin}^{{tree}}").strip()
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
