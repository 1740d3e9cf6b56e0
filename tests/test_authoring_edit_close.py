"""Closing the edit work tree: the verbs that rewrite the stack say when they close it, and
`edit --close` closes it on its own, with no upstream, against real git repositories.

The bugs these pin: `renumber`, `move`, `rename`, `delete`, `fold`, `split` and
`header --set` deleted an open, refreshed edit work tree at .patchctl/edit/work without a
word, so a build configured on it lost its sources unannounced; and the only way to close
an edit was `edit NAME --reset`, which opens another and so needs the upstream (offline it
failed with "cannot reach upstream" when all that was wanted was to discard).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from patchctl.model.stackwrite import snapshot
from tests.builders import git, replace_in

T1, T2 = "0001-util-add-tiny_square.patch", "0002-tiny-bump-op-02.patch"

# (what runs before the edit is opened, the patch edited, the verb that rewrites the stack)
VERBS = [
    ([], "bump", ["move", "bump", "--to", "1"]),
    ([], "bump", ["rename", "bump", "0002-x"]),
    ([], "bump", ["delete", "3"]),
    ([], "1", ["fold", "bump", "--into", "3"]),
    ([["fold", "bump", "--into", "3"]], "1", ["split", "3", "--paths", "src/*"]),
    ([], "bump", ["header", "1", "--set", "Bug=7"]),
    ([["rename", "3", "0009-declare"]], "bump", ["renumber"]),
]
IDS = [args[0] for _, _, args in VERBS]


def opened(cli, project: Path, name: str) -> tuple[str, Path]:
    """Open an edit of NAME (nothing unrefreshed in it): (its patch file, its work tree)."""
    r = cli("-C", str(project), "edit", name, "--json")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    return out["target"], Path(out["work"])


def closed_line(target: str, work: Path) -> str:
    return f"closed the edit of {target} ({work}): it held nothing unrefreshed"


@pytest.mark.parametrize(("before", "name", "args"), VERBS, ids=IDS)
def test_a_verb_that_closes_a_clean_edit_says_so(
    cli, tiny: Path, before: list[list[str]], name: str, args: list[str]
) -> None:
    """Each verb that rewrites the series deleted the open, refreshed edit work
    tree silently; it still closes it, and says on stderr which edit and where."""
    for step in before:
        assert cli("-C", str(tiny), *step).code == 0
    target, work = opened(cli, tiny, name)
    r = cli("-C", str(tiny), *args)
    assert r.code == 0, r.err
    assert r.err == closed_line(target, work) + "\n", r.err
    assert not work.exists()
    again = cli("-C", str(tiny), "header", "1", "--set", "Bug=8")  # no edit open now
    assert (again.code, again.err) == (0, "")


@pytest.mark.parametrize(("before", "name", "args"), VERBS, ids=IDS)
def test_a_verb_that_closes_a_clean_edit_says_so_in_json(
    cli, tiny: Path, before: list[list[str]], name: str, args: list[str]
) -> None:
    """The same with --json: `closed_edit` holds the sentence (stderr stays empty), and is
    empty when no edit was open."""
    for step in before:
        assert cli("-C", str(tiny), *step).code == 0
    target, work = opened(cli, tiny, name)
    r = cli("-C", str(tiny), *args, "--json")
    assert (r.code, r.err) == (0, ""), r.err
    assert json.loads(r.out)["closed_edit"] == closed_line(target, work)
    r = cli("-C", str(tiny), "header", "1", "--set", "Bug=8", "--json")
    assert json.loads(r.out)["closed_edit"] == ""


def test_a_work_tree_without_edit_state_is_removed_saying_so(cli, tiny: Path) -> None:
    """A work tree left without its state file (an edit killed while it opened) went
    with the verb without a word too; it still goes (patchctl was making it), said so."""
    _, work = opened(cli, tiny, "bump")
    (tiny / ".patchctl/edit/state.json").unlink()
    r = cli("-C", str(tiny), "move", "bump", "--to", "1")
    assert r.code == 0, r.err
    assert r.err == f"removed {work}, an edit work tree without edit state\n"
    assert not work.exists()


def test_an_unrefreshed_edit_is_refused_naming_the_changed_files(cli, tiny: Path) -> None:
    """The refusal names what is not refreshed, and points at the way to discard it
    that needs no upstream."""
    _, work = opened(cli, tiny, "bump")
    replace_in(work / "src/tiny.c", "/* patched */", "/* patched twice */")
    (work / "NOTES").write_text("to do\n")
    before = snapshot(tiny / "stack")
    r = cli("-C", str(tiny), "move", "bump", "--to", "1")
    assert r.code == 2 and r.err.count("\n") == 1, r.err
    assert (
        f"the edit of {T2} has changes not yet refreshed (2 changed files: NOTES, "
        "src/tiny.c); run `patchctl refresh` (or discard them with `patchctl edit "
        "--close --reset`) before move" in r.err
    ), r.err
    assert snapshot(tiny / "stack") == before and (work / "NOTES").exists()


def _offline(project: Path) -> None:
    """Point the pin file at an upstream that cannot be reached (nothing listens there)."""
    pin = project / "stack/upstream.toml"
    pin.write_text(
        pin.read_text().replace(
            'url = "tiny-upstream.bundle"', 'url = "http://127.0.0.1:9/llama.cpp.git"'
        )
    )


def test_edit_close_closes_a_clean_edit_without_the_upstream(cli, tiny: Path) -> None:
    """`edit --close` closes a refreshed edit with one line and exit 0, when the
    upstream cannot be reached; `edit NAME --reset`, the only way before, cannot."""
    target, work = opened(cli, tiny, "bump")
    _offline(tiny)
    control = cli("-C", str(tiny), "edit", "bump", "--reset")
    assert control.code != 0 and "cannot reach upstream" in control.err, control.err
    r = cli("-C", str(tiny), "edit", "--close")
    assert (r.code, r.out, r.err) == (0, closed_line(target, work) + "\n", "")
    assert not work.exists() and not (tiny / ".patchctl/edit").exists()
    r = cli("-C", str(tiny), "edit", "--close")
    assert (r.code, r.out, r.err) == (0, "no edit is open\n", "")


def test_edit_close_json(cli, tiny: Path) -> None:
    r = cli("-C", str(tiny), "edit", "--close", "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out) == {
        "schema": "patchctl.edit-close/1",
        "target": "",
        "message": "no edit is open",
        "discarded": "",
        "work": f"{tiny}/.patchctl/edit/work",
    }
    target, work = opened(cli, tiny, "bump")
    r = cli("-C", str(tiny), "edit", "--close", "--json")
    out = json.loads(r.out)
    assert (out["target"], out["message"]) == (target, closed_line(target, work))


def test_edit_close_refuses_unrefreshed_changes_and_reset_discards_them(cli, tiny: Path) -> None:
    """With changes not refreshed, `edit --close` refuses naming them and leaves the
    work tree; with --reset it discards them, offline too, and says what it discarded."""
    _, work = opened(cli, tiny, "bump")
    replace_in(work / "src/tiny.c", "/* patched */", "/* patched twice */")
    _offline(tiny)
    r = cli("-C", str(tiny), "edit", "--close")
    assert r.code == 2 and r.err.count("\n") == 1, r.err
    assert (
        f"the edit of {T2} has changes not yet refreshed (1 changed file: src/tiny.c)" in r.err
        and "before closing it" in r.err
    ), r.err
    assert "/* patched twice */" in (work / "src/tiny.c").read_text()
    r = cli("-C", str(tiny), "edit", "--close", "--reset")
    assert (r.code, r.err) == (0, ""), r.err
    assert r.out == f"closed {work}: discarded the edit of {T2} and its unrefreshed changes\n"
    assert not work.exists()


def test_edit_close_refuses_git_work_and_reset_names_what_it_discards(cli, tiny: Path) -> None:
    """A branch of the user's in the edit's repository is refused as the verbs refuse
    it; --reset discards it and names it."""
    _, work = opened(cli, tiny, "bump")
    git(work, "branch", "wip")
    r = cli("-C", str(tiny), "edit", "--close")
    assert r.code == 2 and "holds git work patchctl did not make (branches: wip)" in r.err
    assert git(work, "branch", "--list", "wip").strip() == "wip"
    r = cli("-C", str(tiny), "edit", "--close", "--reset", "--json")
    assert r.code == 0, r.err
    assert (
        json.loads(r.out)["discarded"] == f"the edit of {T2} and git work patchctl did "
        "not make (branches: wip)"
    )


def test_edit_close_refuses_a_new_patch_not_written_yet(cli, tiny: Path) -> None:
    r = cli("-C", str(tiny), "new", "more", "--concern", "more", "--scope", "src/*")
    assert r.code == 0, r.err
    r = cli("-C", str(tiny), "edit", "--close")
    assert r.code == 2 and "(a new patch, not written yet)" in r.err, r.err
    assert cli("-C", str(tiny), "edit", "--close", "--reset").code == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["edit"], "missing NAME"),
        (["edit", "--reset"], "missing NAME"),
        (["edit", "bump", "--close"], "--close takes no NAME"),
        (["edit", "--close", "--full"], "--close takes no NAME, --full or --upstream"),
    ],
)
def test_edit_usage_errors_are_one_line(cli, tiny: Path, args: list[str], message: str) -> None:
    r = cli("-C", str(tiny), *args)
    assert r.code == 2 and r.err.count("\n") == 1 and message in r.err, r.err


def _cut_short(project: Path, how: str) -> Path:
    """The edit work tree as an edit interrupted while `git init` made its repository
    leaves it (an interrupt ends git's group with patchctl's; the state file, written
    last, is not there): a `.git` git cannot read, and nothing beside it."""
    edit = project / ".patchctl/edit"
    shutil.rmtree(edit, ignore_errors=True)
    work = edit / "work"
    if how == "empty":  # created, nothing in it yet
        (work / ".git").mkdir(parents=True)
    else:  # the template and config written, HEAD not yet
        git(project, "init", "-q", str(work))
        (work / ".git/HEAD").unlink()
    r = subprocess.run(["git", "-C", str(work), "for-each-ref"], capture_output=True,
                       check=False)
    assert r.returncode != 0  # git cannot read it
    return work


@pytest.mark.parametrize("how", ["empty", "no-head"])
def test_an_edit_cut_short_while_git_made_its_repository_is_made_again(
        cli, tiny: Path, how: str) -> None:
    """Bug: `edit` interrupted while `git init` made the work tree's repository left one
    git cannot read, and every later `edit` refused it ("git cannot read the repository
    of the edit work tree") until `--reset`, though nothing in it could be anyone's work.
    The next `edit` makes the work tree again; `edit --close` removes it."""
    work = _cut_short(tiny, how)
    target, opened_work = opened(cli, tiny, "bump")
    assert (target, opened_work) == (T2, work)
    assert (tiny / ".patchctl/edit/state.json").is_file()
    assert git(work, "rev-parse", "--abbrev-ref", "HEAD").strip() == "patchctl"
    _cut_short(tiny, how)
    r = cli("-C", str(tiny), "edit", "--close")
    assert r.code == 0, r.err
    assert not work.exists()


def _an_object(work: Path) -> None:
    (work / ".git/objects/4b").mkdir(parents=True)
    (work / ".git/objects/4b/825dc642cb6eb9a060e54bf8d69288fbee4904").write_bytes(b"x")


def _a_ref(work: Path) -> None:
    (work / ".git/refs/heads").mkdir(parents=True, exist_ok=True)
    (work / ".git/refs/heads/wip").write_text("4b825dc642cb6eb9a060e54bf8d69288fbee4904\n")


def _a_file(work: Path) -> None:
    (work / "notes.txt").write_text("mine\n")


@pytest.mark.parametrize("add", [_an_object, _a_ref, _a_file], ids=["object", "ref", "file"])
def test_a_repository_git_cannot_read_that_holds_something_is_kept(
        cli, tiny: Path, add: Callable[[Path], None]) -> None:
    """The other side: a repository git cannot read that holds an object or a ref, or a
    work tree holding a file, may be someone's work: still refused in one line, kept."""
    work = _cut_short(tiny, "no-head")
    add(work)
    before = sorted(str(p.relative_to(work)) for p in work.rglob("*"))
    for args in (["edit", "bump"], ["edit", "--close"]):
        r = cli("-C", str(tiny), *args)
        assert r.code == 2, r.err
        assert r.err.count("\n") == 1 and "git cannot read the repository" in r.err, r.err
        assert sorted(str(p.relative_to(work)) for p in work.rglob("*")) == before
