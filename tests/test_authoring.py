"""Stack authoring: import, new, edit, refresh and export, against real git repos."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from patchctl.model import stackwrite
from tests.builders import (
    Upstream,
    default_trailers,
    drop_blob,
    format_patch,
    git,
    make_project,
    make_upstream,
    many_patches,
    replace_in,
)
from tests.system_packages import needs

CUBE = "\nint tiny_cube(int v)\n{\n    return v * v * v;\n}\n"


def snap(project: Path) -> dict[str, str]:
    return stackwrite.snapshot(project / "stack")


@pytest.fixture
def empty(cli, tmp_path: Path, upstream: Upstream) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    r = cli("-C", str(project), "init", "--upstream", str(upstream.path), "--pin",
            upstream.commits["base"])
    assert r.code == 0, r.err
    return project


@pytest.fixture
def sources(tmp_path: Path, patches) -> Path:
    """The three standard patches as format-patch files."""
    out = tmp_path / "sources"
    out.mkdir()
    for name, text in patches:
        (out / name).write_text(text)
    return out


def imported(cli, project: Path, *args: str) -> dict:
    r = cli("-C", str(project), "import", "--json", *args)
    assert r.code == 0, r.err
    return json.loads(r.out)


# -- import ---------------------------------------------------------------------------------


def test_import_format_patch_files(cli, empty: Path, sources: Path) -> None:
    files = sorted(str(p) for p in sources.iterdir())
    data = imported(cli, empty, *files)
    assert [p["file"] for p in data["patches"]] == [
        "0001-util-add-tiny_square.patch", "0002-tiny-bump-op-02.patch",
        "0003-tiny-declare-tiny_square.patch"]
    assert all(p["added"] == [] for p in data["patches"])  # trailers were all there
    series = (empty / "stack/series").read_text()
    assert series.splitlines()[-3:] == [p["file"] for p in data["patches"]]
    text = (empty / "stack/patches/0001-util-add-tiny_square.patch").read_text()
    assert text.startswith("From 0000000000000000000000000000000000000000 Mon Sep 17")
    assert "Reproducer: reproducers/square" in text and "\n-- \n" not in text
    v = cli("-C", str(empty), "verify", "--json")
    assert v.code == 0, v.out
    assert json.loads(v.out)["lock"] == "current"


def test_import_fills_missing_trailers_and_reports_them(cli, empty: Path, tmp_path: Path,
                                                       upstream: Upstream) -> None:
    def add_cube(work: Path) -> None:
        (work / "src/util.c").write_text((work / "src/util.c").read_text() + CUBE)

    bare = format_patch(upstream, upstream.commits["base"], add_cube, subject="util : add cube",
                        trailers={"Signed-off-by": "Dev <dev@example.invalid>"},
                        scratch=tmp_path / "scratch")
    (tmp_path / "cube.patch").write_text(bare)
    data = imported(cli, empty, str(tmp_path / "cube.patch"), "--concern", "cube")
    assert data["patches"][0]["added"] == ["Concern: cube", "Upstream-Status: Pending",
                                           "Scope: src/util.c"]
    text = (empty / "stack/patches" / data["patches"][0]["file"]).read_text()
    assert ("Signed-off-by: Dev <dev@example.invalid>\nConcern: cube\n"
            "Upstream-Status: Pending\nScope: src/util.c\n---\n") in text
    r = cli("-C", str(empty), "import", str(tmp_path / "cube.patch"))
    assert r.code == 2 and "changes nothing on top of the stack" in r.err


def test_import_an_mbox(cli, empty: Path, sources: Path, tmp_path: Path) -> None:
    mbox = tmp_path / "series.mbox"
    mbox.write_text("".join(p.read_text() for p in sorted(sources.iterdir())))
    data = imported(cli, empty, str(mbox))
    assert [p["source"] for p in data["patches"]] == [f"{mbox}#{i}" for i in (1, 2, 3)]
    assert [p["file"] for p in data["patches"]][2] == "0003-tiny-declare-tiny_square.patch"


def test_import_a_debian_quilt_series(cli, empty: Path, tmp_path: Path, patches) -> None:
    """DEP-3 headers become trailers; a -p0 entry is rewritten as -p1."""
    pkg = tmp_path / "pkg"
    quilt = pkg / "debian/patches"
    quilt.mkdir(parents=True)
    diff = patches[0][1][patches[0][1].index("diff --git"):]
    (quilt / "square.patch").write_text(
        "Description: add tiny_square\n Long text.\nAuthor: Deb Dev <deb@example.invalid>\n"
        "Forwarded: https://example.invalid/pr/7\nOrigin: vendor\nLast-Update: 2025-03-04\n"
        "---\n" + diff)
    bump = patches[1][1][patches[1][1].index("diff --git"):]
    p0 = bump.replace("a/src/tiny.c", "src/tiny.c").replace("b/src/tiny.c", "src/tiny.c")
    (quilt / "bump.diff").write_text(p0)
    (quilt / "series").write_text("# comment\nsquare.patch\nbump.diff -p0\n")
    data = imported(cli, empty, str(pkg), "--concern", "deb")
    square, bumped = data["patches"]
    assert square["added"] == ["Concern: deb", "Upstream-Status: Submitted "
                               "[https://example.invalid/pr/7]", "Scope: src/util.c"]
    text = (empty / "stack/patches" / square["file"]).read_text()
    assert "From: Deb Dev <deb@example.invalid>" in text and "Origin: vendor" in text
    assert "Date: Tue, 04 Mar 2025 00:00:00 +0000" in text
    assert bumped["file"] == "0002-bump.patch"
    assert (empty / "stack/series").read_text().splitlines()[-1] == "0002-bump.patch"
    assert "+++ b/src/tiny.c" in (empty / "stack/patches/0002-bump.patch").read_text()
    assert cli("-C", str(empty), "verify").code == 0


@pytest.mark.parametrize("name", ["series", "order.txt"])
def test_import_a_quilt_series_file(cli, empty: Path, tmp_path: Path, patches,
                                    name: str) -> None:
    """Regression: `patchctl import path/to/series` (the series FILE, as quilt and
    `stg import --series` users pass it) failed with "not a diff"."""
    quilt = tmp_path / "q"
    quilt.mkdir()
    for patch_name, text in patches[:2]:
        (quilt / patch_name).write_text(text)
    (quilt / name).write_text("# two of them\n" + "".join(n + "\n" for n, _ in patches[:2]))
    data = imported(cli, empty, str(quilt / name))
    assert [p["file"] for p in data["patches"]] == [n for n, _ in patches[:2]]
    missing = tmp_path / "m"
    missing.mkdir()
    (missing / "series").write_text("gone.patch\n")
    r = cli("-C", str(empty), "import", str(missing / "series"))
    assert r.code == 2 and "gone.patch does not exist" in r.err, r.err


def test_import_commits_from_a_repository(cli, empty: Path, tmp_path: Path,
                                          upstream: Upstream) -> None:
    fork = tmp_path / "fork"
    git(tmp_path, "clone", "-q", str(upstream.path), str(fork))
    git(fork, "checkout", "-q", "-b", "feature", upstream.commits["base"])
    (fork / "src/util.c").write_text((fork / "src/util.c").read_text() + CUBE)
    git(fork, "commit", "-q", "-am", "util : add cube\n\nBody.\n\nConcern: cube")
    replace_in(fork / "README.md", "A small C library.", "A small C library (forked).")
    git(fork, "commit", "-q", "-am", "docs : say forked")
    r = cli("-C", str(empty), "import", "--from-repo", str(fork),
            f"{upstream.commits['base']}..feature", "--json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert [p["subject"] for p in data["patches"]] == ["util : add cube", "docs : say forked"]
    assert data["patches"][0]["added"] == ["Upstream-Status: Pending", "Scope: src/util.c"]
    assert data["patches"][1]["added"][0] == "Concern: docs-say-forked"
    text = (empty / "stack/patches" / data["patches"][0]["file"]).read_text()
    assert "From: Upstream Dev <dev@upstream.invalid>" in text and "\nBody.\n" in text


def test_import_is_all_or_nothing(cli, empty: Path, sources: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.patch"
    broken.write_text((sources / "0002-tiny-bump-op-02.patch").read_text()
                      .replace(" int tiny_op_02(int x)", " int tiny_op_02(long x)"))
    before = snap(empty)
    r = cli("-C", str(empty), "import", str(sources / "0001-util-add-tiny_square.patch"),
            str(broken))
    assert r.code == 2 and "does not apply on top of the stack" in r.err
    assert len(r.err.strip().splitlines()) == 1
    assert snap(empty) == before
    missing = cli("-C", str(empty), "import", str(tmp_path / "nope.patch"))
    assert missing.code == 2 and "no such file" in missing.err


def test_import_is_deterministic(cli, tmp_path: Path, upstream: Upstream, sources: Path) -> None:
    results = []
    for name in ("a", "b"):
        project = tmp_path / name
        project.mkdir()
        cli("-C", str(project), "init", "--upstream", str(upstream.path), "--pin",
            upstream.commits["base"])
        imported(cli, project, *sorted(str(p) for p in sources.iterdir()))
        results.append(snap(project))
    assert results[0] == results[1]


# -- edit and refresh -------------------------------------------------------------------------


@pytest.fixture
def canonical(cli, empty: Path, sources: Path) -> Path:
    imported(cli, empty, *sorted(str(p) for p in sources.iterdir()))
    return empty


def test_refresh_without_change_is_byte_identical(cli, canonical: Path) -> None:
    before = snap(canonical)
    for name in ("0001-util-add-tiny_square.patch", "2", "tiny-declare-tiny_square"):
        r = cli("-C", str(canonical), "edit", name)
        assert r.code == 0, r.err
        work = canonical / ".patchctl/edit/work"
        assert work.is_dir()
        done = cli("-C", str(canonical), "refresh")
        assert done.code == 0 and ": unchanged;" in done.out, done.out + done.err
    assert snap(canonical) == before
    assert (canonical / ".patchctl/.gitignore").read_text().splitlines()[-1] == "*"


def test_edit_then_refresh_rewrites_patch_and_lock(cli, canonical: Path) -> None:
    r = cli("-C", str(canonical), "edit", "0002", "--json")
    data = json.loads(r.out)
    assert data["applied"] == ["0001-util-add-tiny_square.patch", "0002-tiny-bump-op-02.patch"]
    work = Path(data["work"])
    assert git(work, "log", "--format=%s", "-2").splitlines() == [
        "tiny : bump op 02", "util : add tiny_square"]
    replace_in(work / "src/tiny.c", "x * 4 + 1; /* patched */", "x * 4 + 2; /* patched */")
    old_lock = (canonical / "stack/stack.lock").read_text()
    done = cli("-C", str(canonical), "refresh", "0002-tiny-bump-op-02", "--json")
    assert done.code == 0, done.err
    result = json.loads(done.out)
    assert result["change"] == "content-changed"
    assert "+    int y = x * 4 + 2; /* patched */" in result["interdiff"]
    text = (canonical / "stack/patches/0002-tiny-bump-op-02.patch").read_text()
    assert "x * 4 + 2;" in text and "Concern: bump" in text
    assert (canonical / "stack/stack.lock").read_text() != old_lock
    assert cli("-C", str(canonical), "verify").code == 0
    again = cli("-C", str(canonical), "refresh")
    assert again.code == 0 and ": unchanged;" in again.out


def test_refresh_warns_about_later_patches(cli, canonical: Path) -> None:
    r = cli("-C", str(canonical), "edit", "0002", "--json")
    work = Path(json.loads(r.out)["work"])
    replace_in(work / "include/tiny.h", "int tiny_version(void);\n",
               "int tiny_version(void); /* v */\n")
    done = cli("-C", str(canonical), "refresh")
    assert done.code == 1
    assert "0003-tiny-declare-tiny_square.patch no longer applies" in done.err
    assert "include/tiny.h is outside the patch's Scope" in done.err


def test_new_patch_is_appended_on_refresh(cli, canonical: Path) -> None:
    r = cli("-C", str(canonical), "new", "add-cube", "--concern", "cube", "--scope",
            "src/util.c", "--json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert data["target"] == "0004-add-cube.patch" and len(data["applied"]) == 3
    before = snap(canonical)
    empty_refresh = cli("-C", str(canonical), "refresh")
    assert empty_refresh.code == 2 and "holds no change" in empty_refresh.err
    assert snap(canonical) == before
    work = Path(data["work"])
    (work / "src/util.c").write_text((work / "src/util.c").read_text() + CUBE)
    done = cli("-C", str(canonical), "refresh", "--json")
    assert done.code == 0 and json.loads(done.out)["change"] == "new"
    assert (canonical / "stack/series").read_text().splitlines()[-1] == "0004-add-cube.patch"
    text = (canonical / "stack/patches/0004-add-cube.patch").read_text()
    assert "Subject: [PATCH] add-cube\n\nConcern: cube\nUpstream-Status: Pending\n" \
           "Scope: src/util.c\n---\n" in text
    assert cli("-C", str(canonical), "verify").code == 0
    dup = cli("-C", str(canonical), "new", "add-cube", "--concern", "c", "--scope", "x")
    assert dup.code == 0  # a second 'add-cube' gets the next number, not a clash
    assert "0005-add-cube.patch" in dup.out


def test_unrefreshed_edit_is_not_discarded(cli, canonical: Path) -> None:
    r = cli("-C", str(canonical), "edit", "1", "--json")
    work = Path(json.loads(r.out)["work"])
    (work / "src/util.c").write_text((work / "src/util.c").read_text() + "/* wip */\n")
    other = cli("-C", str(canonical), "edit", "2")
    assert other.code == 2 and "not yet refreshed" in other.err
    assert "/* wip */" in (work / "src/util.c").read_text()
    assert cli("-C", str(canonical), "edit", "2", "--reset").code == 0


def test_refresh_and_edit_bad_input(cli, canonical: Path) -> None:
    before = snap(canonical)
    r = cli("-C", str(canonical), "refresh")
    assert r.code == 2 and "no edit in progress" in r.err
    r = cli("-C", str(canonical), "edit", "no-such-patch")
    assert r.code == 2 and "no patch named 'no-such-patch'" in r.err
    assert cli("-C", str(canonical), "edit", "1").code == 0
    r = cli("-C", str(canonical), "refresh", "2")
    assert r.code == 2 and "the open edit is of 0001" in r.err
    assert snap(canonical) == before


# -- export -----------------------------------------------------------------------------------


def _tree_after_apply(cli, project: Path, tmp_path: Path) -> str:
    r = cli("-C", str(project), "apply", "--into", str(tmp_path / "applied"), "--json")
    assert r.code == 0, r.err
    return json.loads(r.out)["stamp"]["tree"]


def _am(upstream: Upstream, tmp_path: Path, name: str, *files: Path) -> str:
    work = tmp_path / name
    git(tmp_path, "clone", "-q", str(upstream.path), str(work))
    git(work, "checkout", "-q", upstream.commits["base"])
    git(work, "am", "-q", *map(str, files))
    return git(work, "rev-parse", "HEAD^{tree}").strip()


@pytest.mark.parametrize("fmt", ["mbox", "format-patch"])
def test_git_am_accepts_the_export(cli, project: Path, upstream: Upstream, tmp_path: Path,
                                   fmt: str) -> None:
    out = tmp_path / "out"
    r = cli("-C", str(project), "export", "--format", fmt, str(out), "--json")
    assert r.code == 0, r.err
    files = [out / f for f in json.loads(r.out)["files"]]
    assert _am(upstream, tmp_path, "am", *files) == _tree_after_apply(cli, project, tmp_path)
    again = cli("-C", str(project), "export", "--format", fmt, str(out))
    assert again.code == 2 and "not empty" in again.err
    assert cli("-C", str(project), "export", "--format", fmt, str(out), "--force").code == 0


@needs("quilt")
def test_quilt_push_accepts_the_export(cli, project: Path, upstream: Upstream,
                                       tmp_path: Path) -> None:
    out = tmp_path / "quilt-patches"
    assert cli("-C", str(project), "export", "--format", "quilt", str(out)).code == 0
    assert (out / "series").read_text().splitlines() == [
        n for n in (project / "stack/series").read_text().splitlines() if not n.startswith("#")]
    tree = tmp_path / "src"
    git(tmp_path, "clone", "-q", str(upstream.path), str(tree))
    git(tree, "checkout", "-q", upstream.commits["base"])
    env = {**os.environ, "QUILT_PATCHES": str(out), "QUILT_PC": str(tmp_path / "pc"),
           "HOME": str(tmp_path)}
    proc = subprocess.run(["quilt", "push", "-a", "-q", "--fuzz=0"], cwd=tree, env=env,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    git(tree, "add", "-A", ".")
    assert git(tree, "write-tree").strip() == _tree_after_apply(cli, project, tmp_path)


def test_export_refuses_strip_levels_git_am_cannot_take(cli, tmp_path: Path, upstream: Upstream,
                                                        patches) -> None:
    p0 = patches[0][1].replace("a/src/util.c", "src/util.c").replace("b/src/util.c",
                                                                     "src/util.c")
    project = make_project(tmp_path / "p", upstream, [(patches[0][0], p0)],
                           series_extra={patches[0][0]: "-p0"})
    r = cli("-C", str(project), "export", "--format", "mbox", str(tmp_path / "out"))
    assert r.code == 2 and "is -p0 in the series" in r.err
    assert not (tmp_path / "out").exists()
    assert cli("-C", str(project), "export", "--format", "quilt", str(tmp_path / "q")).code == 0
    assert (tmp_path / "q/series").read_text() == f"{patches[0][0]} -p0\n"


def _apply_in_order(upstream: Upstream, index: Path, files: list[Path]) -> str:
    """Each file through real `git apply --check --cached`, then applied, in order, on a
    temporary index holding the pin; the tree that results."""
    env = {"GIT_INDEX_FILE": str(index)}
    git(upstream.path, "read-tree", upstream.commits["base"], env=env)
    for f in files:
        git(upstream.path, "apply", "--check", "--cached", str(f), env=env)
        git(upstream.path, "apply", "--cached", str(f), env=env)
    return git(upstream.path, "write-tree", env=env).strip()


def test_upstream_export_is_the_plain_diffs_without_the_stacks_text(
        cli, project: Path, upstream: Upstream, tmp_path: Path) -> None:
    """Every export form carried the stack's machine-written commit message,
    its trailers (Concern:, Scope:, ...) and a placeholder author, and `git am` + push sends
    them upstream as they are. --format upstream writes the diff alone, per patch, that
    `git apply` takes in order at the pin, and a README.txt of facts."""
    out = tmp_path / "out"
    r = cli("-C", str(project), "export", "--format", "upstream", str(out), "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    names = ["0001-util-add-tiny_square.diff", "0002-tiny-bump-op-02.diff",
             "0003-tiny-declare-square.diff"]
    assert doc["format"] == "upstream" and doc["files"] == ["README.txt", *names]
    assert sorted(p.name for p in out.iterdir()) == sorted(doc["files"])
    stack_texts = [(project / "stack/patches" / n.replace(".diff", ".patch")).read_text()
                   for n in names]
    for name, original in zip(names, stack_texts, strict=True):
        text = (out / name).read_text()
        assert text.startswith("diff --git a/")
        assert text == original[original.index("diff --git "):]  # the diff, verbatim
        for leftover in ("Subject:", "From:", "Date:", "Concern:", "Scope:", "Upstream-Status:",
                         "Reproducer:", "Why this change is needed", "file changed",
                         "upstream.invalid", "\n-- \n"):
            assert leftover not in text, (name, leftover)
    applied = _apply_in_order(upstream, tmp_path / "index", [out / n for n in names])
    assert applied == _tree_after_apply(cli, project, tmp_path)
    readme = (out / "README.txt").read_text()
    assert upstream.commits["base"] in readme and all(f"  {n}\n" in readme for n in names)
    assert "no commit message, no trailers and no author" in readme
    again = cli("-C", str(project), "export", "--format", "upstream", str(out))
    assert again.code == 2 and "not empty" in again.err
    assert cli("-C", str(project), "export", "--format", "upstream", str(out),
               "--force").code == 0


def test_upstream_export_applies_cumulatively(cli, tmp_path: Path, docs_upstream: Upstream
                                              ) -> None:
    """The third diff edits the line the first one changed, so it applies only
    on top of it (each file is one step of the series, not a diff against the pin); the
    synthetic patches' diffstat and body are left out."""
    up = Upstream(tmp_path / "up", dict(docs_upstream.commits))
    shutil.copytree(docs_upstream.path, up.path)
    patches = many_patches(3)
    project = make_project(tmp_path / "p", up, patches)
    out = tmp_path / "out"
    assert cli("-C", str(project), "export", "--format", "upstream", str(out)).code == 0
    names = ["0001-docs-page-0000.diff", "0002-docs-page-0001.diff",
             "0003-docs-page-0000-again.diff"]
    assert all("Patch " not in (out / n).read_text() for n in names)
    _apply_in_order(up, tmp_path / "index", [out / n for n in names])
    env = {"GIT_INDEX_FILE": str(tmp_path / "index2")}
    git(up.path, "read-tree", up.commits["base"], env=env)
    with pytest.raises(AssertionError):  # not at the pin on its own
        git(up.path, "apply", "--check", "--cached", str(out / names[2]), env=env)


