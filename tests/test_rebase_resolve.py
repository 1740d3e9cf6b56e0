"""rebase-pin resolves what a rule proves beyond a line merge, each rule its own grade.

``union``: the patch and upstream both inserted lines at one place (an enum entry each);
``anchored``: upstream changed the line next to the one the patch changes, so the patch's
context no longer matches, while the line it removes stands once in the file. Both are
conflicts for ``git apply --3way``; ``--strict`` keeps them so.
"""

from __future__ import annotations

import json
from pathlib import Path

from patchctl.model.patchfile import Hunk
from tests.builders import Upstream, git, make_project
from tests.rebase_history import make_stacked

ENUM = "enum op {\n    OP_ADD,\n    OP_SUB,\n    OP_COUNT,\n};\n"
ENUMS = f"#include <stdio.h>\n\n{ENUM}\nint ops(void) {{ return OP_COUNT; }}\n"
TWICE = f"#ifdef FAST\n{ENUM}\n#else\n{ENUM}\n#endif\n"
ADD_MUL = ("    OP_SUB,\n", "    OP_SUB,\n    OP_MUL,\n")
ADD_DIV = ("    OP_SUB,\n", "    OP_SUB,\n    OP_DIV,\n")
VALUES = "".join(f"int v{i} = {i};\n" for i in range(10))
FAR = "".join(f"int w{i} = {i};\n" for i in range(10))


def _rebase(cli, project: Path, up: Upstream, *args: str) -> tuple[int, dict]:
    r = cli("-C", str(project), "rebase-pin", "P2", "--upstream", str(up.path), *args, "--json")
    assert r.out, r.err
    return r.code, json.loads(r.out)


def _applied(cli, project: Path, tmp_path: Path, rel: str) -> str:
    """``rel`` as the rebased stack leaves it on its pin."""
    out = tmp_path / "applied"
    r = cli("-C", str(project), "apply", "--into", str(out))
    assert r.code == 0, r.err
    return (out / rel).read_text()


def _one(tmp_path: Path, files: dict[str, str], upstream, change) -> tuple[Path, Upstream]:
    up, patches = make_stacked(tmp_path / "hist", files, upstream, [(("a : one", change), "a.c")])
    return make_project(tmp_path / "project", up, patches, pin=up.commits["P1"]), up


# -- union --------------------------------------------------------------------------------


def test_insertions_at_one_place_keep_both(cli, tmp_path: Path) -> None:
    """Upstream and the patch each added an enum entry after the same one: a line merge
    conflicts. It is graded `union` (--strict keeps it a conflict), the range-diff marks
    it, and the rebased file holds upstream's entry, then the patch's."""
    project, up = _one(
        tmp_path, {"a.c": ENUMS}, [("add OP_MUL", {"a.c": ADD_MUL})], {"a.c": ADD_DIV}
    )
    code, data = _rebase(cli, project, up, "--check", "--strict")
    p = data["patches"][0]
    assert code == 1 and p["grade"] == "conflict" and p["tried"] == [] and p["placed"] == []
    code, data = _rebase(cli, project, up, "--check")
    p = data["patches"][0]
    assert code == 0 and p["grade"] == "union", p
    assert p["placed"] == [
        {"file": "a.c", "hunk": 1, "line": 3, "note": "after the 1 line(s) upstream inserted there"}
    ]
    text = cli("-C", str(project), "rebase-pin", "P2", "--upstream", str(up.path), "--check")
    assert "union: a.c hunk #1 -> line 3, after the 1 line(s) upstream inserted there" in text.out
    code, data = _rebase(cli, project, up)
    assert code == 0 and data["status"] == "rebased", data["message"]
    assert "[union]" in data["range_diff"].splitlines()[0]
    assert _applied(cli, project, tmp_path, "a.c") == ENUMS.replace(
        "    OP_SUB,\n", "    OP_SUB,\n    OP_MUL,\n    OP_DIV,\n"
    )
    assert cli("-C", str(project), "verify", "--upstream", str(up.path)).code == 0


