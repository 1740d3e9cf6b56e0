"""patchctl verify against real git repositories built in temp dirs."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from tests.builders import (
    Upstream,
    commit_all,
    default_trailers,
    format_patch,
    git,
    make_project,
    replace_in,
    write,
)


def test_clean_stack_is_exact_and_batched(cli, project: Path, upstream: Upstream) -> None:
    r = cli("-C", str(project), "verify", "--upstream", str(upstream.path), "--json")
    assert r.code == 0, r.out + r.err
    data = json.loads(r.out)
    assert data["schema"] == "patchctl.verify/1"
    assert data["ok"] is True
    assert data["mode"] == "batched"
    assert [p["grade"] for p in data["patches"]] == ["exact", "exact", "exact"]
    assert data["lock"] == "current"
    assert data["reversed_tree"] == data["pin_tree"] == upstream.tree(upstream.commits["base"])
    assert data["git_calls"] <= 8  # one `git apply` forward and one back, for the whole stack


def test_text_report_names_every_patch(cli, project: Path, upstream: Upstream) -> None:
    r = cli("-C", str(project), "verify", "--upstream", str(upstream.path))
    assert r.code == 0
    for name in ("0001-util-add-tiny_square.patch", "0002-tiny-bump-op-02.patch"):
        assert name in r.out
    assert "result: OK" in r.out
    assert "restores the pin's tree exactly" in r.out


def _shift_tiny_c(upstream: Upstream) -> str:
    """An upstream commit that inserts lines above every op: hunks then need an offset."""
    path = upstream.path
    git(path, "checkout", "-q", "master")
    replace_in(path / "src/tiny.c", "/* tiny: a small library for patchctl's tests. */\n",
               "/* tiny: a small library for patchctl's tests. */\n/* one */\n/* two */\n")
    return commit_all(path, "tiny : two more comment lines (#4)")


def test_offset_only_patch_is_graded_offset(cli, tmp_path, upstream, patches) -> None:
    new_pin = _shift_tiny_c(upstream)
    project = make_project(tmp_path / "p", upstream, patches, pin=new_pin)
    r = cli("-C", str(project), "verify", "--upstream", str(upstream.path), "--json")
    data = json.loads(r.out)
    assert r.code == 0
    grades = {p["name"]: p for p in data["patches"]}
    bumped = grades["0002-tiny-bump-op-02.patch"]
    assert bumped["grade"] == "offset"
    assert bumped["offsets"] == [{"file": "src/tiny.c", "hunk": 1, "offset": 2,
                                  "line": bumped["offsets"][0]["line"]}]
    assert grades["0001-util-add-tiny_square.patch"]["grade"] == "exact"
    strict = cli("-C", str(project), "verify", "--upstream", str(upstream.path), "--strict")
    assert strict.code == 1
    assert "strict" in strict.out


def test_failing_hunk_names_patch_file_and_hunk(cli, tmp_path, upstream, patches) -> None:
    replace_in(upstream.path / "src/tiny.c", "    int y = x * 4;\n", "    int y = x * 4 - 0;\n")
    new_pin = commit_all(upstream.path, "tiny : rewrite op 02 (#5)")
    project = make_project(tmp_path / "p", upstream, patches, pin=new_pin)
    r = cli("-C", str(project), "verify", "--upstream", str(upstream.path), "--json")
    assert r.code == 1
    data = json.loads(r.out)
    assert data["mode"] == "per-patch"
    by = {p["name"]: p for p in data["patches"]}
    failed = by["0002-tiny-bump-op-02.patch"]
    assert failed["grade"] == "failed"
    assert failed["failure"]["file"] == "src/tiny.c"
    assert failed["failure"]["hunk"] == 1
    patch_lines = (project / "stack/patches/0002-tiny-bump-op-02.patch").read_text().splitlines()
    assert patch_lines[failed["failure"]["line"] - 1].startswith("@@ ")
    assert by["0001-util-add-tiny_square.patch"]["grade"] == "exact"
    assert by["0003-tiny-declare-square.patch"]["grade"] == "skipped"

    gh = cli("-C", str(project), "verify", "--upstream", str(upstream.path), "--format", "github")
    line = next(ln for ln in gh.out.splitlines() if ln.startswith("::error"))
    assert "0002-tiny-bump-op-02.patch" in line
    assert f"line={failed['failure']['line']}" in line


def _blocks(tag: str) -> str:
    return "".join(f"begin {tag}{i}\nalpha\nbeta\ngamma\nend {tag}{i}\n" for i in range(1, 4))


def test_overlapping_patches_apply_but_do_not_reverse(cli, tmp_path, upstream) -> None:
    """Patch 1 makes a copy of patch 2's postimage where patch 2 claims to apply.

    Forward, patch 2 lands at an offset on the other copy; reversed, git finds
    the copy at the claimed line first, so the stack no longer restores the pin.
    """
    text = "top\n" + "".join(f"filler {i}\n" for i in range(8))
    text += "one\nq\nthree\n" + "".join(f"filler {i}\n" for i in range(8, 16)) + "one\nx\nthree\n"
    write(upstream.path, {"src/dup.txt": text})
    pin = commit_all(upstream.path, "dup : add (#6)")
    lines = text.splitlines()
    first = lines.index("q") + 1  # 1-based line of the first `q`
    second = lines.index("x") + 1
    trail = "\n".join(f"{k}: {v}" for k, v in default_trailers("dup", "src/dup.txt").items())
    p1 = (f"Subject: [PATCH] one\nFrom: A <a@b.c>\n\nwhy\n\n{trail}\n---\n"
          "diff --git a/src/dup.txt b/src/dup.txt\n--- a/src/dup.txt\n+++ b/src/dup.txt\n"
          f"@@ -{second - 1},3 +{second - 1},3 @@\n one\n-x\n+Q\n three\n")
    p2 = (f"Subject: [PATCH] two\nFrom: A <a@b.c>\n\nwhy\n\n{trail}\n---\n"
          "diff --git a/src/dup.txt b/src/dup.txt\n--- a/src/dup.txt\n+++ b/src/dup.txt\n"
          f"@@ -{second - 1},3 +{second - 1},3 @@\n one\n-q\n+Q\n three\n")
    assert first < second
    project = make_project(tmp_path / "p", upstream, [("0001-one.patch", p1),
                                                      ("0002-two.patch", p2)], pin=pin)
    r = cli("-C", str(project), "verify", "--upstream", str(upstream.path), "--json")
    data = json.loads(r.out)
    assert r.code == 1, r.out
    grades = [p["grade"] for p in data["patches"]]
    assert grades == ["exact", "irreversible"]
    assert data["reversed_tree"] != data["pin_tree"]


def test_scope_violation_is_an_error(cli, tmp_path, upstream) -> None:
    def edit(work: Path) -> None:
        replace_in(work / "README.md", "A small C library.", "A small C library, patched.")

    text = format_patch(upstream, upstream.commits["base"], edit, subject="docs : x",
                        trailers=default_trailers("docs", "src/**"), scratch=tmp_path / "s")
    project = make_project(tmp_path / "p", upstream, [("0001-docs.patch", text)])
    r = cli("-C", str(project), "verify", "--upstream", str(upstream.path))
    assert r.code == 1
    assert "README.md is outside the patch's Scope (src/**)" in r.out


def test_partial_clone_verifies(cli, tmp_path, project, upstream) -> None:
    partial = tmp_path / "partial.git"
    subprocess.run(["git", "clone", "-q", "--bare", "--filter=blob:none",
                    f"file://{upstream.path}", str(partial)], check=True)
    objects = git(partial, "count-objects", "-v")
    r = cli("-C", str(project), "verify", "--upstream", str(partial), "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["ok"] is True
    assert "count: 0" in objects or "in-pack" in objects  # it really was a partial clone


def test_junit_report(cli, tmp_path, project, upstream) -> None:
    junit = tmp_path / "out" / "verify.xml"
    r = cli("-C", str(project), "verify", "--upstream", str(upstream.path), "--junit", str(junit))
    assert r.code == 0
    suite = ET.parse(junit).getroot()
    assert suite.get("tests") == "4"
    assert suite.get("failures") == "0"
    names = [c.get("name") for c in suite.iter("testcase")]
    assert names[0] == "0001-util-add-tiny_square.patch"


def test_stale_lock_fails_but_header_edit_does_not(cli, project, upstream) -> None:
    patch = project / "stack/patches/0002-tiny-bump-op-02.patch"
    patch.write_text(patch.read_text().replace("Upstream-Status: Pending",
                                               "Upstream-Status: Submitted [https://x/1]"))
    r = cli("-C", str(project), "verify", "--upstream", str(upstream.path))
    assert r.code == 0, r.out
    patch.write_text(patch.read_text().replace("/* patched */", "/* patched! */"))
    r = cli("-C", str(project), "verify", "--upstream", str(upstream.path))
    assert r.code == 1
    assert "stack.lock is stale (changed: 0002-tiny-bump-op-02.patch)" in r.out
    assert cli("-C", str(project), "lock").code == 0
    assert cli("-C", str(project), "verify", "--upstream", str(upstream.path)).code == 0


def test_verify_writes_nothing(cli, project, upstream) -> None:
    def snapshot(root: Path) -> dict[str, bytes]:
        # Content, not mtimes: git may freshen an existing object's mtime on read.
        return {str(p): p.read_bytes() for p in root.rglob("*") if p.is_file()}

    before = snapshot(project), snapshot(upstream.path)
    index = upstream.path / ".git" / "index"
    index_bytes = index.read_bytes()
    assert cli("-C", str(project), "verify", "--upstream", str(upstream.path)).code == 0
    assert (snapshot(project), snapshot(upstream.path)) == before
    assert index.read_bytes() == index_bytes


def test_inherited_git_index_file_is_ignored(cli, project, upstream, monkeypatch, tmp_path):
    """A GIT_INDEX_FILE inherited from a hook must not redirect patchctl's git calls."""
    from patchctl import gitrepo

    bogus = tmp_path / "bogus-index"
    monkeypatch.setenv("GIT_INDEX_FILE", str(bogus))
    monkeypatch.setattr(gitrepo.core, "_ENV", None)
    assert cli("-C", str(project), "verify", "--upstream", str(upstream.path)).code == 0
    assert not bogus.exists()