def test_export_kill_at_every_step_leaves_old_or_new(cli, project: Path, tmp_path: Path,
                                                     upstream: Upstream, patches) -> None:
    """SIGKILL before each rename/rmtree/exchange of `export --force`: DIR is whole.

    Regression: export had no recovery and, without the atomic exchange, deleted the
    old export before renaming the new one in: a kill between left no DIR at all.
    """
    import signal
    import sys

    killer = Path(__file__).with_name("killer.py")
    small = make_project(tmp_path / "small", upstream, patches[:1])
    out = tmp_path / "out"
    listing = {}
    for proj in (small, project):
        assert cli("-C", str(proj), "export", "--format", "quilt", str(out), "--force").code == 0
        listing[proj] = sorted(p.name for p in out.iterdir())
    source, other = small, project
    killed = 0
    for n in range(1, 30):
        before = sorted(p.name for p in out.iterdir())
        run = subprocess.run([sys.executable, str(killer), str(n), "-C", str(source), "export",
                              "--format", "quilt", str(out), "--force"], capture_output=True,
                             text=True, check=False)
        if run.returncode == 0:
            break  # past the last mutation: every point was tried
        assert run.returncode == -signal.SIGKILL, (n, run.stderr)
        killed += 1
        assert out.is_dir(), n
        assert sorted(p.name for p in out.iterdir()) in (before, listing[source]), n
        assert cli("-C", str(source), "export", "--format", "quilt", str(out),
                   "--force").code == 0  # recovers what the kill left
        assert sorted(p.name for p in out.iterdir()) == listing[source]
        source, other = other, source
    assert killed >= 2
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")] == []