def test_insertions_at_two_like_places_are_refused(cli, tmp_path: Path) -> None:
    """The same enum twice (two #ifdef branches), upstream adding an entry to both: the
    patch's place is not proven, so it stays a conflict, and a stop says what was tried."""
    project, up = _one(
        tmp_path,
        {"a.c": TWICE},
        [
            (
                "add OP_MUL",
                {"a.c": [ADD_MUL, (ENUM + "\n#endif", ENUM.replace(*ADD_MUL) + "\n#endif")]},
            )
        ],
        {"a.c": ADD_DIV},
    )
    assert git(up.path, "show", "P2:a.c").count("OP_MUL") == 2
    code, data = _rebase(cli, project, up)
    p = data["patches"][0]
    assert code == 1 and data["status"] == "stopped" and p["grade"] == "conflict"
    assert p["tried"] == [
        "moved: its lost lines are nowhere else whole",
        "union: a.c hunk #1: ambiguous: lines inserted between its context at 3 places "
        "(lines 5-5, 5-13, 13-13)",
        "anchored: a.c hunk #1: it removes no line that says something, to anchor it on",
        "decl: a.c: both add or remove items at one place in enum op in #ifdef FAST "
        "(enumerator OP_MUL, enumerator OP_DIV): their order is not proven",
    ]
    assert (
        "; tried moved: its lost lines are nowhere else whole; union: a.c hunk #1: "
        "ambiguous" in data["message"]
    )


def test_union_refuses_a_duplicate_entry() -> None:
    """Upstream inserted, among others, the very entry the patch inserts: keeping both
    would add it twice, so the rule refuses rather than merging."""
    from patchctl.rebase.resolve import union

    image = [
        ln + "\n"
        for ln in ENUM.replace("OP_SUB,\n", "OP_SUB,\n    OP_MUL,\n    OP_DIV,\n").splitlines()
    ]
    hunk = Hunk(
        1,
        5,
        1,
        6,
        1,
        (" enum op {", "     OP_ADD,", "     OP_SUB,", "+    OP_DIV,", "     OP_COUNT,", " };"),
    )
    assert union(image, hunk) == "both insert 'OP_DIV,' there: a duplicate, not two insertions"
    assert (
        union([ln + "\n" for ln in ENUM.splitlines()], hunk)
        == "its context does not stand with lines upstream inserted between it"
    )


# -- anchored -----------------------------------------------------------------------------


def test_context_drift_is_anchored_on_the_removed_line(cli, tmp_path: Path) -> None:
    """Upstream changed the line just above the one the patch changes: a line merge
    conflicts (adjacent changes). The removed line stands once, so the hunk is re-anchored
    there, graded `anchored` (not with --strict), and the rebased file has both changes."""
    project, up = _one(
        tmp_path,
        {"a.c": VALUES},
        [("retune v3", {"a.c": ("int v3 = 3;\n", "int v3 = 33;\n")})],
        {"a.c": ("int v4 = 4;\n", "int v4 = 44;\n")},
    )
    code, data = _rebase(cli, project, up, "--check", "--strict")
    assert code == 1 and data["patches"][0]["grade"] == "conflict"
    code, data = _rebase(cli, project, up)
    p = data["patches"][0]
    assert code == 0 and data["status"] == "rebased" and p["grade"] == "anchored", p
    assert p["placed"] == [
        {"file": "a.c", "hunk": 1, "line": 2, "note": "its removed lines found once, at line 5"}
    ]
    assert "[anchored]" in data["range_diff"].splitlines()[0]
    assert _applied(cli, project, tmp_path, "a.c") == VALUES.replace("= 3;", "= 33;").replace(
        "= 4;", "= 44;"
    )