def test_upstream_url_is_cloned_once_into_the_cache(cli, project, upstream, tmp_path,
                                                    monkeypatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("PATCHCTL_CACHE_DIR", str(cache))
    url = f"file://{upstream.path}"
    assert cli("-C", str(project), "verify", "--upstream", url).code == 0
    clones = list((cache / "upstreams").iterdir())
    assert len(clones) == 1
    head_before = (clones[0] / "FETCH_HEAD").stat().st_mtime_ns
    assert cli("-C", str(project), "verify", "--upstream", url).code == 0
    assert (clones[0] / "FETCH_HEAD").stat().st_mtime_ns == head_before  # no second fetch


def test_unreachable_url_is_an_environment_failure(cli, project, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATCHCTL_CACHE_DIR", str(tmp_path / "cache"))
    r = cli("-C", str(project), "verify", "--upstream", f"file://{tmp_path}/nowhere.git")
    assert r.code == 3
    assert r.err.startswith("patchctl: error: cannot fetch")
    assert len(r.err.strip().splitlines()) == 1


@pytest.mark.parametrize("whitespace", ["trailing", "none"])
def test_whitespace_errors_are_warnings(cli, tmp_path, upstream, whitespace) -> None:
    added = "int tiny_cube(int v) { return v * v * v; }"
    added += "   " if whitespace == "trailing" else ""

    def edit(work: Path) -> None:
        replace_in(work / "src/util.c", "int tiny_abs(int v)", added + "\n\nint tiny_abs(int v)")

    text = format_patch(upstream, upstream.commits["base"], edit, subject="util : cube",
                        trailers=default_trailers("cube", "src/util.c",
                                                  Reproducer="reproducers/cube"),
                        scratch=tmp_path / "s")
    project = make_project(tmp_path / "p", upstream, [("0001-cube.patch", text)])
    r = cli("-C", str(project), "verify", "--upstream", str(upstream.path), "--json")
    findings = json.loads(r.out)["patches"][0]["findings"]
    codes = [f["code"] for f in findings]
    if whitespace == "trailing":
        assert codes == ["whitespace"]
        assert r.code == 0
        line = findings[0]["line"]
        assert text.splitlines()[line - 1].endswith("   ")
        strict = cli("-C", str(project), "verify", "--upstream", str(upstream.path), "--strict")
        assert strict.code == 1
    else:
        assert codes == []


def test_env_var_names_the_upstream(cli, project, upstream, monkeypatch) -> None:
    monkeypatch.setenv("PATCHCTL_UPSTREAM", str(upstream.path))
    assert cli("-C", str(project), "verify").code == 0


def test_real_git_am_accepts_the_stack(project, upstream, tmp_path) -> None:
    work = tmp_path / "am"
    subprocess.run(["git", "clone", "-q", str(upstream.path), str(work)], check=True)
    git(work, "checkout", "-q", upstream.commits["base"])
    patches = sorted((project / "stack/patches").glob("*.patch"))
    git(work, "am", "-q", *map(str, patches))
    assert git(work, "log", "--format=%s", "-3").splitlines()[0] == "tiny : declare tiny_square"
    assert os.environ.get("GIT_DIR") is None


def test_file_deletion_and_mode_change_use_the_two_pass_path(cli, tmp_path, upstream) -> None:
    """Patches a plain inverse cannot express still get a real apply -R proof."""

    def edit(work: Path) -> None:
        (work / "README.md").unlink()
        (work / "src/util.c").chmod(0o755)

    text = format_patch(upstream, upstream.commits["base"], edit, subject="drop readme",
                        trailers=default_trailers("x", "README.md src/util.c"),
                        scratch=tmp_path / "s")
    assert "deleted file mode" in text and "new mode 100755" in text
    project = make_project(tmp_path / "p", upstream, [("0001-x.patch", text)])
    r = cli("-C", str(project), "verify", "--upstream", str(upstream.path), "--json")
    assert r.code == 0, r.out
    data = json.loads(r.out)
    assert data["patches"][0]["grade"] == "exact"
    assert data["reversed_tree"] == data["pin_tree"]


@pytest.mark.parametrize("case", ["add-eol", "drop-eol", "new-file-no-eol"])
def test_round_trip_handles_missing_newline_at_eof(cli, tmp_path, upstream, case) -> None:
    """Patches adding or dropping `\\ No newline at end of file` prove batched."""
    write(upstream.path, {"src/noeol.txt": "alpha\nbeta"})
    pin = commit_all(upstream.path, "noeol (#8)")

    def edit(work: Path) -> None:
        if case == "add-eol":
            (work / "src/noeol.txt").write_text("alpha\nbeta\n")
        elif case == "drop-eol":
            (work / "src/noeol.txt").write_text("alpha\nBETA")
        else:
            (work / "src/fresh.txt").write_text("one\ntwo")

    scope = "src/*.txt"
    text = format_patch(upstream, pin, edit, subject=case,
                        trailers=default_trailers("eol", scope), scratch=tmp_path / "s")
    assert "\\ No newline at end of file" in text
    project = make_project(tmp_path / "p", upstream, [("0001-eol.patch", text)], pin=pin)
    r = cli("-C", str(project), "verify", "--upstream", str(upstream.path), "--json")
    data = json.loads(r.out)
    assert r.code == 0, r.out
    assert data["mode"] == "batched"
    assert data["reversed_tree"] == data["pin_tree"]


def test_verify_reads_one_consistent_stack_while_refresh_swaps_it(cli, project: Path,
                                                                   upstream: Upstream) -> None:
    """Regression: verify read series, patches and lock by path while another command
    swapped stack/, and reported a spurious "lock stale" (8 of 51 runs during a refresh
    loop). It now reads under the stack's shared lock: a real refresh loop runs in the
    background and every verify must see a whole stack (exit 0, lock current)."""
    import sys
    import threading

    def patchctl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "patchctl", "-C", str(project), *args],
                              capture_output=True, text=True, check=False, timeout=120)

    assert patchctl("edit", "1").returncode == 0
    work = project / ".patchctl/edit/work/src/util.c"
    original = work.read_text()
    stop = threading.Event()
    refreshed: list[int] = []

    def loop() -> None:
        i = 0
        while not stop.is_set():
            i += 1
            work.write_text(original + f"/* refresh {i} */\n")
            r = patchctl("refresh")
            if r.returncode == 0:
                refreshed.append(i)
            else:  # only "busy" (a verify holds the stack) may stop a refresh
                assert r.returncode == 3 and "is busy" in r.stderr, r.stderr

    thread = threading.Thread(target=loop)
    thread.start()
    try:
        reports = []
        while len(reports) < 12 or len(refreshed) < 5:
            r = patchctl("verify", "--upstream", str(upstream.path), "--json")
            reports.append((r.returncode, r.stdout and json.loads(r.stdout)["lock"], r.stderr))
            if len(reports) > 60:
                break
    finally:
        stop.set()
        thread.join()
    assert len(refreshed) >= 5, "the refresh loop did not run concurrently"
    bad = [rep for rep in reports if rep[:2] != (0, "current")]
    assert bad == [], bad