def test_import_never_overwrites_an_unlisted_patch_file(cli, empty: Path, sources: Path) -> None:
    """Regression: `import` silently overwrote a file in stack/patches/ that the series does
    not list (a patch being written by hand); `new` refused the same. Now refused, naming
    the file, unless --force."""
    first = sorted(sources.iterdir())[0]
    mine = empty / "stack/patches/0001-util-add-tiny_square.patch"
    mine.write_text("my own work in progress\n")
    before = snap(empty)
    r = cli("-C", str(empty), "import", str(first))
    assert r.code == 2, r.err
    assert f"{mine} exists but the series does not list it" in r.err
    assert len(r.err.strip().splitlines()) == 1
    assert snap(empty) == before and mine.read_text() == "my own work in progress\n"
    forced = cli("-C", str(empty), "import", "--force", str(first))
    assert forced.code == 0, forced.err
    assert "tiny_square" in mine.read_text()


@pytest.mark.parametrize("name", ["0009-../../escape.patch", "../escape", "a/b", ".hidden",
                                  "0009-a/../../b.patch", "x\\y"])
def test_new_refuses_names_that_leave_patches(cli, canonical: Path, name: str) -> None:
    """Regression: `new 0001-../../x.patch` was accepted; `refresh` then wrote the patch
    outside stack/ and a series entry every later command rejected."""
    before = snap(canonical)
    r = cli("-C", str(canonical), "new", name, "--concern", "c", "--scope", "src/util.c")
    assert r.code == 2, r.out + r.err
    assert "patch name" in r.err and len(r.err.strip().splitlines()) == 1
    assert snap(canonical) == before
    assert not (canonical / ".patchctl/edit/state.json").exists()


