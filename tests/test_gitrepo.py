"""gitrepo functions that other tests reach only through rare situations."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from patchctl import gitrepo
from patchctl.errors import GitError
from tests.builders import Upstream, git


def _drop_blob(upstream: Upstream, path: str) -> None:
    """Make ``upstream`` lack one blob, like a mirror that leaves out its largest files."""
    blob = git(upstream.path, "rev-parse", f"HEAD:{path}").strip()
    loose = upstream.path / ".git/objects" / blob[:2] / blob[2:]
    assert loose.is_file(), "the test upstream keeps its objects loose"
    loose.unlink()
    assert subprocess.run(["git", "-C", str(upstream.path), "cat-file", "-e", blob]).returncode != 0


def test_scratch_checkout_goes_sparse_when_a_blob_is_missing(tmp_path: Path,
                                                             upstream: Upstream) -> None:
    """Regression: a conflict worktree on a mirror without its big blobs failed with exit 3."""
    head = upstream.head
    _drop_blob(upstream, "README.md")
    with pytest.raises(GitError):
        gitrepo.scratch_checkout(upstream.path / ".git", tmp_path / "full", head)
    work = gitrepo.scratch_checkout(upstream.path / ".git", tmp_path / "w", head,
                                    needed=["src/util.c", "include/tiny.h"])
    assert (work / "src/util.c").is_file() and (work / "include/tiny.h").is_file()
    assert not (work / "README.md").exists()
    assert git(work, "status", "--porcelain") == ""
    assert gitrepo.index_tree(work) == upstream.tree(head)  # the index is still whole


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
