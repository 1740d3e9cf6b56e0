"""fold, split and diff: on the example stack and on a synthetic 50-patch stack."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.builders import git
from tests.test_authoring_rearrange import (
    T1,
    T2,
    T3,
    assert_kills_leave_old_or_new,
    refused,
    series,
    verifies,
)


def applied_tree(cli, project: Path, tmp_path: Path, name: str) -> str:
    r = cli("-C", str(project), "apply", "--into", str(tmp_path / name), "--json")
    assert r.code == 0, r.err
    return json.loads(r.out)["stamp"]["tree"]


# -- fold -------------------------------------------------------------------------------


def test_fold_on_the_example(cli, tiny: Path, tmp_path: Path) -> None:
    tree = applied_tree(cli, tiny, tmp_path, "before")
    r = cli("-C", str(tiny), "fold", "bump", "--into", "3", "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["removed"] == [T2]
    assert series(tiny) == [T1, T3]
    text = (tiny / "stack/patches" / T3).read_text()
    assert "Subject: [PATCH] tiny : declare tiny_square" in text  # OTHER's header
    assert "\nConcern: square\n" in text and "\nScope: include/** src/*.c\n" in text
    assert "a/src/tiny.c" in text and "a/include/tiny.h" in text
    assert not (tiny / "stack/patches" / T2).exists()
    verifies(cli, tiny)
    assert applied_tree(cli, tiny, tmp_path, "after") == tree


def test_fold_of_non_adjacent_patches_is_refused(cli, tiny: Path, big: Path) -> None:
    err = refused(cli, tiny, "fold", "1", "--into", "3")
    assert "are not adjacent" in err and "patchctl move" in err
    assert "are not adjacent" in refused(cli, big, "fold", "0010", "--into", "0030")
    assert "into itself" in refused(cli, tiny, "fold", "1", "--into", T1)


def test_fold_on_50_patches(cli, big: Path, tmp_path: Path) -> None:
    tree = applied_tree(cli, big, tmp_path, "before")
    assert cli("-C", str(big), "fold", "0011", "--into", "0010").code == 0
    names = series(big)
    assert len(names) == 49 and "0011-docs-page-0010.patch" not in names
    text = (big / "stack/patches/0010-docs-page-0009.patch").read_text()
    assert "Scope: docs/page0009.md docs/page0010.md" in text
    verifies(cli, big)
    assert applied_tree(cli, big, tmp_path, "after") == tree


# -- split ------------------------------------------------------------------------------


def test_split_on_the_example(cli, tiny: Path, tmp_path: Path) -> None:
    tree = applied_tree(cli, tiny, tmp_path, "before")
    assert cli("-C", str(tiny), "fold", "bump", "--into", "3").code == 0
    r = cli("-C", str(tiny), "split", "3", "--paths", "src/*", "--name", "0004-bump-again",
            "--subject", "tiny : bump op 02 again", "--concern", "bump", "--json")
    assert r.code == 0, r.err
    assert series(tiny) == [T1, T3, "0004-bump-again.patch"]
    kept = (tiny / "stack/patches" / T3).read_text()
    made = (tiny / "stack/patches/0004-bump-again.patch").read_text()
    assert "src/tiny.c" not in kept.split("\n---\n", 1)[1] and "include/tiny.h" in kept
    assert "include/tiny.h" not in made and "+    int y = x * 4 + 1; /* patched */" in made
    assert "Subject: [PATCH] tiny : bump op 02 again" in made
    assert "\nConcern: bump\n" in made and "\nScope: src/*\n" in made
    verifies(cli, tiny)
    assert applied_tree(cli, tiny, tmp_path, "after") == tree


def test_split_whose_remainder_is_empty_is_refused(cli, tiny: Path, big: Path) -> None:
    err = refused(cli, tiny, "split", "bump", "--paths", "src/*")
    assert "the remainder would be empty" in err
    assert "match no file" in refused(cli, tiny, "split", "bump", "--paths", "docs/*")
    assert "remainder would be empty" in refused(cli, tiny, "split", "bump", "--paths",
                                                 "docs/*, src/*")
    assert "remainder would be empty" in refused(cli, big, "split", "0007", "--paths", "docs/*")


@pytest.mark.parametrize("option", [
    ["--concern", "b\nScope: **"], ["--subject", "b\nScope: **"],
    ["--subject", "b\n\nConcern: x\nScope: **"], ["--concern", "b\rScope: **"],
    ["--subject", "b\x1b[2J"], ["--concern", ""]],
    ids=["concern", "subject", "subject-trailers", "concern-cr", "subject-escape",
         "concern-empty"])
def test_split_options_cannot_add_headers_or_trailers(cli, tiny: Path,
                                                      option: list[str]) -> None:
    """Split wrote --concern and --subject verbatim: `--concern $'b\nScope:
    **'` gave the new patch a second Scope of `**` (verify OK). Every value is checked
    as `header --set` checks one, before anything is written."""
    assert cli("-C", str(tiny), "fold", "bump", "--into", "3").code == 0
    err = refused(cli, tiny, "split", "3", "--paths", "src/*", *option)
    assert option[0] in err


def test_split_paths_invalid_glob_is_one_line(cli, tiny: Path) -> None:
    """`split --paths 'src/[]'` (and a reversed range) ended in a re.error
    traceback; it is refused with one line naming --paths, exit 2, nothing written."""
    assert cli("-C", str(tiny), "fold", "bump", "--into", "3").code == 0
    err = refused(cli, tiny, "split", "3", "--paths", "src/[]")
    assert "--paths: glob `src/[]`: the `[` at character 5 is not closed" in err
    err = refused(cli, tiny, "split", "3", "--paths", "src/*", "--paths", "src/[z-a].c")
    assert "--paths: glob `src/[z-a].c`: the range `z-a` is reversed" in err


def test_split_paths_negated_set_negates(cli, tiny: Path) -> None:
    """`[!i]` was read as the set {!, i}, so `--paths '[!i]*/*'` carved
    include/tiny.h out, the opposite of fnmatch; it now carves everything but include/."""
    assert cli("-C", str(tiny), "fold", "bump", "--into", "3").code == 0
    r = cli("-C", str(tiny), "split", "3", "--paths", "[!i]*/*", "--name", "0004-src")
    assert r.code == 0, r.err
    made = (tiny / "stack/patches/0004-src.patch").read_text()
    kept = (tiny / "stack/patches" / T3).read_text()
    assert "a/src/tiny.c" in made and "include/tiny.h" not in made
    assert "a/include/tiny.h" in kept and "a/src/tiny.c" not in kept
    verifies(cli, tiny)


def test_split_on_50_patches(cli, big: Path, tmp_path: Path) -> None:
    tree = applied_tree(cli, big, tmp_path, "before")
    assert cli("-C", str(big), "fold", "0021", "--into", "0020").code == 0
    assert cli("-C", str(big), "split", "0020", "--paths", "docs/page0020.md").code == 0
    names = series(big)
    assert len(names) == 50 and names[19] == "0020-docs-page-0019.patch"
    assert names[20] == "0051-docs-page-19-docs-page0020.md.patch"
    verifies(cli, big)
    assert applied_tree(cli, big, tmp_path, "after") == tree


# -- diff -------------------------------------------------------------------------------


def test_diff_of_a_patch_at_the_pin(cli, tiny: Path, big: Path) -> None:
    r = cli("-C", str(tiny), "diff", "bump")
    assert r.code == 0 and r.out.startswith("diff --git a/src/tiny.c b/src/tiny.c\n")
    hunks = r.out[r.out.index("\n--- a/"):]
    assert hunks in (tiny / "stack/patches" / T2).read_text()
    assert cli("-C", str(tiny), "diff", "--stat", "2").out.startswith(" src/tiny.c | 2 +-\n")
    r = cli("-C", str(big), "diff", "0050", "--json")
    diff = json.loads(r.out)["diff"]
    assert "-Text 0, patched.\n+Text 0, patched twice.\n" in diff


def test_diff_without_a_name_needs_an_open_edit(cli, tiny: Path) -> None:
    r = cli("-C", str(tiny), "diff")
    assert r.code == 2 and "no edit is open" in r.err
    r = cli("-C", str(tiny), "edit", "1", "--json")
    work = Path(json.loads(r.out)["work"])
    assert cli("-C", str(tiny), "diff").out == ""
    (work / "src/util.c").write_text((work / "src/util.c").read_text() + "/* more */\n")
    r = cli("-C", str(tiny), "diff")
    assert r.code == 0 and r.out.startswith("diff --git a/src/util.c") and "+/* more */" in r.out
    git(work, "checkout", "-q", "--", "src/util.c")


# -- kills ------------------------------------------------------------------------------


def test_kill_during_fold(cli, tmp_path: Path, tiny: Path) -> None:
    shutil.copytree(tiny, tmp_path / "orig")
    assert assert_kills_leave_old_or_new(cli, tmp_path, tiny, "fold", "2", "--into", "3") >= 2


def test_kill_during_split(cli, tmp_path: Path, tiny: Path) -> None:
    assert cli("-C", str(tiny), "fold", "2", "--into", "3").code == 0
    shutil.copytree(tiny, tmp_path / "orig")
    # 0003-... is now second: `3` (its file's number) names it, `2` no longer does
    assert assert_kills_leave_old_or_new(cli, tmp_path, tiny, "split", "3", "--paths",
                                         "src/*") >= 2
