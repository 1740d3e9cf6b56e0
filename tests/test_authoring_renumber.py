"""`patchctl renumber`, and the hint `move` and `refresh --all` give when the file numbers
no longer follow the series.

The bug these pin: after `move` (or `refresh --all`) put a patch first the
series read `0003-..., 0001-..., 0002-...`, and the only way back was `rename` one file
at a time through temporary names (a name the next file still held was refused).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from patchctl.model.patchtext import renumbered, unnumbered
from patchctl.model.stackwrite import snapshot
from tests.builders import git, stop_a_rebase
from tests.test_authoring_rearrange import (
    assert_kills_leave_old_or_new,
    refused,
    series,
    verifies,
)

T1, T2, T3 = ("0001-util-add-tiny_square.patch", "0002-tiny-bump-op-02.patch",
              "0003-tiny-declare-square.patch")
HINT = "numbers out of series order: run `patchctl renumber`"


def contents(project: Path) -> list[bytes]:
    """Each patch file's bytes, in series order."""
    return [(project / "stack/patches" / n).read_bytes() for n in series(project)]


def moved_last_first(cli, project: Path) -> None:
    r = cli("-C", str(project), "move", T3, "--to", "1")
    assert r.code == 0, r.err
    assert series(project) == [T3, T1, T2]


def test_renumber_after_moving_the_last_patch_first(cli, tiny: Path) -> None:
    """After `move 3 --to 1` the series read 0003, 0001, 0002 and nothing
    renumbered it; `renumber` renames all three in one transaction, bytes kept, and the
    stack verifies with a current lock."""
    moved_last_first(cli, tiny)
    before = contents(tiny)
    r = cli("-C", str(tiny), "renumber")
    assert r.code == 0, r.err
    new = ["0001-tiny-declare-square.patch", "0002-util-add-tiny_square.patch",
           "0003-tiny-bump-op-02.patch"]
    lines = r.out.splitlines()
    assert lines[:3] == [f"{T3} -> {new[0]}", f"{T1} -> {new[1]}", f"{T2} -> {new[2]}"]
    assert lines[3].startswith("renumbered 3 patches; lock ") and len(lines) == 4
    assert series(tiny) == new and contents(tiny) == before
    assert sorted(p.name for p in (tiny / "stack/patches").iterdir()) == sorted(new)
    verifies(cli, tiny)
    assert cli("-C", str(tiny), "series").code == 0


def test_renumber_json(cli, tiny: Path) -> None:
    """`renumber --json` is a `patchctl.renumber/1` document in the rename style,
    with each [old, new] pair in series order."""
    moved_last_first(cli, tiny)
    r = cli("-C", str(tiny), "renumber", "--json")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["schema"] == "patchctl.renumber/1" and out["op"] == "renumber"
    assert out["renamed"] == [[T3, "0001-tiny-declare-square.patch"],
                              [T1, "0002-util-add-tiny_square.patch"],
                              [T2, "0003-tiny-bump-op-02.patch"]]
    assert out["series"] == series(tiny) and out["unnumbered"] == []
    assert out["removed"] == sorted([T1, T2, T3])
    assert out["written"] == sorted(new for _, new in out["renamed"])


def test_names_that_collide_midway_are_swapped(cli, tiny: Path) -> None:
    """0002-x moved before 0001-x: each new name is the other's old one, which
    `rename` refuses one at a time ("already exists"); renumber swaps them in one go."""
    assert cli("-C", str(tiny), "rename", "1", "0001-x").code == 0
    assert cli("-C", str(tiny), "rename", "2", "0002-x").code == 0
    assert cli("-C", str(tiny), "move", "0002-x", "--to", "1").code == 0
    first, second = contents(tiny)[:2]
    assert "already exists" in refused(cli, tiny, "rename", "0002-x", "0001-x")
    r = cli("-C", str(tiny), "renumber")
    assert r.code == 0, r.err
    assert r.out.splitlines()[:2] == ["0002-x.patch -> 0001-x.patch",
                                      "0001-x.patch -> 0002-x.patch"]
    assert series(tiny) == ["0001-x.patch", "0002-x.patch", T3]
    assert contents(tiny)[:2] == [first, second]
    verifies(cli, tiny)


def test_strip_levels_and_series_comments_stay(cli, tiny: Path) -> None:
    """A `-p0` entry and its comment move with the renamed file."""
    patch = tiny / "stack/patches" / T2
    text = patch.read_text().replace("diff --git a/src/tiny.c b/src/tiny.c",
                                     "diff --git src/tiny.c src/tiny.c")
    patch.write_text(text.replace("\n--- a/", "\n--- ").replace("\n+++ b/", "\n+++ "))
    listing = tiny / "stack/series"
    listing.write_text(listing.read_text().replace(T2, f"{T2} -p0  # no prefixes"))
    assert cli("-C", str(tiny), "lock").code == 0
    assert cli("-C", str(tiny), "move", T2, "--to", "1").code == 0
    assert cli("-C", str(tiny), "renumber").code == 0
    assert "0001-tiny-bump-op-02.patch -p0  # no prefixes\n" in listing.read_text()
    verifies(cli, tiny)


