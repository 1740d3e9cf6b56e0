"""Shared builders: a small synthetic upstream (a real git repo) and stacks against it.

The upstream is a C library `tiny` with a CMake target of that name: a few
hundred lines in several commits, so patches, offsets, conflicts and
reproducers all have something real to bite on. Everything is written with
fixed identities and dates, so commit ids are the same on every run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FIXED_ENV = {
    "GIT_AUTHOR_NAME": "Upstream Dev",
    "GIT_AUTHOR_EMAIL": "dev@upstream.invalid",
    "GIT_COMMITTER_NAME": "Upstream Dev",
    "GIT_COMMITTER_EMAIL": "dev@upstream.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    "LC_ALL": "C",
}


def git(repo: Path, *args: str, input: str | None = None, env: dict | None = None) -> str:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    full_env.update(FIXED_ENV)
    for key in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM"):
        if key in os.environ:
            full_env[key] = os.environ[key]
    full_env.update(env or {})
    proc = subprocess.run(["git", "-C", str(repo), *args], input=input, capture_output=True,
                          text=True, env=full_env, check=False)
    if proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout


def op_function(i: int) -> str:
    return (
        f"int tiny_op_{i:02d}(int x)\n"
        "{\n"
        f"    int y = x * {i + 2};\n"
        f"    y += {i * 7 % 11};\n"
        f"    /* step {i}: keep the value bounded */\n"
        f"    if (y > {1000 + i}) {{\n"
        f"        y -= {i + 1};\n"
        "    }\n"
        "    return y;\n"
        "}\n"
    )


def tiny_c(n_ops: int = 24, *, extra: str = "") -> str:
    body = "\n".join(op_function(i) for i in range(n_ops))
    return (
        '#include "tiny.h"\n\n'
        "/* tiny: a small library for patchctl's tests. */\n\n"
        f"{body}\n"
        "int tiny_version(void)\n{\n    return TINY_VERSION;\n}\n" + extra
    )


def tiny_h(n_ops: int = 24, version: int = 1) -> str:
    decls = "".join(f"int tiny_op_{i:02d}(int x);\n" for i in range(n_ops))
    return (
        "#ifndef TINY_H\n#define TINY_H\n\n"
        f"#define TINY_VERSION {version}\n\n"
        "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
        f"{decls}int tiny_version(void);\n\n"
        "#ifdef __cplusplus\n}\n#endif\n\n#endif /* TINY_H */\n"
    )


CMAKELISTS = """cmake_minimum_required(VERSION 3.16)
project(tiny C)

option(TINY_BUILD_TESTS "Build tiny's own tests" OFF)

add_library(tiny STATIC src/tiny.c src/util.c)
target_include_directories(tiny PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)
"""

UTIL_C = """#include "tiny.h"

/* Helpers shared by the ops. */

int tiny_clamp(int v, int lo, int hi)
{
    if (v < lo) {
        return lo;
    }
    if (v > hi) {
        return hi;
    }
    return v;
}
"""


@dataclass
class Upstream:
    path: Path
    commits: dict[str, str]  # label -> commit id

    @property
    def head(self) -> str:
        return git(self.path, "rev-parse", "HEAD").strip()

    def tree(self, ref: str = "HEAD") -> str:
        return git(self.path, "rev-parse", f"{ref}^{{tree}}").strip()

    def copy(self, dest: Path) -> Upstream:
        """This upstream copied to ``dest``: a session-wide history, one copy per test."""
        shutil.copytree(self.path, dest, symlinks=True)
        return Upstream(dest, dict(self.commits))


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def commit_all(repo: Path, message: str, *, date: str | None = None) -> str:
    """Commit every change; ``date`` (ISO 8601) is the author's and committer's date."""
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message,
        env={"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else None)
    return git(repo, "rev-parse", "HEAD").strip()


def make_upstream(path: Path, *, n_docs: int = 0) -> Upstream:
    """A git repo of the `tiny` C library in three commits; ``base`` is the usual pin."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "master")
    write(path, {
        "CMakeLists.txt": CMAKELISTS,
        "include/tiny.h": tiny_h(),
        "src/tiny.c": tiny_c(),
        "src/util.c": UTIL_C,
        "README.md": "# tiny\n\nA small C library.\n",
    })
    for i in range(n_docs):
        write(path, {f"docs/page{i:04d}.md": f"# Page {i}\n\nText {i}.\n"})
    commits = {"initial": commit_all(path, "tiny : initial import (#1)")}
    write(path, {"README.md": "# tiny\n\nA small C library.\n\nBuild with CMake.\n"})
    commits["readme"] = commit_all(path, "docs : how to build (#2)")
    tiny_abs = "\nint tiny_abs(int v)\n{\n    return v < 0 ? -v : v;\n}\n"
    write(path, {"src/util.c": UTIL_C + tiny_abs})
    commits["base"] = commit_all(path, "util : add tiny_abs (#3)")
    return Upstream(path, commits)


