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
