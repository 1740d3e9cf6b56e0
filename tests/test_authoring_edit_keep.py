"""The edit work tree is a git repository the user works in: closing or replacing it must
not delete git work patchctl did not make, against a real upstream and real git.

The bug these pin: after `patchctl refresh --all` had written everything
back, `patchctl header --set` closed the "clean" edit with one rmtree of
.patchctl/edit/, and the user's branches (one holding commits found nowhere else), a
stash and the git dir of a linked worktree went with it. `edit --reset`, `edit` and
`new` replacing an old edit removed it the same way.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from patchctl.model.stackwrite import snapshot
from tests.builders import Upstream, git, imported_project, replace_in

T2 = "0002-tiny-bump-op-02.patch"
HEADER = ("header", "@1", "--set",
          "Upstream-Status=Submitted [https://github.com/ggml-org/llama.cpp/pull/1]")


@pytest.fixture
def refreshed(cli, tmp_path: Path, upstream: Upstream, patches) -> tuple[Path, Path]:
    """(project, edit work tree): `edit @2` then `refresh --all`, nothing unrefreshed."""
    project = imported_project(cli, tmp_path, upstream, patches)
    r = cli("-C", str(project), "edit", "@2", "--json")
    assert r.code == 0, r.err
    work = Path(json.loads(r.out)["work"])
    r = cli("-C", str(project), "refresh", "--all")
    assert r.code == 0, r.err
    return project, work


def refused(cli, project: Path, *args: str) -> str:
    """A verb refused: exit 2, one line, stack/ and the edit state untouched."""
    before = snapshot(project / "stack")
    state = (project / ".patchctl/edit/state.json").read_text()
    r = cli("-C", str(project), *args)
    assert r.code == 2, (r.out, r.err)
    assert r.err.count("\n") == 1 and "Traceback" not in r.err, r.err
    assert snapshot(project / "stack") == before
    assert (project / ".patchctl/edit/state.json").read_text() == state
    return r.err


def _branch(work: Path) -> None:
    git(work, "branch", "wip")
    git(work, "checkout", "-q", "-B", "series")  # HEAD itself on a branch of the user's


def _tag(work: Path) -> None:
    git(work, "tag", "before-header")


def _stash(work: Path) -> None:
    # the edit work tree is its own repository (in tmp_path): its stash is its own
    replace_in(work / "src/tiny.c", "/* patched */", "/* tried */")
    git(work, "stash", "-q")


def _empty_commit(work: Path) -> None:
    git(work, "commit", "-q", "--allow-empty", "-m", "note to self: ask about op 02")


def _rebase_stopped(work: Path) -> None:
    git(work, "rebase", "-q", "-i", "HEAD~1", env={"GIT_SEQUENCE_EDITOR": "sed -i s/^pick/edit/"})


GIT_WORK: list[tuple[Callable[[Path], None], list[str]]] = [
    (_branch, ["branches: series, wip"]),
    (_tag, ["tags: before-header"]),
    (_stash, ["stash: 1 entry"]),
    (_empty_commit, ["commits not in any patch: 1 on HEAD"]),
    (_rebase_stopped, ["a git rebase stopped half-way"]),
]


@pytest.mark.parametrize(("make", "named"), GIT_WORK,
                         ids=[make.__name__.lstrip("_") for make, _ in GIT_WORK])
def test_header_keeps_an_edit_holding_the_users_git_work(cli, refreshed: tuple[Path, Path],
                                                         make: Callable[[Path], None],
                                                         named: list[str]) -> None:
    """After `refresh --all`, `header --set` deleted the edit work tree with the
    user's branches, tags, stash, a commit that changes nothing and a stopped rebase; now
    it refuses, naming what would be lost, and changes nothing."""
    project, work = refreshed
    make(work)
    refs = git(work, "for-each-ref")
    err = refused(cli, project, *HEADER)
    assert "holds git work patchctl did not make" in err, err
    for words in named:
        assert words in err, err
    assert "`patchctl edit --close --reset`" in err, err  # needs no upstream
    assert git(work, "for-each-ref") == refs


def test_a_linked_worktree_survives_header_and_still_works(cli, refreshed: tuple[Path, Path],
                                                           tmp_path: Path) -> None:
    """A linked worktree added in the edit work tree (to build an older commit)
    lost its git dir to `header --set`; now the verb refuses naming it, and the worktree
    still works afterwards."""
    project, work = refreshed
    elsewhere = tmp_path / "elsewhere"
    git(work, "worktree", "add", "-q", "--detach", str(elsewhere), "HEAD~1")
    err = refused(cli, project, *HEADER)
    assert f"linked worktrees: {elsewhere}" in err, err
    assert git(elsewhere, "status", "--porcelain") == ""
    assert git(elsewhere, "rev-parse", "HEAD") == git(work, "rev-parse", "HEAD~1")


def test_edit_and_new_refuse_to_replace_an_edit_holding_git_work(
        cli, refreshed: tuple[Path, Path]) -> None:
    """`edit NAME` and `new NAME` replaced an old, refreshed edit with one
    rmtree, the user's branch with it; now they refuse and point at --reset."""
    project, work = refreshed
    git(work, "branch", "wip")
    for args in (("edit", "@1"), ("new", "more", "--concern", "more", "--scope", "src/*")):
        err = refused(cli, project, *args)
        assert "branches: wip" in err and "pass --reset to discard" in err, err
    assert git(work, "branch", "--list", "wip").strip() == "wip"


