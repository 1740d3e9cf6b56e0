"""rebase-pin follows code upstream moved: a hunk whose lines left its file is re-targeted.

Upstream (P1 -> P2) moves a block of ``a.c`` into a new ``b.c`` as it is; the stack's
patch changes a line of that block. Without following the move that is a conflict.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.builders import Upstream, git, make_project
from tests.rebase_history import make_stacked

HEAD = "".join(f"int a{i:02d} = {i};\n" for i in range(12))
BLOCK = "".join(f"int moved{i} = {i};\n" for i in range(10))
NAME = "0001-a-set-moved5.patch"


def _project(tmp_path: Path, scope: str, *, copy_too: bool = False) -> tuple[Path, Upstream]:
    moves = {"a.c": HEAD, "b.c": BLOCK}
    if copy_too:
        moves["c.c"] = BLOCK
    up, patches = make_stacked(
        tmp_path / "hist",
        {"a.c": HEAD + BLOCK},
        [("split the moved block into b.c", moves)],
        [(("a : set moved5", {"a.c": ("int moved5 = 5;\n", "int moved5 = 50;\n")}), scope)],
    )
    return make_project(tmp_path / "project", up, patches, pin=up.commits["P1"]), up


def _rebase(cli, project: Path, up: Upstream, *args: str) -> tuple[int, dict]:
    r = cli("-C", str(project), "rebase-pin", "P2", "--upstream", str(up.path), *args, "--json")
    assert r.out, r.err
    return r.code, json.loads(r.out)


def test_a_hunk_follows_its_lines_into_a_new_file(cli, tmp_path: Path) -> None:
    """A patch whose lines upstream moved, unchanged, into another file was a conflict; it
    is re-targeted there, graded `moved` with the commit that moved them, and the rebased
    stack holds at the new pin."""
    project, up = _project(tmp_path, "*.c")
    code, data = _rebase(cli, project, up, "--check")
    p = data["patches"][0]
    assert code == 0 and p["grade"] == "moved", p
    assert p["moved"] == [
        {
            "file": "a.c",
            "hunk": 1,
            "to": "b.c",
            "line": 3,
            "commit": up.commits["u1"],
            "subject": "split the moved block into b.c (#2)",
        }
    ]
    text = cli("-C", str(project), "rebase-pin", "P2", "--upstream", str(up.path), "--check")
    assert f"moved: a.c hunk #1 -> b.c:3, by {up.commits['u1'][:12]}" in text.out
    code, data = _rebase(cli, project, up)
    assert code == 0 and data["status"] == "rebased", data["message"]
    patch = (project / "stack/patches" / NAME).read_text()
    assert "+++ b/b.c" in patch and "a/a.c" not in patch and "+int moved5 = 50;" in patch
    assert cli("-C", str(project), "verify", "--upstream", str(up.path)).code == 0


def test_a_move_outside_scope_takes_its_file_into_scope(cli, tmp_path: Path) -> None:
    """A hunk followed into a file outside the patch's Scope: stayed a conflict until
    --widen-scope, so --check counted a stop that a flag at an earlier stop took away; the
    move is proven (its lines whole at one place, applies and reverses), so Scope: follows
    the code by itself, said in the report (`followed`), with the exact path."""
    project, up = _project(tmp_path, "a.c")
    code, data = _rebase(cli, project, up, "--check")
    p = data["patches"][0]
    assert code == 0 and p["grade"] == "moved" and p["followed"] == ["b.c"]
    text = cli("-C", str(project), "rebase-pin", "P2", "--upstream", str(up.path), "--check")
    assert "Scope: followed the code to b.c" in text.out
    code, data = _rebase(cli, project, up)
    p = data["patches"][0]
    assert code == 0 and data["status"] == "rebased" and p["grade"] == "moved"
    assert p["followed"] == ["b.c"] and p["widened"] == []
    assert "\nScope: a.c b.c\n" in (project / "stack/patches" / NAME).read_text()
    assert cli("-C", str(project), "verify", "--upstream", str(up.path)).code == 0


def test_an_ambiguous_move_is_refused(cli, tmp_path: Path) -> None:
    """Lines that went to two places prove neither: the patch stays a conflict and the
    report names both places, never picking one."""
    project, up = _project(tmp_path, "*.c", copy_too=True)
    code, data = _rebase(cli, project, up, "--check")
    p = data["patches"][0]
    assert code == 1 and p["grade"] == "conflict" and p["moved"] == []
    assert p["moved_note"] == "a.c hunk #1: ambiguous: its lines are at b.c:3, c.c:3"


def test_a_hunk_still_in_place_is_not_moved(cli, tmp_path: Path) -> None:
    """A conflict on lines upstream changed in place is no move: it stays a conflict."""
    up, patches = make_stacked(
        tmp_path / "hist",
        {"a.c": HEAD + BLOCK},
        [("retune moved5", {"a.c": ("int moved5 = 5;\n", "int moved5 = 6;\n")})],
        [(("a : set moved5", {"a.c": ("int moved5 = 5;\n", "int moved5 = 50;\n")}), "*.c")],
    )
    project = make_project(tmp_path / "project", up, patches, pin=up.commits["P1"])
    _, data = _rebase(cli, project, up, "--check")
    p = data["patches"][0]
    assert p["grade"] == "conflict" and p["moved"] == [] and p["moved_note"] is None
    assert git(up.path, "rev-parse", "P2").strip() == up.commits["P2"]


def test_continue_follows_a_move_after_a_stop(cli, tmp_path: Path) -> None:
    """After a stop, --continue grades the rest in the conflict work tree (a partial clone):
    a moved patch there is followed as on the first run, not left a conflict."""
    up, patches = make_stacked(
        tmp_path / "hist",
        {"a.c": HEAD + BLOCK},
        [
            ("retune a03", {"a.c": ("int a03 = 3;\n", "int a03 = 4;\n")}),
            ("split the moved block into b.c", {"a.c": HEAD.replace("= 3;", "= 4;"), "b.c": BLOCK}),
        ],
        [
            (("a : set a03", {"a.c": ("int a03 = 3;\n", "int a03 = 30;\n")}), "a.c"),
            (("a : set moved5", {"a.c": ("int moved5 = 5;\n", "int moved5 = 50;\n")}), "*.c"),
        ],
    )
    project = make_project(tmp_path / "project", up, patches, pin=up.commits["P1"])
    _, data = _rebase(cli, project, up)
    assert data["status"] == "stopped" and [p["grade"] for p in data["patches"]] == [
        "conflict",
        "moved",
    ]
    work = Path(data["work"])
    git(work, "checkout", "HEAD", "--", "a.c")
    (work / "a.c").write_text((work / "a.c").read_text().replace("= 4;", "= 30;", 1))
    git(work, "add", "a.c")
    r = cli("-C", str(project), "rebase-pin", "--continue", "--json")
    data = json.loads(r.out)
    assert r.code == 0 and data["status"] == "rebased", (r.err, data.get("message"))
    second = data["patches"][1]
    assert second["grade"] == "moved" and second["moved"][0]["to"] == "b.c"
    assert second["moved"][0]["commit"] == up.commits["u2"]
    assert cli("-C", str(project), "verify", "--upstream", str(up.path)).code == 0