def _many(upstream: Upstream, scratch: Path, out: Path) -> list[str]:
    """A quilt dir: ten format-patch files (each bumps one op of tiny.c; one moved by an
    offset), a plain DEP-3 diff and a -p0 one; returns the series lines."""
    base = upstream.commits["base"]
    out.mkdir()
    lines = []
    for i in range(3, 13):
        def bump(work: Path, i: int = i) -> None:
            replace_in(work / "src/tiny.c", f"    int y = x * {i + 2};\n",
                       f"    int y = x * {i + 2} + 1;\n")
        text = format_patch(upstream, base, bump, subject=f"tiny : bump op {i:02d}",
                            trailers=default_trailers(f"op{i}", "src/tiny.c"), scratch=scratch)
        if i == 7:  # the hunk header says two lines further down: applies with an offset
            head, _, rest = text.partition("\n@@ -")
            old, _, tail = rest.partition(" @@")
            a, b = (old.split(" +")[0], old.split(" +")[1])
            shift = lambda r: ",".join([str(int(r.split(",")[0]) + 2), *r.split(",")[1:]])  # noqa: E731
            text = f"{head}\n@@ -{shift(a)} +{shift(b)} @@{tail}"
        (out / f"op{i}.patch").write_text(text)
        lines.append(f"op{i}.patch")
    diff = format_patch(upstream, base, lambda w: replace_in(
        w / "src/util.c", "int tiny_abs(int v)", "int tiny_abs(int v) /* abs */"),
        subject="x", scratch=scratch)
    diff = diff[diff.index("diff --git"):]
    (out / "dep3.diff").write_text("Description: mark tiny_abs\nAuthor: Deb <d@e.invalid>\n"
                                   "Last-Update: 2025-01-02\n---\n" + diff)
    p0 = format_patch(upstream, base, lambda w: replace_in(
        w / "README.md", "A small C library.", "A small C library (patched)."),
        subject="docs : patched", scratch=scratch)
    (out / "p0.patch").write_text(p0.replace("a/README.md", "README.md").replace(
        "b/README.md", "README.md"))
    lines += ["dep3.diff", "p0.patch -p0"]
    (out / "series").write_text("".join(f"{ln}\n" for ln in lines))
    return lines