def test_edit_reset_discards_git_work_and_says_so(cli, refreshed: tuple[Path, Path],
                                                  tmp_path: Path) -> None:
    """`edit NAME --reset` discarded the user's branches and stash without a
    word about them; it still discards (the user asked), and names them."""
    project, work = refreshed
    git(work, "branch", "wip")
    _stash(work)
    git(work, "worktree", "add", "-q", "--detach", str(tmp_path / "elsewhere"), "HEAD")
    r = cli("-C", str(project), "edit", "@1", "--reset")
    assert r.code == 0, r.err
    assert f"discarded the edit of {T2} and git work patchctl did not make (branches: wip; " \
           f"linked worktrees: {tmp_path / 'elsewhere'}; stash: 1 entry)" in r.err, r.err
    assert git(work, "for-each-ref", "refs/heads").split()[-1] == "refs/heads/patchctl"
    assert git(work, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_a_clean_edit_is_still_closed(cli, refreshed: tuple[Path, Path]) -> None:
    """An edit with nothing unrefreshed and no git work of the
    user's is closed by `header --set` as before (saying so: it used to go without a
    word); so is one whose commits made after the refresh only commit what was refreshed
    (the files are recorded)."""
    project, work = refreshed
    replace_in(work / "src/tiny.c", "/* patched */", "/* patched twice */")
    assert cli("-C", str(project), "refresh").code == 0
    git(work, "commit", "-q", "-am", "what was refreshed")
    r = cli("-C", str(project), *HEADER)
    assert (r.code, r.err) == (0, f"closed the edit of {T2} ({work}): it held nothing "
                                  "unrefreshed\n"), r.err
    assert not (project / ".patchctl/edit").exists()


def test_a_linked_worktree_path_is_named_on_one_line(cli, refreshed: tuple[Path, Path],
                                                     tmp_path: Path) -> None:
    """The refusal names a linked worktree whose path holds an escape sequence
    and a newline escaped, on one line (`git worktree list -z`, then `untrusted`)."""
    project, work = refreshed
    odd = tmp_path / "odd\x1b[31mred\nline"
    git(work, "worktree", "add", "-q", "--detach", str(odd), "HEAD")
    err = refused(cli, project, *HEADER)
    assert f"linked worktrees: {tmp_path}/odd\\x1b[31mred\\nline" in err, err
    assert "\x1b" not in err
