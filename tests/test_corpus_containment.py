"""Containment: no command reads or writes outside its area, whatever the input says.

A directory ``outside/`` full of canary files sits beside the project; symlinks into
it are planted in the target, the stack, the private state, the brief directory and
the upstream, and patches name ``../``, absolute and ``.git/`` paths. After each
command every canary is byte-identical, ``outside/`` holds exactly what it held, and
the upstream's refs and objects are as they were.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.builders import Upstream, commit_all, git, make_project, replace_in
from tests.corpus import FINDINGS, OK, USAGE, check, tree_digest


@pytest.fixture
def outside(tmp_path: Path):
    """Canary files, and a check that they are untouched (content, mode and listing)."""
    root = tmp_path / "outside"
    (root / "edit").mkdir(parents=True)
    (root / "edit/precious.txt").write_text("do not delete\n")
    (root / "canary.patch").write_text("canary patch\n")
    (root / "canary.md").write_text("canary brief\n")
    (root / "secret.toml").write_text('title = "SECRET OUTSIDE"\n')
    before = tree_digest(root)
    mtimes = {p: p.stat().st_mtime_ns for p in root.rglob("*")}
    yield root
    assert tree_digest(root) == before, "a file outside the project changed"
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*")} == mtimes


def _upstream_untouched(up: Upstream):
    refs = git(up.path, "for-each-ref") + git(up.path, "status", "--porcelain", "--ignored")
    objects = tree_digest(up.path / ".git/objects")
    return lambda: (git(up.path, "for-each-ref") + git(up.path, "status", "--porcelain",
                                                        "--ignored"),
                    tree_digest(up.path / ".git/objects")) == (refs, objects)


def test_private_state_dir_symlinked_outside(cli, project: Path, outside: Path,
                                             upstream: Upstream) -> None:
    """Bug: `.patchctl` as a symlink (a repository can commit one) made edit write its
    work tree, and delete `edit/`, in the directory it points to; `.patchctl/edit` as a
    link ended in an rmtree traceback. Now refused, naming the link."""
    (project / ".patchctl").symlink_to(outside)
    for argv in (["edit", "0001"], ["new", "x", "--concern", "c", "--scope", "x"],
                 ["refresh"], ["rebase-pin", "--abort"], ["import", str(outside / "c.patch")],
                 ["upstream-status", "--online"]):
        check(cli("-C", str(project), *argv), (USAGE, 3))


def test_state_subdirs_symlinked_outside(cli, project: Path, outside: Path) -> None:
    """`.patchctl/edit` or `.patchctl/rebase` as a symlink out: never followed to delete."""
    (project / ".patchctl").mkdir()
    (project / ".patchctl/edit").symlink_to(outside / "edit")
    (project / ".patchctl/rebase").symlink_to(outside)
    check(cli("-C", str(project), "edit", "0001"), (OK, USAGE, 3))
    check(cli("-C", str(project), "refresh"), (OK, USAGE, 3))
    check(cli("-C", str(project), "rebase-pin", "--abort"), (OK, USAGE, 3))


def test_apply_into_a_tree_with_planted_symlinks(cli, project: Path, outside: Path,
                                                 tmp_path: Path) -> None:
    into = tmp_path / "tree"
    check(cli("-C", str(project), "apply", "--into", str(into)), OK)
    (into / "src/util.c").unlink()
    (into / "src/util.c").symlink_to(outside / "canary.patch")
    (into / "planted").symlink_to(outside)
    check(cli("-C", str(project), "apply", "--into", str(into)), USAGE, "edited")
    check(cli("-C", str(project), "apply", "--into", str(into), "--force"), OK)
    assert not (into / "src/util.c").is_symlink() and not (into / "planted").exists()


def test_apply_into_a_symlink_to_a_directory(cli, project: Path, outside: Path,
                                             tmp_path: Path) -> None:
    """DIR itself a symlink: followed or refused, but never both halves."""
    link = tmp_path / "link"
    link.symlink_to(outside / "edit")
    r = cli("-C", str(project), "apply", "--into", str(link))
    check(r, USAGE, "not made by")  # the link's target holds the user's files
    assert link.is_symlink()


def test_upstream_symlink_and_a_patch_writing_through_it(cli, tmp_path: Path, outside: Path,
                                                         upstream: Upstream) -> None:
    (upstream.path / "linked").symlink_to(outside)
    pin = commit_all(upstream.path, "a link out (#9)")
    text = ("From: A <a@b.invalid>\nSubject: [PATCH] x\n\nwhy\n\nConcern: x\n"
            "Upstream-Status: Pending\nScope: **\n---\n"
            "diff --git a/linked/new.txt b/linked/new.txt\nnew file mode 100644\n"
            "--- /dev/null\n+++ b/linked/new.txt\n@@ -0,0 +1 @@\n+escaped\n")
    project = make_project(tmp_path / "p", upstream, [("0001-x.patch", text)], pin=pin)
    same = _upstream_untouched(upstream)
    check(cli("-C", str(project), "verify"), FINDINGS, "symbolic link")
    check(cli("-C", str(project), "apply", "--into", str(tmp_path / "t")), (USAGE, FINDINGS))
    check(cli("-C", str(project), "apply", "--into", str(tmp_path / "c"), "--commits"),
          (USAGE, FINDINGS))
    check(cli("-C", str(project), "edit", "0001"), (OK, USAGE))
    check(cli("-C", str(project), "export", "--format", "quilt", str(tmp_path / "q")), OK)
    assert same()


@pytest.mark.parametrize("path", ["../escape.txt", "src/../../escape.txt",
                                  ".git/hooks/post-checkout",
                                  ".git/config", "src/.git/config", ".GIT/config",
                                  "/tmp/patchctl-absolute-escape"])
def test_patch_paths_that_leave_the_tree(cli, tmp_path: Path, upstream: Upstream,
                                         outside: Path, path: str) -> None:
    """Nothing lands outside DIR or in a .git; and (bug) a patch that git refuses to apply
    in `edit` or `apply --commits` was an exit-3 tool failure quoting git's command line,
    not the one-line bad-input error it is."""
    strip = "-p0" if path.startswith("/") else None
    a, b = (path, path) if strip else (f"a/{path}", f"b/{path}")
    text = ("From: A <a@b.invalid>\nSubject: [PATCH] x\n\nwhy\n\nConcern: x\n"
            "Upstream-Status: Pending\nScope: **\n---\n"
            f"diff --git {a} {b}\nnew file mode 100755\n--- /dev/null\n+++ {b}\n"
            "@@ -0,0 +1,2 @@\n+#!/bin/sh\n+touch " + str(outside) + "/HOOK-RAN\n")
    project = make_project(tmp_path / "p", upstream, [("0001-x.patch", text)],
                           series_extra={"0001-x.patch": strip} if strip else None)
    same = _upstream_untouched(upstream)
    check(cli("-C", str(project), "verify"), (FINDINGS, USAGE))
    for into, extra in ((tmp_path / "t", ()), (tmp_path / "c", ("--commits",))):
        r = cli("-C", str(project), "apply", "--into", str(into), *extra)
        check(r, (OK, FINDINGS, USAGE))
        if r.code == OK:
            assert (into / ".git").is_dir() == bool(extra)
            assert not (into / ".git/hooks/post-checkout").exists()
            assert "[core]" not in (into / ".git/config").read_text() or bool(extra)
    check(cli("-C", str(project), "edit", "0001"), (OK, USAGE))
    check(cli("-C", str(project), "refresh"), (OK, USAGE))
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path / "p/escape.txt").exists()
    assert not Path("/tmp/patchctl-absolute-escape").exists()
    assert not (outside / "HOOK-RAN").exists()
    assert same()


def test_case_folding_collision(cli, tmp_path: Path, upstream: Upstream, outside: Path) -> None:
    text = ("From: A <a@b.invalid>\nSubject: [PATCH] x\n\nwhy\n\nConcern: x\n"
            "Upstream-Status: Pending\nScope: **\n---\n"
            "diff --git a/readme.MD b/readme.MD\nnew file mode 100644\n--- /dev/null\n"
            "+++ b/readme.MD\n@@ -0,0 +1 @@\n+other\n")
    project = make_project(tmp_path / "p", upstream, [("0001-x.patch", text)])
    check(cli("-C", str(project), "verify"), OK)
    into = tmp_path / "t"
    check(cli("-C", str(project), "apply", "--into", str(into)), OK)
    assert (into / "README.md").read_text().startswith("# tiny")
    assert (into / "readme.MD").read_text() == "other\n"


def test_brief_directory_with_planted_symlinks(cli, project: Path, outside: Path,
                                               tmp_path: Path, upstream: Upstream) -> None:
    """A brief file in --out replaced by a symlink out: rewriting the briefs replaces the
    link, never the file it points to."""
    out = tmp_path / "briefs"
    check(cli("-C", str(project), "draft-outreach", "--series", "--out", str(out)), OK)
    brief = next(out.glob("0001-*.md"))
    brief.unlink()
    brief.symlink_to(outside / "canary.md")
    (out / "MANIFEST.json").unlink()
    (out / "MANIFEST.json").symlink_to(outside / "canary.md")
    check(cli("-C", str(project), "draft-outreach", "--series", "--out", str(out)), (OK, USAGE))


def test_outreach_concern_naming_a_file_outside(cli, tmp_path: Path, upstream: Upstream,
                                                patches, outside: Path) -> None:
    """Bug: `Concern: ../../outside/secret` made draft-outreach read outside/secret.toml as
    the patch's outreach data (and quote it in the brief)."""
    name, text = patches[0]
    rel = os.path.relpath(outside / "secret", tmp_path / "p/stack/outreach")
    project = make_project(tmp_path / "p", upstream,
                           [(name, text.replace("Concern: square", f"Concern: {rel}"))])
    (project / "stack/outreach").mkdir()  # as in the real stack
    assert (project / "stack/outreach" / f"{rel}.toml").resolve() == outside / "secret.toml"
    out = tmp_path / "briefs"
    r = cli("-C", str(project), "draft-outreach", "--series", "--out", str(out))
    check(r, (OK, FINDINGS, USAGE))
    briefs = "".join(p.read_text() for p in out.glob("*")) if out.exists() else ""
    assert "SECRET OUTSIDE" not in r.out + r.err + briefs