def test_an_upstream_lacking_a_root_level_blob_verifies(cli, tmp_path: Path, patches) -> None:
    """Bug: verify failed with "error building trees" (exit 3) on an upstream that lacks
    a blob at the root (a mirror without its largest files): git's write-tree checked
    the objects of every root entry, although the proof never reads them."""
    from tests.builders import drop_blob, make_upstream

    up = make_upstream(tmp_path / "up")
    drop_blob(up, "README.md")
    project = make_project(tmp_path / "p", up, patches)
    r = cli("-C", str(project), "verify", "--json")
    assert r.code == 0, r.out + r.err
    data = json.loads(r.out)
    assert data["reversed_tree"] == data["pin_tree"] == up.tree(up.commits["base"])


LONG_PATH = "src/" + "a_long_directory_name/" * 2 + "some_source_file_name.c"


def _long_path_patch(upstream: Upstream, scratch: Path, scope: str) -> str:
    def edit(work: Path) -> None:
        write(work, {LONG_PATH: "int long_one;\n"})

    return format_patch(upstream, upstream.commits["base"], edit, subject="src : long path",
                        trailers=default_trailers("long", scope), scratch=scratch)


def test_scope_star_run_does_not_hang_verify(tmp_path, upstream) -> None:
    """`Scope: ************************x` (25 bytes) became twelve `.*` in a
    backtracking regex and hung verify on a patch touching a 70-byte path. verify runs in
    a subprocess with a time bound: a hang fails the test instead of hanging it."""
    import sys

    text = _long_path_patch(upstream, tmp_path / "s", "*" * 24 + "x")
    project = make_project(tmp_path / "p", upstream, [("0001-long.patch", text)])
    r = subprocess.run([sys.executable, "-m", "patchctl", "-C", str(project), "verify",
                        "--upstream", str(upstream.path)], capture_output=True, text=True,
                       check=False, timeout=60)
    assert r.returncode == 1, r.stderr
    assert f"{LONG_PATH} is outside the patch's Scope (************************x)" in r.stdout


