"""rebase-pin follows a file upstream renamed, as git's own merges do, and a patch's Scope:
follows code that moved-code detection proves moved, with no confirmation.

Upstream (P1 -> P2) renames ``x.c`` to ``src/x.c`` (adding a line at its top, so the rename
is git's similarity rename, not an exact one); some histories also move a block of ``a.c``
into ``b.c``.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.builders import Upstream, git, make_project
from tests.rebase_history import make_stacked

X = "".join(f"int x{i:02d} = {i};\n" for i in range(12)) + "}\n\nreturn -1;\n}\n\nint tail;\n"
RENAMED = "/* now under src/ */\n" + X
HEAD = "".join(f"int a{i:02d} = {i};\n" for i in range(12))
BLOCK = "".join(f"int moved{i} = {i};\n" for i in range(10))


def _project(tmp_path: Path, upstream, stack) -> tuple[Path, Upstream]:
    up, patches = make_stacked(tmp_path / "hist", {"x.c": X, "a.c": HEAD + BLOCK}, upstream, stack)
    return make_project(tmp_path / "project", up, patches, pin=up.commits["P1"]), up


def _run(cli, project: Path, *args: str) -> tuple[int, dict]:
    r = cli("-C", str(project), "rebase-pin", *args, "--json")
    assert r.out, r.err
    return r.code, json.loads(r.out)


RENAME = ("move x.c under src", {"x.c": None, "src/x.c": RENAMED})


def test_a_patch_follows_its_renamed_file(cli, tmp_path: Path) -> None:
    """A patch whose file upstream renamed stopped as "file gone", where `git am -3` follows
    the rename; one hunk of it ("return -1;" amid braces) has too few lines that say
    something for the exact search of the tree to place it. It is re-targeted at the renamed
    file, graded `moved` naming the renaming commit, its Scope: follows by itself, and the
    stack holds at the new pin."""
    project, up = _project(
        tmp_path,
        [RENAME],
        [
            (
                (
                    "x : set x03 and fail hard",
                    {
                        "x.c": [
                            ("int x03 = 3;\n", "int x03 = 30;\n"),
                            ("return -1;\n", "abort();\n"),
                        ]
                    },
                ),
                "x.c",
            )
        ],
    )
    code, data = _run(cli, project, "P2", "--upstream", str(up.path), "--check")
    p = data["patches"][0]
    assert code == 0 and data["to_resolve"] == 0 and p["grade"] == "moved", p
    assert [(m["file"], m["hunk"], m["to"], m["commit"]) for m in p["moved"]] == [
        ("x.c", 1, "src/x.c", up.commits["u1"]),
        ("x.c", 2, "src/x.c", up.commits["u1"]),
    ]
    assert p["followed"] == ["src/x.c"] and p["widened"] == []
    code, data = _run(cli, project, "P2", "--upstream", str(up.path))
    assert code == 0 and data["status"] == "rebased", data["message"]
    text = next((project / "stack/patches").glob("0001-*.patch")).read_text()
    assert "+++ b/src/x.c" in text and "\nScope: x.c src/x.c\n" in text
    assert cli("-C", str(project), "verify", "--upstream", str(up.path)).code == 0


def test_check_counts_the_stops_a_person_meets(cli, tmp_path: Path) -> None:
    """--check counted a patch whose lines moved into a file outside its Scope: as a conflict
    to resolve; but once a person passed --widen-scope at an earlier stop, --continue moved it
    with no stop, so --check said 2 where the person met 1. A proven move takes its file into
    Scope: by itself, so --check and the rebase grade it alike whatever flags a stop took."""
    moved = BLOCK.replace("int moved1 = 1;\n", "int moved1 = 1; /* from a.c */\n")
    project, up = _project(
        tmp_path,
        [("split the moved block into b.c", {"a.c": HEAD, "b.c": moved})],
        [
            (("a : set moved2", {"a.c": ("int moved2 = 2;\n", "int moved2 = 20;\n")}), "a.c"),
            (("a : set moved7", {"a.c": ("int moved7 = 7;\n", "int moved7 = 70;\n")}), "a.c"),
        ],
    )
    _, check = _run(cli, project, "P2", "--upstream", str(up.path), "--check")
    assert [p["grade"] for p in check["patches"]] == ["conflict", "moved"]
    _, data = _run(cli, project, "P2", "--upstream", str(up.path))
    stops = 0
    while data["status"] == "stopped":
        stops += 1
        work = Path(data["work"])
        git(work, "checkout", "HEAD", "--", "a.c")
        text = (work / "b.c").read_text()
        (work / "b.c").write_text(text.replace("int moved2 = 2;\n", "int moved2 = 20;\n"))
        git(work, "add", "a.c", "b.c")
        _, data = _run(cli, project, "--continue", "--widen-scope")
    assert data["status"] == "rebased", data.get("message")
    assert stops == check["to_resolve"] == 1


def test_a_resolution_in_the_renamed_file_needs_no_flag(cli, tmp_path: Path) -> None:
    """A patch whose file upstream renamed and whose lines upstream changed stops (a real
    conflict, classed by the renamed file's lines, not "file gone"); its resolution, in the
    renamed file, was refused as outside Scope: until --widen-scope. git's rename detection
    proves the file: Scope: follows it by itself."""
    renamed = RENAMED.replace("int x03 = 3;\n", "int x03 = 4;\n")
    project, up = _project(
        tmp_path,
        [("move x.c under src", {"x.c": None, "src/x.c": renamed})],
        [(("x : set x03", {"x.c": ("int x03 = 3;\n", "int x03 = 30;\n")}), "x.c")],
    )
    code, data = _run(cli, project, "P2", "--upstream", str(up.path))
    assert data["status"] == "stopped" and data["patches"][0]["class"] == "same lines changed"
    work = Path(data["work"])
    git(work, "reset", "-q", "--hard", "HEAD")
    (work / "src/x.c").write_text(renamed.replace("int x03 = 4;\n", "int x03 = 30;\n"))
    git(work, "add", "src/x.c")
    code, data = _run(cli, project, "--continue")
    assert code == 0 and data["status"] == "rebased", data.get("message")
    p = data["patches"][0]
    assert p["followed"] == ["src/x.c"] and p["widened"] == []
    text = next((project / "stack/patches").glob("0001-*.patch")).read_text()
    assert "\nScope: x.c src/x.c\n" in text
    assert cli("-C", str(project), "verify", "--upstream", str(up.path)).code == 0


def test_bisect_names_the_commit_that_moved_a_patch(cli, tmp_path: Path) -> None:
    """--bisect named the breaking commit of 3way and conflicting patches only; a patch a
    rule re-placed (moved, union, anchored) no longer applies as it is either, and its new
    text is that commit's doing: it is bisected too, here naming the rename."""
    project, up = _project(
        tmp_path,
        [("touch a.c", {"a.c": ("int a00 = 0;\n", "int a00 = 1;\n")}), RENAME],
        [(("x : set x03", {"x.c": ("int x03 = 3;\n", "int x03 = 30;\n")}), "x.c")],
    )
    _, data = _run(cli, project, "P2", "--upstream", str(up.path), "--check", "--bisect")
    p = data["patches"][0]
    assert p["grade"] == "moved" and p["bisect"]["commit"]["id"] == up.commits["u2"], p