def test_batched_import_equals_one_by_one(cli, tmp_path: Path, upstream: Upstream, patches,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Importing many patches takes the batched path (one `git apply` per strip level,
    one `git am`, one `git diff-tree --stdin`); it must write byte for byte what
    applying them one by one writes, with the same grades (an offset included)."""
    from patchctl.authoring import init_import as authoring

    quilt = tmp_path / "quilt"
    _many(upstream, tmp_path / "scratch", quilt)
    batched_runs = []
    real = authoring._apply_batched

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        batched_runs.append(out is not None)
        return out

    monkeypatch.setattr(authoring, "_apply_batched", spy)
    results = {}
    for batch in (authoring._BATCH, 10**6):
        monkeypatch.setattr(authoring, "_BATCH", batch)
        project = tmp_path / f"p{batch}"
        project.mkdir()
        assert cli("-C", str(project), "init", "--upstream", str(upstream.path), "--pin",
                   upstream.commits["base"]).code == 0
        first = tmp_path / f"first{batch}.patch"  # the stack is not empty: op 02 bumped
        first.write_text(patches[1][1])
        imported(cli, project, str(first))
        results[batch] = (imported(cli, project, str(quilt / "series")), snap(project))
        assert cli("-C", str(project), "verify").code == 0
    assert batched_runs == [True]  # the first import was batched, the second was not
    (batched, stack_b), (single, stack_s) = results.values()
    assert stack_b == stack_s
    assert {**batched, "stack": ""} == {**single, "stack": ""}
    grades = [p["grade"] for p in batched["patches"]]
    assert grades == ["exact"] * 4 + ["offset"] + ["exact"] * 7


def test_batched_import_falls_back_to_name_the_patch_that_fails(cli, empty: Path,
                                                                  tmp_path: Path,
                                                                  upstream: Upstream) -> None:
    quilt = tmp_path / "quilt"
    _many(upstream, tmp_path / "scratch", quilt)
    bad = quilt / "op9.patch"
    bad.write_text(bad.read_text().replace("int tiny_op_09(int x)", "int tiny_op_99(int x)"))
    before = snap(empty)
    r = cli("-C", str(empty), "import", str(quilt))
    assert r.code == 2, r.err
    assert f"{bad}: does not apply on top of the stack" in r.err
    assert snap(empty) == before


# -- refs and ranges from the command line ---------------------------------------------


def test_import_range_is_never_an_option_to_git(cli, empty: Path, upstream: Upstream) -> None:
    """Bug: an --from-repo RANGE reached `git rev-list` as an option:
    `--output=stack/series` truncated the series to 0 bytes."""
    before = snap(empty)
    series = empty / "stack/series"
    r = cli("-C", str(empty), "import", "--from-repo", str(upstream.path), "--",
            f"--output={series}")
    assert r.code == 2 and "starts with '-'" in r.err, r.err
    assert len(r.err.strip().splitlines()) == 1
    assert snap(empty) == before and series.stat().st_size > 0


def test_init_records_a_tag_or_branch_but_never_a_short_id(cli, tmp_path: Path,
                                                          upstream: Upstream) -> None:
    """Bug: a short sha given to `init --pin` was recorded as `tag`."""
    base = upstream.commits["base"]
    git(upstream.path, "tag", "v-test", base)
    for pin, tag in ((base[:10], None), ("v-test", "v-test"), (base, None)):
        project = tmp_path / f"p-{pin}"
        project.mkdir()
        r = cli("-C", str(project), "init", "--upstream", str(upstream.path), "--pin", pin)
        assert r.code == 0, r.err
        text = (project / "stack/upstream.toml").read_text()
        assert f'commit = "{base}"' in text
        assert ('tag = ' in text) == (tag is not None), (pin, text)


def test_init_refuses_an_ambiguous_ref(cli, tmp_path: Path, upstream: Upstream) -> None:
    """Bug: a name that is both a tag and a branch was resolved silently."""
    commits = list(upstream.commits.values())
    git(upstream.path, "tag", "twin", commits[0])
    git(upstream.path, "branch", "twin", commits[-1])
    assert commits[0] != commits[-1]
    r = cli("-C", str(tmp_path), "init", "--upstream", str(upstream.path), "--pin", "twin")
    assert r.code == 2 and "ambiguous" in r.err, r.err
    assert "refs/tags/twin" in r.err and "refs/heads/twin" in r.err
    assert not (tmp_path / "stack").exists()


def test_init_from_a_bundle(cli, tmp_path: Path, upstream: Upstream) -> None:
    """Bug: `init --upstream BUNDLE` said "not a git repository" although
    verify accepts the same bundle."""
    bundle = tmp_path / "up.bundle"
    git(upstream.path, "bundle", "create", str(bundle), "--all")
    project = tmp_path / "p"
    project.mkdir()
    r = cli("-C", str(project), "init", "--upstream", str(bundle), "--pin", "master")
    assert r.code == 0, r.err
    assert "warning" not in r.err
    text = (project / "stack/upstream.toml").read_text()
    assert f'commit = "{git(upstream.path, "rev-parse", "master").strip()}"' in text
    assert 'tag = "master"' in text and str(bundle) in text
    assert cli("-C", str(project), "verify").code == 0


def test_new_records_machine_assistance_as_assisted_by(cli, canonical: Path) -> None:
    """`new --assisted-by` writes an Assisted-by trailer (never Co-authored-by), which
    refresh keeps and draft-outreach reads for the disclosure facts."""
    r = cli("-C", str(canonical), "new", "add-cube", "--concern", "cube", "--scope",
            "src/util.c", "--assisted-by", "ExampleTool [src/*]", "--json")
    assert r.code == 0, r.err
    work = Path(json.loads(r.out)["work"])
    (work / "src/util.c").write_text((work / "src/util.c").read_text() + CUBE)
    assert cli("-C", str(canonical), "refresh").code == 0
    text = (canonical / "stack/patches/0004-add-cube.patch").read_text()
    assert "Scope: src/util.c\nAssisted-by: ExampleTool [src/*]\n---\n" in text
    assert "Co-authored-by" not in text
    brief = cli("-C", str(canonical), "draft-outreach", "--json", "0004")
    assert json.loads(brief.out)["patches"][0]["assistance"] == [
        {"tool": "ExampleTool", "files": ["src/util.c"],
         "trailer": "Assisted-by: ExampleTool [src/*]"}]


def test_refresh_keeps_files_outside_the_sparse_edit_work_tree(cli, canonical: Path) -> None:
    """Bug: in a sparse edit work tree, refresh silently dropped a file the user created
    or changed outside the sparse paths."""
    r = cli("-C", str(canonical), "edit", "1", "--json")
    assert r.code == 0, r.err
    work = Path(json.loads(r.out)["work"])
    git(work, "sparse-checkout", "set", "--no-cone", "/src/util.c")
    assert not (work / "README.md").exists() and not (work / "CMakeLists.txt").exists()
    (work / "docs").mkdir()
    (work / "docs/notes.md").write_text("notes\n")
    (work / "CMakeLists.txt").write_text("# replaced\n")
    done = cli("-C", str(canonical), "refresh")
    assert done.code == 0, done.err
    text = (canonical / "stack/patches/0001-util-add-tiny_square.patch").read_text()
    assert "+++ b/docs/notes.md" in text and "+# replaced" in text
    assert "README.md" not in text  # left out by design, not deleted


def test_new_accepts_a_name_with_the_next_number(cli, canonical: Path) -> None:
    """Bug: `new 0004-foo` made 0004-0004-foo.patch; a wrong number is refused."""
    wrong = cli("-C", str(canonical), "new", "0007-foo", "--concern", "c", "--scope", "x")
    assert wrong.code == 2 and "the next patch is 0004" in wrong.err
    r = cli("-C", str(canonical), "new", "0004-foo", "--concern", "c", "--scope", "x",
            "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["target"] == "0004-foo.patch"


def test_new_sets_body_and_trailers(cli, canonical: Path) -> None:
    """Bug: `new` could not set the body or trailers (Reproducer, Upstream-Status)."""
    bad = cli("-C", str(canonical), "new", "cube", "--concern", "c", "--scope", "x",
              "--trailer", "Upstream-Status=Maybe")
    assert bad.code == 2 and "Upstream-Status" in bad.err
    bad = cli("-C", str(canonical), "new", "cube", "--concern", "c", "--scope", "x",
              "--trailer", "Reproducer=elsewhere/x")
    assert bad.code == 2 and "under reproducers/" in bad.err
    r = cli("-C", str(canonical), "new", "add-cube", "--concern", "cube", "--scope",
            "src/util.c", "-m", "Why the cube.", "--trailer", "Reproducer=reproducers/cube",
            "--trailer", "Upstream-Status=Submitted [https://example.org/1]", "--json")
    assert r.code == 0, r.err
    work = Path(json.loads(r.out)["work"])
    (work / "src/util.c").write_text((work / "src/util.c").read_text() + CUBE)
    assert cli("-C", str(canonical), "refresh").code == 0
    text = (canonical / "stack/patches/0004-add-cube.patch").read_text()
    assert "Subject: [PATCH] add-cube\n\nWhy the cube.\n\nConcern: cube\n" \
           "Upstream-Status: Submitted [https://example.org/1]\nScope: src/util.c\n" \
           "Reproducer: reproducers/cube\n---\n" in text


def test_edit_reset_clears_an_old_format_edit_state(cli, canonical: Path) -> None:
    """Bug: `edit --reset` refused an edit state from an older patchctl instead of
    clearing it."""
    assert cli("-C", str(canonical), "edit", "1").code == 0
    state = canonical / ".patchctl/edit/state.json"
    data = json.loads(state.read_text())
    data["schema"] = "patchctl.edit/1"
    state.write_text(json.dumps(data))
    assert cli("-C", str(canonical), "edit", "2").code == 2
    r = cli("-C", str(canonical), "edit", "2", "--reset")
    assert r.code == 0, r.err
    assert "discarded an edit state this patchctl cannot use" in r.err


def _lacking(cli, tmp_path: Path, patches, blob: str) -> Path:
    """A project with the standard patches on an upstream (with docs/) that lacks ``blob``,
    as a mirror lacks its largest files."""
    up = make_upstream(tmp_path / "up", n_docs=2)
    drop_blob(up, blob)
    project = tmp_path / "proj"
    project.mkdir()
    assert cli("-C", str(project), "init", "--upstream", str(up.path), "--pin",
               up.commits["base"]).code == 0
    for name, text in patches:
        (tmp_path / name).write_text(text)
    imported(cli, project, *sorted(str(tmp_path / name) for name, _ in patches))
    return project


def test_new_checks_out_the_scope_in_a_sparse_work_tree(cli, tmp_path: Path, patches) -> None:
    """Bug: `new --scope GLOB` left the Scope's files out of the edit work tree made
    sparse because the upstream lacks a blob; the user had to `git sparse-checkout add`."""
    project = _lacking(cli, tmp_path, patches, "docs/page0000.md")
    r = cli("-C", str(project), "new", "docs", "--concern", "docs", "--scope", "docs/*",
            "--json")
    assert r.code == 0, r.err
    work = Path(json.loads(r.out)["work"])
    assert (work / "docs/page0001.md").is_file()  # in Scope, and the upstream has it
    assert not (work / "docs/page0000.md").exists()  # in Scope, but its blob is missing
    assert not (work / "README.md").exists()  # outside Scope: still left out
    (work / "docs/page0001.md").write_text("# Page 1\n\nBetter text.\n")
    done = cli("-C", str(project), "refresh")
    assert done.code == 0, done.err
    text = (project / "stack/patches/0004-docs.patch").read_text()
    assert "+Better text." in text and "page0000" not in text and "README" not in text


def test_edit_full_writes_every_readable_file(cli, tmp_path: Path, patches) -> None:
    """Bug: on an upstream lacking some blobs (llama.cpp's mirror without its models/*.gguf)
    the edit work tree held only the files the stack touches and the Scope, so the
    upstream could not be built there to test the patch; `--full` writes every file the
    upstream has (found writing the filtered-state patch of llama.cpp)."""
    project = _lacking(cli, tmp_path, patches, "docs/page0000.md")
    r = cli("-C", str(project), "new", "notes", "--concern", "notes", "--scope", "docs/NOTES.md",
            "--full", "--json")
    assert r.code == 0, r.err
    work = Path(json.loads(r.out)["work"])
    for path in ("README.md", "CMakeLists.txt", "docs/page0001.md"):  # outside the Scope
        assert (work / path).is_file()
    assert not (work / "docs/page0000.md").exists()  # its blob is missing
    assert git(work, "status", "--porcelain") == ""
    (work / "docs/NOTES.md").write_text("notes\n")
    assert cli("-C", str(project), "refresh").code == 0
    text = (project / "stack/patches/0004-notes.patch").read_text()
    assert "+++ b/docs/NOTES.md" in text and "page0000" not in text and "README" not in text
    r = cli("-C", str(project), "edit", "2", "--full", "--json")
    assert r.code == 0, r.err
    assert (work / "README.md").is_file() and not (work / "docs/page0000.md").exists()
    r = cli("-C", str(project), "edit", "2", "--json")  # sparse again without --full
    assert r.code == 0, r.err
    assert not (work / "README.md").exists()


def test_edit_and_new_when_the_upstream_lacks_a_root_level_blob(cli, tmp_path: Path,
                                                                patches) -> None:
    """Bug: with a root-level blob missing from the upstream (a mirror without its largest
    files), `edit` and `new` failed committing the stack into the sparse work tree
    ("Error building trees": git checked every root entry's object), and so did the
    user's own `git commit` there; a patch that creates a file at the root could not be
    written or edited either."""
    project = _lacking(cli, tmp_path, patches, "README.md")
    r = cli("-C", str(project), "edit", "2", "--json")
    assert r.code == 0, r.err
    work = Path(json.loads(r.out)["work"])
    assert not (work / "README.md").exists()  # its blob is missing: left out by design
    replace_in(work / "src/tiny.c", "/* patched */", "/* patched twice */")
    git(work, "commit", "-q", "-a", "-m", "the user's own commit")  # git itself copes
    done = cli("-C", str(project), "refresh")
    assert done.code == 0, done.err
    text = (project / "stack/patches/0002-tiny-bump-op-02.patch").read_text()
    assert "patched twice" in text and "README" not in text
    # A new patch that creates a file at the root, then an edit of it.
    r = cli("-C", str(project), "new", "notes", "--concern", "notes", "--scope", "NOTES.md",
            "--json")
    assert r.code == 0, r.err
    work = Path(json.loads(r.out)["work"])
    (work / "NOTES.md").write_text("notes\n")
    assert cli("-C", str(project), "refresh").code == 0
    r = cli("-C", str(project), "edit", "4", "--json")
    assert r.code == 0, r.err
    assert (work / "NOTES.md").read_text() == "notes\n"
    (work / "NOTES.md").write_text("better notes\n")
    assert cli("-C", str(project), "refresh").code == 0
    text = (project / "stack/patches/0004-notes.patch").read_text()
    assert "+++ b/NOTES.md" in text and "+better notes" in text and "README" not in text
    assert cli("-C", str(project), "verify").code == 0


def test_work_trees_on_an_upstream_lacking_a_blob_the_stack_changes(cli, tmp_path: Path,
                                                                     patches) -> None:
    """With the blob of a file the stack changes missing from the upstream,
    `edit` and `rebase-pin` stopped with git's raw "unable to read sha1 file of ..." (exit
    3); they name the file and what to pass. `new` on a stack that touches no file went
    sparse only when some patch touched a file: otherwise the same raw error."""
    from tests.builders import commit_all, write

    up = make_upstream(tmp_path / "up", n_docs=1)
    write(up.path, {"docs/page0000.md": "# Page 0\n\nNewer text.\n"})
    commit_all(up.path, "docs : newer text (#4)")
    drop_blob(up, "src/util.c")  # the same blob at the pin: 0001 changes it
    project = make_project(tmp_path / "proj", up, patches)
    before = stackwrite.snapshot(project / "stack")
    for args in (("edit", "2"), ("rebase-pin", "master")):
        r = cli("-C", str(project), *args)
        assert r.code == 2 and r.err.count("\n") == 1, r.err
        assert "the upstream lacks the contents of 1 file the stack changes: src/util.c" \
            in r.err and "pass an --upstream that has it" in r.err and "sha1" not in r.err
        assert stackwrite.snapshot(project / "stack") == before
    empty = make_project(tmp_path / "empty", up, [])
    r = cli("-C", str(empty), "new", "notes", "--concern", "notes", "--scope", "NOTES.md",
            "--json")
    assert r.code == 0, r.err
    work = Path(json.loads(r.out)["work"])
    assert not (work / "src/util.c").exists()  # its blob is missing: left out
    (work / "NOTES.md").write_text("notes\n")
    assert cli("-C", str(empty), "refresh").code == 0


def test_refresh_keeps_an_ignored_file_the_user_added(cli, tmp_path: Path, patches) -> None:
    """Bug: refresh snapshot the edit work tree from HEAD, so a new file that the upstream's
    .gitignore ignores (llama.cpp's `/models/*`: a file for models/) was left out even
    after `git add -f`, unless committed: "holds no change", with no hint why."""
    from tests.builders import commit_all, write

    up = make_upstream(tmp_path / "up")
    write(up.path, {".gitignore": "/models/*\n"})
    pin = commit_all(up.path, "gitignore : models (#4)")
    project = tmp_path / "proj"
    project.mkdir()
    assert cli("-C", str(project), "init", "--upstream", str(up.path), "--pin", pin).code == 0
    r = cli("-C", str(project), "new", "note", "--concern", "note", "--scope",
            "models/NOTE.md", "--json")
    assert r.code == 0, r.err
    work = Path(json.loads(r.out)["work"])
    (work / "models").mkdir()
    (work / "models/NOTE.md").write_text("a note\n")
    hint = cli("-C", str(project), "refresh")
    assert hint.code == 2 and "git add -f" in hint.err
    git(work, "add", "-f", "models/NOTE.md")  # staged, not committed
    done = cli("-C", str(project), "refresh")
    assert done.code == 0, done.err
    text = (project / "stack/patches/0001-note.patch").read_text()
    assert "+++ b/models/NOTE.md" in text and "+a note" in text


def test_a_new_file_in_the_scope_is_inside_the_sparse_work_tree(cli, tmp_path: Path,
                                                                patches) -> None:
    """Bug: in an edit work tree made sparse by a missing blob, a file the patch's Scope
    allows but that did not exist yet lay outside the sparse checkout: `git add` refused
    it without --sparse (so an ignored file, `git add -f`, could not be staged at all)."""
    project = _lacking(cli, tmp_path, patches, "docs/page0000.md")
    r = cli("-C", str(project), "new", "notes", "--concern", "notes", "--scope", "docs/NOTES.md",
            "--scope", "docs/extra/*.md", "--json")
    assert r.code == 0, r.err
    work = Path(json.loads(r.out)["work"])
    (work / "docs/extra").mkdir(parents=True)
    (work / "docs/NOTES.md").write_text("notes\n")
    (work / "docs/extra/a.md").write_text("a\n")
    git(work, "add", "docs/NOTES.md", "docs/extra/a.md")  # as in any work tree
    assert git(work, "status", "--porcelain").splitlines() == ["A  docs/NOTES.md",
                                                               "A  docs/extra/a.md"]
    assert cli("-C", str(project), "refresh").code == 0
    text = (project / "stack/patches/0004-notes.patch").read_text()
    assert "+++ b/docs/NOTES.md" in text and "+++ b/docs/extra/a.md" in text
    assert "page0000" not in text
    # The patch's own Scope holds for an edit of it too.
    assert cli("-C", str(project), "edit", "4").code == 0
    (work / "docs/extra/b.md").write_text("b\n")
    git(work, "add", "docs/extra/b.md")
    assert cli("-C", str(project), "refresh").code == 0
    assert "+++ b/docs/extra/b.md" in (project / "stack/patches/0004-notes.patch").read_text()


def test_import_reports_progress_on_stderr(cli, empty: Path, sources: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """`import` (2,000 patches take a while) said nothing until done; it now reports its
    steps through the same progress as every long command, on stderr only."""
    monkeypatch.delenv("PATCHCTL_QUIET")
    monkeypatch.setenv("PATCHCTL_PROGRESS", "lines")
    files = sorted(str(p) for p in sources.iterdir())
    r = cli("-C", str(empty), "import", *files)
    assert r.code == 0, r.err
    said = [ln.split("] ", 1)[1] for ln in r.err.splitlines()]
    assert said[:3] == ["reading 3 source(s)", "applying the stack (0 patches) at the pin",
                        "applying 3 patch(es) on top"]
    assert said[3] == f"[1/3] {files[0]}" and said[-1] == f"writing 3 patch(es) into " \
        f"{empty / 'stack'}"
    assert "patchctl: [" not in r.out


@pytest.mark.parametrize("option", [
    ["--concern", "c\nScope: **"], ["--subject", "s\nScope: **"],
    ["--assisted-by", "tool\nScope: **"], ["--scope", "x\nConcern: other"],
    ["-m", "Why.\n---\ndiff --git a/README.md b/README.md"], ["--concern", "c\x1b[2J"]],
    ids=["concern", "subject", "assisted-by", "scope", "message-diff", "concern-escape"])
def test_new_options_cannot_add_headers_or_trailers(cli, canonical: Path,
                                                    option: list[str]) -> None:
    """`new` wrote --concern, --subject, --assisted-by (and --scope) verbatim
    into the header it keeps for refresh: a newline in one added a trailer. Each is
    checked as `header --set` checks a value (model/lint.py), before the edit is opened."""
    args = {"--concern": "c", "--scope": "x"}
    flags = [a for k, v in args.items() if k != option[0] for a in (k, v)]
    before = snap(canonical)
    r = cli("-C", str(canonical), "new", "x", *flags, *option)
    assert r.code == 2 and r.err.count("\n") == 1, r.err
    assert option[0] in r.err
    assert not (canonical / ".patchctl/edit").exists()
    assert snap(canonical) == before


def test_import_values_cannot_add_trailers_or_diff_lines(cli, empty: Path, tmp_path: Path,
                                                        upstream: Upstream,
                                                        sources: Path) -> None:
    """`import --concern` was written verbatim, and a
    commit message holding a `---` line and a diff became part of the imported patch.
    Both are refused, naming the source; nothing is imported."""
    before = snap(empty)
    r = cli("-C", str(empty), "import", str(sources / sorted(p.name for p in
                                                             sources.iterdir())[0]),
            "--concern", "c\nScope: **")
    assert r.code == 2 and "--concern" in r.err and r.err.count("\n") == 1, r.err
    fork = tmp_path / "fork"
    git(tmp_path, "clone", "-q", str(upstream.path), str(fork))
    git(fork, "checkout", "-q", "-b", "feature", upstream.commits["base"])
    (fork / "src/util.c").write_text((fork / "src/util.c").read_text() + CUBE)
    git(fork, "commit", "-q", "--cleanup=verbatim", "-am",
        "util : add cube\n\nWhy.\n---\ndiff --git a/README.md b/README.md\n--- a/README.md\n"
        "+++ b/README.md\n@@ -1 +1,2 @@\n # tiny\n+injected\n\nConcern: cube\n")
    r = cli("-C", str(empty), "import", "--from-repo", str(fork),
            f"{upstream.commits['base']}..feature")
    assert r.code == 2 and "would end the message or start a diff" in r.err, r.err
    assert r.err.count("\n") == 1 and "@" in r.err  # names the source, repo@commit
    assert snap(empty) == before