@pytest.mark.parametrize(("scope", "fragment"), [
    ("src/[z-a].c", "the range `z-a` is reversed"),
    ("src/[]", "the `[` at character 5 is not closed"),
])
def test_invalid_scope_glob_is_a_finding_on_its_line(cli, tmp_path, upstream, scope: str,
                                                      fragment: str) -> None:
    """An invalid Scope glob (`src/[z-a].c`, `src/[]`) made verify die with a
    re.error traceback; it is now an error finding naming the glob and the trailer's line,
    and the glob matches nothing (so the file is also outside the Scope)."""
    text = _long_path_patch(upstream, tmp_path / "s", f"src/** {scope}")
    project = make_project(tmp_path / "p", upstream, [("0001-long.patch", text)])
    r = cli("-C", str(project), "verify", "--upstream", str(upstream.path), "--json")
    assert r.code == 1 and "Traceback" not in r.out + r.err, r.err
    findings = json.loads(r.out)["patches"][0]["findings"]
    line = 1 + text.split("\n").index(f"Scope: src/** {scope}")
    glob = [f for f in findings if f["code"] == "glob"]
    assert len(glob) == 1 and fragment in glob[0]["message"], findings
    assert glob[0]["message"].startswith(f"`Scope:` glob `{scope}`: ")
    assert glob[0]["line"] == line
    assert not any(f["code"] == "scope" for f in findings)  # src/** still covers the file