def test_a_name_without_a_number_is_kept(cli, tiny: Path) -> None:
    """A file without a leading NNNN- number keeps its name, and the report
    says so; the numbered ones around it take their positions."""
    assert cli("-C", str(tiny), "rename", "1", "notes-first").code == 0
    assert cli("-C", str(tiny), "move", T3, "--to", "1").code == 0
    before = contents(tiny)
    r = cli("-C", str(tiny), "renumber")
    assert r.code == 0, r.err
    assert "notes-first.patch: kept (no NNNN- number)" in r.out
    assert series(tiny) == ["0001-tiny-declare-square.patch", "notes-first.patch",
                            "0003-tiny-bump-op-02.patch"]
    assert contents(tiny) == before
    verifies(cli, tiny)
    out = json.loads(cli("-C", str(tiny), "renumber", "--json").out)
    assert out["unnumbered"] == ["notes-first.patch"] and out["renamed"] == []


def test_already_in_order_changes_nothing(cli, tiny: Path) -> None:
    """Nothing to renumber: exit 0, "already numbered in series order", stack/
    byte-identical (the lock too)."""
    before = snapshot(tiny / "stack")
    r = cli("-C", str(tiny), "renumber")
    assert r.code == 0 and r.out.startswith("already numbered in series order; lock "), r.out
    assert snapshot(tiny / "stack") == before


def test_refused_while_an_edit_has_unrefreshed_changes(cli, tiny: Path) -> None:
    """Renumber is a stack transaction like move: refused (nothing written)
    while the open edit holds changes not refreshed; a clean edit is closed."""
    moved_last_first(cli, tiny)
    r = cli("-C", str(tiny), "edit", "2", "--json")
    assert r.code == 0, r.err
    work = Path(json.loads(r.out)["work"])
    (work / "README.md").write_text("changed in the edit\n")
    assert "not yet refreshed" in refused(cli, tiny, "renumber")
    git(work, "checkout", "-q", "--", "README.md")
    assert cli("-C", str(tiny), "renumber").code == 0
    assert not work.exists()
    assert series(tiny)[0] == "0001-tiny-declare-square.patch"


def test_refused_while_a_rebase_is_stopped(cli, tiny: Path) -> None:
    """Refused while a `rebase-pin` is stopped, as the other verbs are."""
    stop_a_rebase(tiny)
    assert "rebase-pin" in refused(cli, tiny, "renumber")


def test_refused_when_a_new_name_is_an_unlisted_file(cli, tiny: Path) -> None:
    """A new name held by a file the series does not list is refused, naming
    it; nothing is written (all or nothing)."""
    moved_last_first(cli, tiny)
    (tiny / "stack/patches/0002-util-add-tiny_square.patch").write_text("stray\n")
    err = refused(cli, tiny, "renumber")
    assert "0002-util-add-tiny_square.patch already exists; move it out of patches/" in err


def test_kill_during_renumber_leaves_old_or_new(cli, tmp_path: Path, tiny: Path) -> None:
    """Killed anywhere, stack/ is the old stack or the renumbered one."""
    moved_last_first(cli, tiny)
    shutil.copytree(tiny, tmp_path / "orig")
    assert assert_kills_leave_old_or_new(cli, tmp_path, tiny, "renumber") >= 2


def test_move_ends_with_the_hint_when_numbers_are_out_of_order(cli, tiny: Path) -> None:
    """`move` said nothing about the numbers it left out of order; its text
    output now ends with the hint, and not once the order is restored (or with --json)."""
    r = cli("-C", str(tiny), "move", T3, "--to", "1")
    assert r.code == 0 and r.out.splitlines()[-1] == HINT, r.out
    r = cli("-C", str(tiny), "move", T3, "--to", "3")
    assert r.code == 0 and HINT not in r.out
    r = cli("-C", str(tiny), "move", T1, "--to", "2", "--json")
    assert r.code == 0 and json.loads(r.out)["schema"] == "patchctl.move/1"


def test_the_plan() -> None:
    """The new names: position zero-padded to 4 digits or to the widest number
    already used; names without a number, or in a subdirectory, left out."""
    assert renumbered(["0003-a.patch", "0001-b.patch", "0002-c.patch"]) == {
        "0003-a.patch": "0001-a.patch", "0001-b.patch": "0002-b.patch",
        "0002-c.patch": "0003-c.patch"}
    assert renumbered(["0001-a.patch", "x.patch", "2-c.patch"]) == {"2-c.patch": "0003-c.patch"}
    assert renumbered(["00002-a.patch", "1-b.patch"]) == {
        "00002-a.patch": "00001-a.patch", "1-b.patch": "00002-b.patch"}
    assert renumbered(["sub/0002-a.patch", "0001-b.patch"]) == {"0001-b.patch": "0002-b.patch"}
    assert renumbered(["0001-a.patch", "b.patch", "0003-c.patch"]) == {}
    assert unnumbered(["sub/0002-a.patch", "0001-b.patch", "b.patch"]) == [
        "sub/0002-a.patch", "b.patch"]
