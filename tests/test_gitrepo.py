"""gitrepo functions that other tests reach only through rare situations."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from patchctl import gitrepo
from patchctl.errors import GitError, InputError
from tests.builders import Upstream, drop_blob, git, imported_project


def test_scratch_checkout_goes_sparse_when_a_blob_is_missing(tmp_path: Path,
                                                             upstream: Upstream) -> None:
    """Regression: a conflict worktree on a mirror without its big blobs failed with exit 3."""
    head = upstream.head
    drop_blob(upstream, "README.md")
    # one policy. Sparse even when nothing is needed (that raised git's raw
    # "unable to read sha1 file"); a needed file the upstream lacks is named.
    bare = gitrepo.scratch_checkout(upstream.path / ".git", tmp_path / "none", head)
    assert [p.name for p in bare.iterdir()] == [".git"]
    assert gitrepo.index_tree(bare) == upstream.tree(head)
    with pytest.raises(gitrepo.MissingFiles, match=r"lacks the contents of 1 file the stack "
                       r"changes: README\.md") as e:
        gitrepo.scratch_checkout(upstream.path / ".git", tmp_path / "x", head,
                                 needed=["README.md", "src/util.c"])
    assert e.value.paths == ["README.md"] and e.value.exit_code == 2
    work = gitrepo.scratch_checkout(upstream.path / ".git", tmp_path / "w", head,
                                    needed=["src/util.c", "include/tiny.h"])
    assert (work / "src/util.c").is_file() and (work / "include/tiny.h").is_file()
    assert not (work / "README.md").exists()
    assert git(work, "status", "--porcelain") == ""
    assert gitrepo.index_tree(work) == upstream.tree(head)  # the index is still whole


def test_sparse_scratch_checkout_writes_the_wanted_paths(tmp_path: Path,
                                                         upstream: Upstream) -> None:
    """Bug: `new --scope GLOB` left the Scope's files out of a sparse edit work tree
    (``wanted``); a wanted path whose blob is missing stays out."""
    drop_blob(upstream, "README.md")
    work = gitrepo.scratch_checkout(upstream.path / ".git", tmp_path / "w", upstream.head,
                                    needed=["src/util.c"],
                                    wanted=lambda p: p.endswith((".txt", ".md")))
    assert (work / "CMakeLists.txt").is_file() and (work / "src/util.c").is_file()
    assert not (work / "README.md").exists() and not (work / "src/tiny.c").exists()
    assert git(work, "status", "--porcelain") == ""


def test_a_hostile_global_git_config_changes_nothing(cli, tmp_path: Path, upstream: Upstream,
                                                    patches) -> None:
    """Bug: the user's global git config leaked into patchctl's git calls:
    core.autocrlf=true made `apply --into` write CRLF files that did not match the
    stamped tree, apply.whitespace=fix failed `apply --commits`, edit + refresh with
    no edit rewrote the patch; core.fsmonitor ran a command."""
    import os

    from patchctl.model import stackwrite
    from patchctl.reproducers.materialize import manifest, read_stamp

    project = imported_project(cli, tmp_path, upstream, patches)
    before = stackwrite.snapshot(project / "stack")
    marker = tmp_path / "fsmonitor-ran"
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for hook in ("pre-commit", "commit-msg", "post-commit", "pre-applypatch"):
        (hooks / hook).write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
        (hooks / hook).chmod(0o755)
    # Where git reads the user's global config (the conftest points it at a temp HOME).
    config = Path(os.environ["GIT_CONFIG_GLOBAL"])
    config.write_text(config.read_text() + (
        "[core]\n\tautocrlf = true\n\teol = crlf\n\tsafecrlf = true\n"
        f"\tfsmonitor = touch {marker}\n\thooksPath = {hooks}\n\tquotePath = false\n"
        "[apply]\n\twhitespace = fix\n"
        "[diff]\n\tnoprefix = true\n\tcontext = 1\n\tmnemonicPrefix = true\n\trenames = copies\n"
        "[commit]\n\tgpgSign = true\n[gpg]\n\tprogram = false\n"
        "[color]\n\tui = always\n[format]\n\tsignature = hostile\n"))

    into = tmp_path / "tree"
    r = cli("-C", str(project), "apply", "--into", str(into))
    assert r.code == 0, r.err
    stamp = read_stamp(into)
    assert stamp is not None and manifest(into) == stamp.manifest
    assert b"\r" not in (into / "src/tiny.c").read_bytes()
    commits = cli("-C", str(project), "apply", "--into", str(tmp_path / "hist"), "--commits")
    assert commits.code == 0, commits.err
    for name in ("0001", "0002"):
        assert cli("-C", str(project), "edit", name).code == 0
        done = cli("-C", str(project), "refresh")
        assert done.code == 0 and ": unchanged;" in done.out, done.out + done.err
    assert stackwrite.snapshot(project / "stack") == before
    assert cli("-C", str(project), "verify").code == 0
    assert not marker.exists()


def test_read_at_a_commit_files_authors_grep_and_pickaxe(upstream) -> None:
    from patchctl import gitrepo

    base = upstream.commits["base"]
    files = gitrepo.read_files(upstream.path, base, ["README.md", "nope.md", "src"])
    assert files["README.md"].startswith("# tiny") and files["nope.md"] is None
    assert files["src"] is None  # a tree is not a file
    assert gitrepo.path_authors(upstream.path, base, ["src/util.c"]) == [("Upstream Dev", 2)]
    hits = gitrepo.grep_fixed(upstream.path, base, ["tiny_abs"], ["*.c"])
    assert [(h.path, h.text) for h in hits] == [("src/util.c", "int tiny_abs(int v)")]
    added = gitrepo.first_adding(upstream.path, base, "tiny_abs", "src/util.c")
    assert added.commit == base and added.subject == "util : add tiny_abs (#3)"
    assert gitrepo.first_adding(upstream.path, base, "no such text", "src/util.c") is None


def test_apply_series_batches_then_falls_back_per_patch(project: Path, upstream: Upstream,
                                                        tmp_path: Path) -> None:
    """The one series-on-index operation: one call when the series applies,
    offsets split back per patch; on a failure, per patch with stop / skip / three-way."""
    from patchctl.model.stack import find_stack

    patches = find_stack(project).patches()
    items = [gitrepo.SeriesItem(p.path, p.strip, len(p.files)) for p in patches]
    # A patch that cannot apply: its context is not in the upstream.
    bad = tmp_path / "bad.patch"
    bad.write_text(patches[1].text.replace(" int tiny_op_02(int x)", " int tiny_op_02(long x)"))
    broken = [items[0], gitrepo.SeriesItem(bad, 1, 1), items[2]]
    base = upstream.commits["base"]
    repo = gitrepo.git_dir(upstream.path)
    with gitrepo.temp_index(repo) as index:
        index.read_tree(base)
        calls = index.calls
        clean = index.apply_series(items)
        assert clean.ok and clean.batched and index.calls - calls == 2  # write-tree + apply
        assert [a.offsets for a in clean.applied] == [[], [], []]
        after = index.write_tree()
        for mode, tried, oks in (("stop", 2, [True, False]), ("skip", 3, [True, False, True])):
            index.read_tree(base)
            done = index.apply_series(broken, on_failure=mode)
            assert not done.batched and len(done.applied) == tried
            assert [a.ok for a in done.applied] == oks
            failed = done.failed
            assert failed is not None and failed.error is not None
            assert failed.error.file == "src/tiny.c" and failed.error.line is not None
        index.read_tree(after)
        back = index.apply_series(items[::-1], reverse=True)
        assert back.ok and back.batched and index.write_tree() == upstream.tree(base)


def test_a_tree_read_into_an_index_once_is_copied_from_then_on(upstream: Upstream) -> None:
    """Every verify ran `git read-tree` of the pin's tree on each index before git could
    apply a patch (a process, and 34 M instructions at 4,000 files, per part). The index
    git wrote for a tree is kept in the cache; a later seed copies it (no git process),
    byte for byte what read-tree writes. A damaged or cut copy is a miss: read-tree again."""
    from patchctl import fsutil

    repo = gitrepo.git_dir(upstream.path)
    tree = upstream.tree()
    with gitrepo.temp_index(repo) as fresh:
        fresh.read_tree(tree)
        expected = fresh.path.read_bytes()
    kept = fsutil.cache_dir() / "indexes" / tree

    def seeded() -> int:
        with gitrepo.temp_index(repo) as index:
            index.seed(tree)
            assert index.path.read_bytes() == expected
            return index.calls

    assert seeded() == 1 and kept.read_bytes() == expected  # read by git, then kept
    assert seeded() == 0  # copied
    data = kept.read_bytes()
    for damaged in (data[:100] + bytes([data[100] ^ 1]) + data[101:], data[:-1], b""):
        kept.write_bytes(damaged)
        assert seeded() == 1 and kept.read_bytes() == expected  # read again, kept anew


def test_tree_symlinks_lists_every_link_once_per_tree(tmp_path: Path, upstream: Upstream) -> None:
    """verify lints writes through upstream's symlinks from this set: every link in the
    tree, nested ones included; a tree is listed by git once, then read from the cache."""
    import os

    from tests.builders import commit_all

    base_tree = upstream.tree()
    os.symlink("src", upstream.path / "linked")
    (upstream.path / "docs").mkdir(exist_ok=True)
    os.symlink("../README.md", upstream.path / "docs" / "readme-link")
    tree = gitrepo.tree_of(upstream.path, commit_all(upstream.path, "two links"))
    cache = tmp_path / "cache"
    first = gitrepo.tree_symlinks(upstream.path, tree, cache_dir=cache)
    assert first == (frozenset({"linked", "docs/readme-link"}), 1)
    assert gitrepo.tree_symlinks(upstream.path, tree, cache_dir=cache) == (first[0], 0)
    assert gitrepo.tree_symlinks(upstream.path, base_tree, cache_dir=cache) == (frozenset(), 1)
    assert gitrepo.tree_symlinks(upstream.path, base_tree, cache_dir=cache) == (frozenset(), 0)
    with pytest.raises(ValueError):
        gitrepo.tree_symlinks(upstream.path, "../../etc", cache_dir=cache)


def test_spooled_git_output_equals_piped(upstream: Upstream) -> None:
    """run_git(spool=True) (git apply -v's many lines go to temp files, not pipes) gives
    the same stdout, stderr, exit status and stdin handling as the piped form."""
    from patchctl.gitrepo.core import run_git

    for args, data in ((["hash-object", "--stdin"], "some text\n"),
                       (["cat-file", "-t", "no-such-object"], None),
                       (["rev-parse", "--absolute-git-dir"], None)):
        piped = run_git(args, repo=upstream.path, input=data, check=False)
        spooled = run_git(args, repo=upstream.path, input=data, check=False, spool=True)
        assert (spooled.returncode, spooled.stdout, spooled.stderr) == \
            (piped.returncode, piped.stdout, piped.stderr)
    assert piped.stdout.strip() and run_git(["cat-file", "-t", "nope"], repo=upstream.path,
                                            check=False, spool=True).stderr


def test_verify_imports_only_the_git_modules_it_runs_and_every_name_resolves() -> None:
    """verify's start-up imported all of gitrepo (history, worktree, read, cache: ~7 ms)
    before its first git call; those load on first use now, under the same names."""
    import subprocess
    import sys

    code = ("import sys, patchctl.commands.verify, patchctl.verify.engine, patchctl.verify.render;"
            "print(sorted(m for m in sys.modules if m.startswith('patchctl.gitrepo.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["['patchctl.gitrepo.core',", "'patchctl.gitrepo.index',",
                           "'patchctl.gitrepo.missing']"]
    from patchctl.gitrepo import history, worktree

    assert all(getattr(gitrepo, name) is not None for name in gitrepo.__all__)
    assert gitrepo.commit_info is history.commit_info and gitrepo.GitWork is worktree.GitWork
    with pytest.raises(AttributeError):
        gitrepo._fast_import_path  # noqa: B018  (a module's private name is not the package's)


def test_whitespace_warnings_are_read_from_a_long_apply_output() -> None:
    """`git apply -v` names every file it checks; a clean run's thousands of lines are
    skipped in one search, and a warning among them (a file name with `:N:` in it too)
    is still read in full."""
    checked = "".join(f"Checking patch src/f{i}.c...\nApplied patch src/f{i}.c cleanly.\n"
                      for i in range(3000))
    assert gitrepo.ApplyRun(0, "", checked).whitespace() == []
    warned = checked + "/p/0001-a:1: b.patch:12: trailing whitespace.\n+int x; \n" + checked
    assert gitrepo.ApplyRun(0, "", warned).whitespace() == [
        gitrepo.WhitespaceWarning("/p/0001-a:1: b.patch", 12, "trailing whitespace", "+int x; ")]


def test_a_git_error_is_one_line(tmp_path: Path) -> None:
    """Bug: a failed `git commit -m MESSAGE` printed the multi-line message inside its
    error, so the CLI's "one line per error" was several."""
    with pytest.raises(GitError) as e:
        gitrepo.run_git(["commit", "-q", "-m", "subject\n\nbody\n"], repo=tmp_path)
    assert "\n" not in str(e.value) and "subject\\n\\nbody" in str(e.value)


def test_commits_in_a_sparse_scratch_checkout_need_no_missing_blob(tmp_path: Path,
                                                                  upstream: Upstream) -> None:
    """Bug: with a root-level blob missing upstream, every commit in the sparse work tree
    (the rebase conflict tree's and the edit tree's, patchctl's or the user's) failed:
    git checked every root entry's object while building the root tree."""
    head = upstream.head
    drop_blob(upstream, "README.md")
    work = gitrepo.scratch_checkout(upstream.path / ".git", tmp_path / "w", head,
                                    needed=["src/util.c"])
    (work / "src/util.c").write_text((work / "src/util.c").read_text() + "/* more */\n")
    git(work, "add", "src/util.c")
    commit = gitrepo.commit_index(work, "util : more\n", author="A <a@example.invalid>")
    assert gitrepo.work_head(work) == commit
    (work / "NEW.md").write_text("new at the root\n")
    git(work, "add", "--sparse", "NEW.md")
    git(work, "commit", "-q", "-m", "a file at the root")  # the user's own commit
    assert git(work, "ls-tree", "--name-only", "HEAD").split() == [
        "CMakeLists.txt", "NEW.md", "README.md", "include", "src"]


def test_a_search_of_the_rebase_work_tree_fetches_nothing(tmp_path: Path,
                                                         upstream: Upstream) -> None:
    """Bug: the moved-code search of `rebase-pin --continue` greps the work tree's repo, a
    partial clone of the upstream: git tried to fetch each blob the upstream lacks (a
    mirror without its largest files; seconds each on llama.cpp, 20 s a search instead of
    0.2) and, failing, found 22 of llama.cpp's 29 files. Its objects are the upstream's
    already: a search there must fetch nothing, and pass what it cannot read."""
    head = upstream.head
    blob = git(upstream.path, "rev-parse", f"{head}:README.md").strip()
    full = tmp_path / "full.git"
    git(tmp_path, "clone", "-q", "--bare", str(upstream.path), str(full))
    drop_blob(upstream, "README.md")
    work = gitrepo.scratch_checkout(upstream.path / ".git", tmp_path / "w", head,
                                    needed=["src/util.c"])
    git(work, "config", "remote.upstream.url", str(full))  # a fetch would now succeed
    hits = gitrepo.grep_fixed(work / ".git", head, ["tiny_abs"], whole_words=False)
    assert {h.path for h in hits} == {"src/util.c"}
    assert subprocess.run(["git", "-C", str(work), "cat-file", "-e", blob],
                          env={**os.environ, "GIT_NO_LAZY_FETCH": "1"}).returncode != 0


@pytest.mark.parametrize("commit", ["--hard", "-q", "HEAD~1", "--output=x"])
def test_reset_work_takes_only_an_object_id(tmp_path: Path, upstream: Upstream,
                                            commit: str) -> None:
    """A damaged state file's ``head`` never reaches `git reset` as an option (git 2.39's
    reset refuses --end-of-options, so the id is checked instead)."""
    head = gitrepo.work_head(upstream.path)
    with pytest.raises(InputError, match="not a commit id"):
        gitrepo.reset_work(upstream.path, commit, keep=False)
    assert gitrepo.work_head(upstream.path) == head
    assert not (upstream.path / "x").exists()
    gitrepo.reset_work(upstream.path, head, keep=True)  # a real id still works


def test_git_missing_is_one_environment_failure(tmp_path, monkeypatch) -> None:
    """Every way patchctl runs git says the same when git is not on PATH."""
    from patchctl.errors import EnvironmentFailure
    from patchctl.gitrepo.core import run_git, run_git_bytes, start_git

    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no git
    calls = [lambda: run_git(["--version"]), lambda: run_git(["--version"], spool=True),
             lambda: run_git_bytes(["--version"]), lambda: start_git(["--version"]).wait()]
    for call in calls:
        with pytest.raises(EnvironmentFailure, match="git is not installed or not on PATH"):
            call()


def test_line_search_names_the_files_of_each_line_asked_together(tmp_path: Path) -> None:
    """The searches of a rebase across the new pin's tree (where a conflicting patch's lines
    went, whether its distinctive line stands elsewhere) were one git grep per line; asked
    together they are one per patch. Each line gets exactly the files holding it, a tab
    and a line found in none included, and a line asked again is answered the same."""
    from tests.builders import commit_all, write

    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    write(repo, {"a.c": "int x = 1;\n\tint y = 2;\n", "b/c.c": "int x = 1; /* too */\n"})
    commit_all(repo, "one")
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    search = gitrepo.LineSearch(repo, tree)
    got = search.files(["int x = 1;", "\tint y = 2;", "int z = 3;"])
    assert got == {"int x = 1;": {"a.c", "b/c.c"}, "\tint y = 2;": {"a.c"}, "int z = 3;": set()}
    assert search.files(["int x = 1;"]) == {"int x = 1;": {"a.c", "b/c.c"}}