def test_negated_set_in_scope_negates(cli, tmp_path, upstream) -> None:
    """`[!x]` was read as the set {!, x}: `Scope: [!s]*/**` covered only
    src/ files, the opposite of what fnmatch (and the author) means."""
    text = _long_path_patch(upstream, tmp_path / "s", "[!i]*/**")
    project = make_project(tmp_path / "p", upstream, [("0001-long.patch", text)])
    assert cli("-C", str(project), "verify", "--upstream", str(upstream.path)).code == 0
    text = _long_path_patch(upstream, tmp_path / "s", "[!s]*/**")
    project = make_project(tmp_path / "q", upstream, [("0001-long.patch", text)])
    r = cli("-C", str(project), "verify", "--upstream", str(upstream.path))
    assert r.code == 1 and "is outside the patch's Scope ([!s]*/**)" in r.out


def test_a_lock_found_current_is_judged_again_only_when_something_changed(
        cli, project, upstream, monkeypatch) -> None:
    """Every verify rendered the whole stack's lock again (2,000 patches: ~10 ms) to compare
    it with stack.lock, though neither had changed since the last verify found it current.
    That verdict is kept (in the parse cache) for this lock text, pin and these patches;
    a changed lock, or pin name, is judged again."""
    from patchctl.model import fingerprint

    made: list[int] = []
    make_lock = fingerprint.make_lock
    monkeypatch.setattr(fingerprint, "make_lock", lambda *a: made.append(1) or make_lock(*a))
    args = ("-C", str(project), "verify", "--upstream", str(upstream.path))
    assert cli(*args).code == 0 and made == [1]
    assert cli(*args).code == 0 and made == [1]  # found current as it was
    lock = project / "stack/stack.lock"
    text = lock.read_text()
    digest = text.split('digest = "', 1)[1][:64]
    lock.write_text(text.replace(digest, "0" * 64, 1))
    r = cli(*args)
    assert r.code == 1 and "stack.lock is stale (changed: 0001-" in r.out and len(made) == 2
    lock.write_text(text)
    assert cli(*args).code == 0 and len(made) == 2
    pin = project / "stack/upstream.toml"
    pin.write_text(pin.read_text().replace('name = "', 'name = "renamed-', 1))
    r = cli(*args)
    assert r.code == 1 and "stack.lock is stale" in r.out and len(made) == 3


def test_the_patches_are_read_once_git_runs(cli, project, upstream, monkeypatch) -> None:
    """verify read the patches while its threads were still starting git, and each step of
    theirs (the index copied in, git's process started) waited for the interpreter lock
    that the reading held: git began some 30 ms late on every run. The reading now waits
    until git runs the forward pass (here a git made slow to start)."""
    from patchctl.gitrepo import index
    from patchctl.verify import engine

    started: list[str] = []
    at_read: list[list[str]] = []
    start_git, load = index.start_git, engine._load

    def slow_start(args, **kwargs):
        time.sleep(0.3)
        started.append(args[0])
        return start_git(args, **kwargs)

    monkeypatch.setattr(index, "start_git", slow_start)
    monkeypatch.setattr(engine, "_load", lambda *a: at_read.append(list(started)) or load(*a))
    r = cli("-C", str(project), "verify", "--upstream", str(upstream.path))
    assert r.code == 0, r.out + r.err
    assert at_read == [["apply"]] and started == ["apply", "apply"]