def format_patch(
    upstream: Upstream,
    base: str,
    edit: Callable[[Path], None],
    *,
    subject: str,
    trailers: dict[str, str] | None = None,
    body: str = "Why this change is needed.",
    scratch: Path,
) -> str:
    """A `git format-patch` patch made by ``edit`` on a scratch clone at ``base``."""
    work = scratch
    if not work.exists():
        git(upstream.path.parent, "clone", "-q", "--no-checkout", str(upstream.path), str(work))
    git(work, "checkout", "-q", "-f", "--detach", base)
    git(work, "clean", "-qfdx")
    edit(work)
    lines = [subject, "", body, ""]
    lines += [f"{k}: {v}" for k, v in (trailers or {}).items()]
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "\n".join(lines))
    return git(work, "format-patch", "-1", "--stdout", "--zero-commit", "--no-signature", "HEAD")


def replace_in(path: Path, old: str, new: str, count: int = 1) -> None:
    text = path.read_text()
    if old not in text:
        raise AssertionError(f"{old!r} not in {path}")
    path.write_text(text.replace(old, new, count))


def default_trailers(concern: str, scope: str, **extra: str) -> dict[str, str]:
    trailers = {"Concern": concern, "Upstream-Status": "Pending", "Scope": scope}
    trailers.update(extra)
    return trailers


def make_project(
    path: Path,
    upstream: Upstream,
    patches: list[tuple[str, str]],
    *,
    pin: str | None = None,
    lock: bool = True,
    series_extra: dict[str, str] | None = None,
    url: str | None = None,
) -> Path:
    """A project dir with stack/ (pin, series, patches) and, with ``lock``, a current lock.
    ``url``: the pin file's URL (default: the upstream's path)."""
    from patchctl.model.fingerprint import make_lock
    from patchctl.model.stack import Pin, Stack, render_lock

    stack = Stack(path / "stack")
    stack.patches_dir.mkdir(parents=True, exist_ok=True)
    pin_obj = Pin(name="tiny", url=url or str(upstream.path),
                  commit=pin or upstream.commits["base"])
    stack.pin_path.write_text(pin_obj.to_toml())
    lines = ["# test series"]
    for name, text in patches:
        (stack.patches_dir / name).write_text(text)
        lines.append(name + ((" " + series_extra[name]) if series_extra and name in
                             series_extra else ""))
    stack.series_path.write_text("\n".join(lines) + "\n")
    if lock:
        stack.lock_path.write_text(render_lock(make_lock(pin_obj, stack.patches())))
    return path


def imported_project(cli: Callable[..., Any], root: Path, upstream: Upstream,
                     patches: list[tuple[str, str]]) -> Path:
    """A project under ROOT made the way a user makes one: `init` at `base`, then
    `import` of PATCHES as files (so the patches are in patchctl's own form)."""
    project = root / "proj"
    project.mkdir()
    assert cli("-C", str(project), "init", "--upstream", str(upstream.path), "--pin",
               upstream.commits["base"]).code == 0
    sources = root / "sources"
    sources.mkdir()
    for name, text in patches:
        (sources / name).write_text(text)
    r = cli("-C", str(project), "import", *sorted(str(p) for p in sources.iterdir()))
    assert r.code == 0, r.err
    return project


def stop_a_rebase(project: Path) -> None:
    """Leave PROJECT as a `rebase-pin` stopped half-way leaves it (its state file)."""
    import json

    state = project / ".patchctl" / "rebase"
    state.mkdir(parents=True)
    (state / "state.json").write_text(json.dumps({
        "schema": "patchctl.rebase-state/2", "stack": str(project / "stack"), "upstream": "u",
        "old": "0" * 40, "new": "f" * 40, "new_ref": "next", "tag": None,
        "drop_upstream": False, "commits": None, "bisect_checks": 0, "snapshot": {},
        "head": "0" * 40, "done": [], "conflict": None}))