def test_a_removed_line_that_stands_twice_is_not_anchored(cli, tmp_path: Path) -> None:
    """Upstream also added a second copy of the line the patch changes: either could be
    its place, so it stays a conflict naming both."""
    project, up = _one(
        tmp_path,
        {"a.c": VALUES + FAR},
        [
            (
                "retune v3, copy v4",
                {
                    "a.c": [
                        ("int v3 = 3;\n", "int v3 = 33;\n"),
                        ("int w5 = 5;\n", "int w5 = 5;\nint v4 = 4;\n"),
                    ]
                },
            )
        ],
        {"a.c": ("int v4 = 4;\n", "int v4 = 44;\n")},
    )
    code, data = _rebase(cli, project, up, "--check")
    p = data["patches"][0]
    assert code == 1 and p["grade"] == "conflict"
    assert p["tried"][1:] == [
        "union: a.c hunk #1: it removes lines, not only inserts",
        "anchored: a.c hunk #1: ambiguous: its removed lines are at 2 places (lines 5, 17)",
        "decl: a.c: declaration `int v4 = 4;` stands twice: which is which is not proven",
    ]
    text = cli("-C", str(project), "rebase-pin", "P2", "--upstream", str(up.path), "--check")
    assert (
        "tried: moved: its lost lines are nowhere else whole; union: a.c hunk #1: it "
        "removes lines, not only inserts; anchored: a.c hunk #1: ambiguous" in text.out
    )


def test_anchored_takes_only_an_exact_core() -> None:
    """The rule re-anchors on the hunk's removed lines only where they stand whole; lines
    upstream changed are a conflict of content, which it says."""
    from patchctl.rebase.resolve import anchored

    image = [ln + "\n" for ln in VALUES.replace("= 3;", "= 33;").splitlines()]
    hunk = Hunk(2, 3, 2, 3, 1, (" int v1 = 1;", "-int v2 = 2;", "+int v2 = 22;", " int v3 = 3;"))
    at, new, note = anchored(image, hunk)  # type: ignore[misc]
    assert (at, note) == (0, "its removed lines found once, at line 3")
    assert new.lines == (
        " int v0 = 0;",
        " int v1 = 1;",
        "-int v2 = 2;",
        "+int v2 = 22;",
        " int v3 = 33;",
        " int v4 = 4;",
        " int v5 = 5;",
    )
    gone = [ln for ln in image if ln != "int v2 = 2;\n"]
    assert (
        anchored(gone, hunk)
        == "its removed lines are not in the file as they were (upstream changed them)"
    )


# -- --strict across a stop ---------------------------------------------------------------


def test_strict_holds_through_continue(cli, tmp_path: Path) -> None:
    """A rebase started with --strict stops at a real conflict; after it is resolved,
    --continue grades the rest strictly too (the union-able patch after it stays a
    conflict), not with the rules the first run turned off."""
    up, patches = make_stacked(
        tmp_path / "hist",
        {"a.c": ENUMS, "b.c": VALUES},
        [("add OP_MUL, retune v2", {"a.c": ADD_MUL, "b.c": ("int v2 = 2;\n", "int v2 = 3;\n")})],
        [
            (("b : set v2", {"b.c": ("int v2 = 2;\n", "int v2 = 20;\n")}), "b.c"),
            (("a : add OP_DIV", {"a.c": ADD_DIV}), "a.c"),
        ],
    )
    project = make_project(tmp_path / "project", up, patches, pin=up.commits["P1"])
    _, data = _rebase(cli, project, up, "--strict")
    assert data["status"] == "stopped" and [p["grade"] for p in data["patches"]] == [
        "conflict",
        "conflict",
    ]
    work = Path(data["work"])
    git(work, "checkout", "HEAD", "--", "b.c")
    (work / "b.c").write_text(VALUES.replace("= 2;", "= 20;"))
    git(work, "add", "b.c")
    r = cli("-C", str(project), "rebase-pin", "--continue", "--json")
    data = json.loads(r.out)
    assert r.code == 1 and data["status"] == "stopped", data["message"]
    assert [p["grade"] for p in data["patches"]] == ["conflict", "conflict"]
    assert data["conflict"] == data["patches"][1]["name"]