def test_stack_files_symlinked_outside(cli, project: Path, patches, tmp_path: Path) -> None:
    """Stack files that are symlinks out: writers refuse or replace the link, never write
    through it."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    patch = project / "stack/patches" / patches[0][0]
    target = elsewhere / "linked.patch"
    target.write_text(patch.read_text())
    before = tree_digest(elsewhere)
    patch.unlink()
    patch.symlink_to(target)
    check(cli("-C", str(project), "edit", "0001"), (OK, USAGE))
    replace_in(project / ".patchctl/edit/work/src/util.c", "v * v", "v * v * 1")
    check(cli("-C", str(project), "refresh"), (OK, USAGE))
    check(cli("-C", str(project), "lock"), (OK, USAGE))
    assert tree_digest(elsewhere) == before


def test_quilt_series_naming_files_outside(cli, tmp_path: Path, upstream: Upstream,
                                           outside: Path) -> None:
    project = make_project(tmp_path / "p", upstream, [])
    quilt = tmp_path / "quilt"
    quilt.mkdir()
    rel = os.path.relpath(outside / "canary.patch", quilt)
    (quilt / "series").write_text(f"{rel}\n")
    before = tree_digest(project / "stack")
    check(cli("-C", str(project), "import", str(quilt)), USAGE)
    assert tree_digest(project / "stack") == before


def test_export_into_a_directory_with_symlinks(cli, project: Path, outside: Path,
                                               tmp_path: Path) -> None:
    out = tmp_path / "exp"
    check(cli("-C", str(project), "export", "--format", "quilt", str(out)), OK)
    (out / "series").unlink()
    (out / "series").symlink_to(outside / "canary.patch")
    (out / "inner").symlink_to(outside)
    check(cli("-C", str(project), "export", "--format", "quilt", str(out), "--force"), OK)
    assert not (out / "series").is_symlink() and not (out / "inner").exists()