# Three narrow, independent patches against `base`, used by several test modules.
def standard_patches(upstream: Upstream, scratch: Path) -> list[tuple[str, str]]:
    base = upstream.commits["base"]

    def add_square(work: Path) -> None:
        replace_in(work / "src/util.c", "int tiny_abs(int v)",
                   "int tiny_square(int v)\n{\n    return v * v;\n}\n\nint tiny_abs(int v)")

    def bump_op(work: Path) -> None:
        replace_in(work / "src/tiny.c", "    int y = x * 4;\n",
                   "    int y = x * 4 + 1; /* patched */\n")

    def header_api(work: Path) -> None:
        replace_in(work / "include/tiny.h", "int tiny_version(void);\n",
                   "int tiny_version(void);\nint tiny_square(int v);\n")

    return [
        ("0001-util-add-tiny_square.patch", format_patch(
            upstream, base, add_square, subject="util : add tiny_square",
            trailers=default_trailers("square", "src/util.c",
                                      Reproducer="reproducers/square"), scratch=scratch)),
        ("0002-tiny-bump-op-02.patch", format_patch(
            upstream, base, bump_op, subject="tiny : bump op 02",
            trailers=default_trailers("bump", "src/*.c"), scratch=scratch)),
        ("0003-tiny-declare-square.patch", format_patch(
            upstream, base, header_api, subject="tiny : declare tiny_square",
            trailers=default_trailers("square", "include/**"), scratch=scratch)),
    ]


# -- a synthetic stack of many narrow patches -----------------------------------------------


def doc_patch_text(number: int, page: int, old: str, new: str, *, subject: str) -> str:
    """A format-patch style patch changing line 3 of docs/pageNNNN.md from ``old`` to ``new``."""
    path = f"docs/page{page:04d}.md"
    return (
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
        "From: Downstream Dev <dev@downstream.invalid>\n"
        "Date: Thu, 1 Jan 2026 00:00:00 +0000\n"
        f"Subject: [PATCH] {subject}\n\n"
        f"Patch {number} of the synthetic stack.\n\n"
        f"Concern: doc-{page:04d}\nUpstream-Status: Pending\nScope: {path}\n"
        "---\n"
        f" {path} | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n\n"
        f"diff --git a/{path} b/{path}\n"
        f"--- a/{path}\n+++ b/{path}\n"
        "@@ -1,3 +1,3 @@\n"
        f" # Page {page}\n \n-{old}\n+{new}\n"
    )


def many_patches(n: int = 50) -> list[tuple[str, str]]:
    """``n`` patches against ``make_upstream(n_docs=n)``: patch k (1-based) edits page k-1,
    except the last, which edits page 0 again on top of patch 1 (so it must come after it)."""
    out: list[tuple[str, str]] = []
    for k in range(1, n):
        page = k - 1
        out.append((f"{k:04d}-docs-page-{page:04d}.patch", doc_patch_text(
            k, page, f"Text {page}.", f"Text {page}, patched.", subject=f"docs : page {page}")))
    out.append((f"{n:04d}-docs-page-0000-again.patch", doc_patch_text(
        n, 0, "Text 0, patched.", "Text 0, patched twice.", subject="docs : page 0 again")))
    return out


@contextlib.contextmanager
def system_config_off(**extra: str) -> Iterator[None]:
    """The system git config ignored (and ``extra`` variables set), for fixtures wider than
    one test (the autouse isolation is per test); the environment is restored afterwards."""
    old = os.environ.copy()
    os.environ.update(GIT_CONFIG_NOSYSTEM="1", **extra)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(old)


@contextlib.contextmanager
def special_file(path: Path, kind: str) -> Iterator[Path]:
    """A FIFO (``kind`` "fifo") or a bound Unix socket ("socket") at ``path``, for the
    duration."""
    import socket

    sock = None
    if kind == "fifo":
        os.mkfifo(path)
    else:
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
    try:
        yield path
    finally:
        if sock is not None:
            sock.close()


def drop_blob(upstream: Upstream, path: str) -> None:
    """Make ``upstream`` lack one blob, like a mirror that leaves out its largest files."""
    blob = git(upstream.path, "rev-parse", f"HEAD:{path}").strip()
    loose = upstream.path / ".git/objects" / blob[:2] / blob[2:]
    assert loose.is_file(), "the test upstream keeps its objects loose"
    loose.unlink()
    assert subprocess.run(["git", "-C", str(upstream.path), "cat-file", "-e", blob]).returncode != 0
