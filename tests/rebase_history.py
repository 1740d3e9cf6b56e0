"""A synthetic upstream history in which known commits break known patches.

On top of ``make_upstream``'s ``base`` (the pin), 48 first-parent commits
``c01``..``c48`` (``c40`` merges a two-commit side branch), mostly docs
filler, made with one ``git fast-import``, with these planted:

| commit | change | effect on the stack at the head |
| --- | --- | --- |
| c05 | three comment lines at the top of src/tiny.c | 0002, 0005 need an offset |
| c13 | rewords the comment two lines below 0004's change | 0004 needs a 3-way merge |
| c22 | adds tiny_min (0006's change), edits util.c's header and README | 0006 upstream |
| c28 | turns TINY_BUILD_TESTS ON, half of 0007 | 0007 3-way, content changed |
| c31 | rewrites the line 0005 changes, differently | 0005 conflicts |
| c36 | adds `#define TINY_HAS_MIN 1`, exactly 0008 | 0008 upstream (patch-id) |

The eight patches are made cumulatively on ``base`` with ``git format-patch``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.builders import Upstream, git, make_project, make_upstream, replace_in

PATCH_NAMES = [
    "0001-util-add-tiny_square.patch",
    "0002-tiny-bump-op-02.patch",
    "0003-tiny-declare-tiny_square.patch",
    "0004-tiny-scale-op-10.patch",
    "0005-tiny-tighten-op-15.patch",
    "0006-util-add-tiny_min.patch",
    "0007-cmake-define-TINY_PATCHED.patch",
    "0008-tiny-advertise-tiny_min.patch",
]

TINY_MIN = "\nint tiny_min(int a, int b)\n{\n    return a < b ? a : b;\n}\n"
CMAKE_OPTION = 'option(TINY_BUILD_TESTS "Build tiny\'s own tests" OFF)'


@dataclass
class History:
    upstream: Upstream
    patches: list[tuple[str, str]]


def _edits() -> list[tuple[str, str, str, object]]:
    """(subject, concern, scope, edit(work)) for the eight patches, in series order."""

    def square(w: Path) -> None:
        replace_in(w / "src/util.c", "int tiny_abs(int v)",
                   "int tiny_square(int v)\n{\n    return v * v;\n}\n\nint tiny_abs(int v)")

    def bump(w: Path) -> None:
        replace_in(w / "src/tiny.c", "    int y = x * 4;\n",
                   "    int y = x * 4 + 1; /* patched */\n")

    def declare(w: Path) -> None:
        replace_in(w / "include/tiny.h", "int tiny_version(void);\n",
                   "int tiny_version(void);\nint tiny_square(int v);\n")

    def scale(w: Path) -> None:
        replace_in(w / "src/tiny.c", "    int y = x * 12;\n", "    int y = x * 12 + 3;\n")

    def tighten(w: Path) -> None:
        replace_in(w / "src/tiny.c", "        y -= 16;\n", "        y -= 17;\n")

    def add_min(w: Path) -> None:
        (w / "src/util.c").write_text((w / "src/util.c").read_text() + TINY_MIN)

    def cmake(w: Path) -> None:
        replace_in(w / "CMakeLists.txt", CMAKE_OPTION, CMAKE_OPTION.replace("OFF", "ON"))
        text = (w / "CMakeLists.txt").read_text()
        (w / "CMakeLists.txt").write_text(text + "target_compile_definitions(tiny PUBLIC "
                                          "TINY_PATCHED=1)\n")

    def advertise(w: Path) -> None:
        replace_in(w / "include/tiny.h", "#define TINY_VERSION 1\n",
                   "#define TINY_VERSION 1\n#define TINY_HAS_MIN 1\n")

    return [
        ("util : add tiny_square", "square", "src/util.c", square),
        ("tiny : bump op 02", "bump", "src/tiny.c", bump),
        ("tiny : declare tiny_square", "square", "include/tiny.h", declare),
        ("tiny : scale op 10", "scale", "src/tiny.c", scale),
        ("tiny : tighten op 15", "tighten", "src/tiny.c", tighten),
        ("util : add tiny_min", "min", "src/util.c", add_min),
        ("cmake : define TINY_PATCHED", "cmake", "CMakeLists.txt", cmake),
        ("tiny : advertise tiny_min", "min", "include/tiny.h", advertise),
    ]


def make_stack_patches(upstream: Upstream, scratch: Path) -> list[tuple[str, str]]:
    base = upstream.commits["base"]
    git(upstream.path.parent, "clone", "-q", "--no-checkout", str(upstream.path), str(scratch))
    git(scratch, "checkout", "-q", "-b", "stack", base)
    for subject, concern, scope, edit in _edits():
        edit(scratch)  # type: ignore[operator]
        message = (f"{subject}\n\nWhy: the downstream needs it.\n\nConcern: {concern}\n"
                   f"Upstream-Status: Pending\nScope: {scope}\n")
        git(scratch, "commit", "-q", "-a", "-m", message)
    out = scratch / "out"
    names = git(scratch, "format-patch", "--zero-commit", "--no-signature", "-o",
                str(out), f"{base}..stack").split()
    assert [Path(n).name for n in names] == PATCH_NAMES, names
    return [(n, (out / n).read_text()) for n in PATCH_NAMES]


def _import_commit(ref: str, message: str, parent: str, files: dict[str, str],
                   merge: str | None = None, mark: int | None = None) -> bytes:
    """One `git fast-import` commit; a whole history costs one git process."""
    ident = "Upstream Dev <dev@upstream.invalid> 1767225600 +0000"
    msg = message.encode()
    out = [f"commit {ref}\n".encode()]
    if mark is not None:
        out.append(f"mark :{mark}\n".encode())
    out += [f"author {ident}\ncommitter {ident}\n".encode(), f"data {len(msg)}\n".encode(),
            msg, b"\n", f"from {parent}\n".encode()]
    if merge:
        out.append(f"merge {merge}\n".encode())
    for path, text in files.items():
        data = text.encode()
        out.append(f"M 100644 inline {path}\ndata {len(data)}\n".encode() + data + b"\n")
    out.append(b"\n")
    return b"".join(out)


def make_history(root: Path) -> History:
    up = make_upstream(root / "upstream")
    patches = make_stack_patches(up, root / "scratch")
    path = up.path
    files = {rel: (path / rel).read_text() for rel in
             ("src/tiny.c", "src/util.c", "include/tiny.h", "CMakeLists.txt", "README.md")}

    def change(rel: str, old: str, new: str) -> dict[str, str]:
        assert old in files[rel], (rel, old)
        files[rel] = files[rel].replace(old, new, 1)
        return {rel: files[rel]}

    stream: list[bytes] = []
    parent = up.commits["base"]
    for i in range(1, 49):
        pr = 100 + i
        merge = None
        if i == 5:
            header = "/* tiny: a small library for patchctl's tests. */\n"
            edit = change("src/tiny.c", header, header + "/* Ops are numbered. */\n"
                          "/* Each keeps its value bounded. */\n/* See README.md. */\n")
            subject = f"tiny : document the ops (#{pr})"
        elif i == 13:
            edit = change("src/tiny.c", "/* step 10: keep the value bounded */",
                          "/* step 10: keep the value small */")
            subject = f"tiny : reword op 10 comment (#{pr})"
        elif i == 22:
            edit = change("src/util.c", files["src/util.c"], files["src/util.c"] + TINY_MIN)
            # Not 0006's diff even within src/util.c: only reverse-applying can tell.
            edit |= change("src/util.c", "/* Helpers shared by the ops. */",
                           "/* Helpers shared by the ops; tiny_min too. */")
            edit |= change("README.md", "Build with CMake.", "Build with CMake; see tiny_min.")
            subject = f"util : add tiny_min, mention it (#{pr})"
        elif i == 28:
            edit = change("CMakeLists.txt", CMAKE_OPTION, CMAKE_OPTION.replace("OFF", "ON"))
            subject = f"cmake : build tests by default (#{pr})"
        elif i == 31:
            edit = change("src/tiny.c", "        y -= 16;\n", "        y -= 18;\n")
            subject = f"tiny : retune op 15 (#{pr})"
        elif i == 36:
            edit = change("include/tiny.h", "#define TINY_VERSION 1\n",
                          "#define TINY_VERSION 1\n#define TINY_HAS_MIN 1\n")
            subject = f"tiny : advertise tiny_min (#{pr})"
        elif i == 40:
            side = parent
            for n, part in enumerate(("a", "b")):
                stream.append(_import_commit("refs/heads/side", f"docs : side page {part} "
                                             f"(#{pr}{part})\n", side,
                                             {f"docs/side-{part}.md": f"# side {part}\n"},
                                             mark=900 + n))
                side = f":{900 + n}"
            # fast-import does not merge trees: the merge commit carries the side's files.
            edit = {f"docs/side-{part}.md": f"# side {part}\n" for part in ("a", "b")}
            merge = ":901"
            subject = f"Merge side pages (#{pr})"
        else:
            edit = {f"docs/page{i:02d}.md": f"# Page {i}\n\nText {i}.\n"}
            subject = f"docs : page {i} (#{pr})"
        stream.append(_import_commit("refs/heads/master", subject + "\n", parent, edit,
                                     merge=merge, mark=i))
        parent = f":{i}"
    marks = root / "marks"
    git(path, "fast-import", "--quiet", f"--export-marks={marks}",
        input=b"".join(stream).decode())
    for line in marks.read_text().splitlines():
        mark, commit = line.split()
        if int(mark[1:]) < 900:
            up.commits[f"c{int(mark[1:]):02d}"] = commit
    git(path, "reset", "-q", "--hard", "master")
    git(path, "tag", "v2", up.commits["c30"])
    return History(up, patches)


# -- small stacked histories: a pin P1, an upstream move to P2, a stack made on P1 ----------

Change = tuple[str, str] | list[tuple[str, str]] | str | None
Edit = tuple[str, dict[str, Change]]  # subject, path -> (old, new), or several, or the
# whole new text, or None (deleted)


def _apply_edit(work: Path, changes: dict[str, Change]) -> None:
    for rel, change in changes.items():
        path = work / rel
        if change is None:
            path.unlink()
        elif isinstance(change, str):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(change)
        else:
            for old, new in change if isinstance(change, list) else [change]:
                replace_in(path, old, new)


def make_stacked(root: Path, files: dict[str, str], upstream: list[Edit],
                 stack: list[tuple[Edit, str]]) -> tuple[Upstream, list[tuple[str, str]]]:
    """An upstream whose first commit ``P1`` holds ``files`` and whose ``upstream`` edits,
    one commit each, lead to ``P2``; and the stack: each (edit, Scope) committed on P1 in
    turn and written with `git format-patch`, as (file name, text)."""
    up = root / "up"
    up.mkdir(parents=True)
    git(up, "init", "-q", "-b", "master")
    _apply_edit(up, dict(files))
    git(up, "add", "-A")
    git(up, "commit", "-q", "-m", "root (#1)")
    commits = {"P1": git(up, "rev-parse", "HEAD").strip()}
    for n, (subject, changes) in enumerate(upstream, 2):
        _apply_edit(up, changes)
        git(up, "add", "-A")
        git(up, "commit", "-q", "-m", f"{subject} (#{n})")
        commits[f"u{n - 1}"] = git(up, "rev-parse", "HEAD").strip()
    commits["P2"] = git(up, "rev-parse", "HEAD").strip()
    git(up, "tag", "P1", commits["P1"])
    git(up, "tag", "P2", commits["P2"])
    scratch = root / "scratch"
    git(root, "clone", "-q", "--no-checkout", str(up), str(scratch))
    git(scratch, "checkout", "-q", "-b", "stack", commits["P1"])
    for (subject, changes), scope in stack:
        _apply_edit(scratch, changes)
        git(scratch, "add", "-A")
        git(scratch, "commit", "-q", "-m", f"{subject}\n\nWhy: the downstream needs it.\n\n"
            f"Concern: {subject.split()[0]}\nUpstream-Status: Pending\nScope: {scope}\n")
    out = scratch / "out"
    names = git(scratch, "format-patch", "--zero-commit", "--no-signature", "-o", str(out),
                f"{commits['P1']}..stack").split()
    return Upstream(up, commits), [(Path(n).name, Path(n).read_text()) for n in names]


def stacked_project(root: Path, built: tuple[Upstream, list[tuple[str, str]]]
                    ) -> tuple[Path, Upstream]:
    """A project pinned at ``P1`` of a copy of ``make_stacked``'s upstream (``built``, made
    once per module), both under ``root``: one test's own."""
    up, patches = built
    up = up.copy(root / "up")
    return make_project(root / "project", up, patches, pin=up.commits["P1"]), up


def stopped_at(cli: Any, project: Path, up: Upstream, name: str) -> Path:
    """Rebase ``project`` to ``P2``; it must stop at the patch ``name``: its work tree."""
    r = cli("-C", str(project), "rebase-pin", "P2", "--upstream", str(up.path), "--json")
    data = json.loads(r.out)
    assert (r.code, data["status"], data["conflict"]) == (1, "stopped", name), data
    return Path(data["work"])
