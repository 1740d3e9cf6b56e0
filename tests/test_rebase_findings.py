"""rebase-pin says where its tree may not be the patch's intent though every check passes.

``absorbed``: a clean three-way merge took a hunk as already made because upstream made
the same edit (a count bumped on both sides): the rebased patch silently lost it, and the
tree held one entry more than its static_assert allowed. ``gone``: a patch that still goes
on uses a name upstream removed meanwhile (a field dropped from a struct): it applies and
cannot build. Each is named, never a plain grade, and stops the rebase for a person to
judge (a doubted move); an ordinary 3way is neither.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.builders import Upstream, git
from tests.rebase_history import make_stacked, stacked_project

ENTRIES = "".join(f"    OP_{i:02d},\n" for i in range(10))
FILLER = "".join(f"int filler{i} = {i};\n" for i in range(8))
OPS = (
    f"enum op {{\n{ENTRIES}    OP_COUNT,\n}};\n\n{FILLER}\n"
    'static_assert(OP_COUNT == 10, "OP_COUNT != 10");\n\n'
    "int ops(void) { return OP_COUNT; }\n"
)
ASSERT = (
    'static_assert(OP_COUNT == 10, "OP_COUNT != 10");',
    'static_assert(OP_COUNT == 11, "OP_COUNT != 11");',
)
# The patch's own entry at the end of the enum, and the count bumped for it.
OURS = {"ops.c": [("    OP_09,\n", "    OP_09,\n    OP_MUL,\n"), ASSERT]}
# Upstream's entry at the top, and the same bump for its own.
THEIRS_BUMP = {"ops.c": [("    OP_00,\n", "    OP_00,\n    OP_DIV,\n"), ASSERT]}
# Upstream's entry at the top and a comment reworded next to the assert: no bump.
THEIRS_PLAIN = {
    "ops.c": [
        ("    OP_00,\n", "    OP_00,\n    OP_DIV,\n"),
        ("int filler7 = 7;\n", "int filler7 = 7; /* last */\n"),
    ]
}


def _project(
    tmp_path: Path, files: dict[str, str], upstream: list, change: dict
) -> tuple[Path, Upstream]:
    built = make_stacked(tmp_path / "hist", files, upstream, [(("ops : add", change), "*.c")])
    return stacked_project(tmp_path, built)


def _rebase(cli, project: Path, up: Upstream, *args: str) -> tuple[int, dict]:
    r = cli("-C", str(project), "rebase-pin", "P2", "--upstream", str(up.path), *args, "--json")
    assert r.out, r.err
    return r.code, json.loads(r.out)


def _rebase_continue(cli, project: Path) -> tuple[int, dict]:
    r = cli("-C", str(project), "rebase-pin", "--continue", "--json")
    assert r.out, r.err
    return r.code, json.loads(r.out)


def test_a_count_upstream_bumped_too_stops_as_a_doubted_move(cli, tmp_path: Path) -> None:
    """The patch adds an enum entry and bumps the static_assert 10 -> 11; upstream adds its
    own entry and makes the very same bump. `git apply --3way` merges cleanly and takes the
    bump once: the tree has 12 entries and asserts 11, while the rebased patch applies and
    reverses at the new pin. It was passed as a plain 3way, and later carried on under a
    blanket --drop-upstream; it must be named (file, hunk, lines) in --json, the text report
    and the range-diff, counted by --check as a stop, and stop the rebase with the merged
    form applied for a person to judge; their fix (the count bumped to 12) is the patch."""
    project, up = _project(tmp_path, {"ops.c": OPS}, [("add OP_DIV", THEIRS_BUMP)], OURS)
    code, data = _rebase(cli, project, up, "--check")
    p = data["patches"][0]
    assert code == 1 and p["grade"] == "3way" and p["doubted"], p
    assert (data["to_resolve"], data["doubted"]) == (1, 1)
    assert p["absorbed"] == [
        {"file": "ops.c", "hunks": [2], "there": True, "lines": ["-" + ASSERT[0], "+" + ASSERT[1]]}
    ]
    text = cli("-C", str(project), "rebase-pin", "P2", "--upstream", str(up.path), "--check").out
    assert "upstream in part; would be content changed" in text
    assert "upstream in part: ops.c hunk #2: upstream made the same edit" in text
    assert f"         +{ASSERT[1]}" in text
    assert "to resolve: 0 conflicts and 1 doubted move" in text
    code, data = _rebase(cli, project, up, "--drop-upstream")  # consent to drop is not this
    assert code == 1 and data["status"] == "stopped", data
    assert "already upstream in part: ops.c #2" in data["message"]
    work = Path(data["work"])
    merged = (work / "ops.c").read_text()
    assert "OP_MUL" in merged and "OP_DIV" in merged and ASSERT[1] in merged
    assert git(work, "diff", "--cached", "--name-only").split() == ["ops.c"]  # staged
    (work / "ops.c").write_text(merged.replace(ASSERT[1], ASSERT[1].replace("11", "12")))
    git(work, "add", "ops.c")
    code, data = _rebase_continue(cli, project)
    assert code == 0 and data["status"] == "rebased", data["message"]
    assert data["patches"][0]["resolved"] and not data["patches"][0]["doubted"]
    assert "OP_COUNT == 12" in next((project / "stack" / "patches").glob("0001-*")).read_text()


def test_an_ordinary_three_way_merge_is_not_flagged(cli, tmp_path: Path) -> None:
    """The same patch where upstream only added its entry and reworded a line near the
    assert: a plain 3way that keeps every change of the patch. Nothing is named and the
    rebase needs no --drop-upstream."""
    project, up = _project(tmp_path, {"ops.c": OPS}, [("add OP_DIV", THEIRS_PLAIN)], OURS)
    code, data = _rebase(cli, project, up)
    p = data["patches"][0]
    assert code == 0 and data["status"] == "rebased" and p["grade"] == "3way", data
    assert p["absorbed"] == [] and p["gone"] == []
    assert "[3way" not in data["range_diff"]


HELPER = "int base_path(void) { return 7; }\n"
USER = "".join(f"int user{i}(void) {{ return base_path() + {i}; }}\n" for i in range(3))
TAIL = "".join(f"int tail{i} = {i};\n" for i in range(12))
MAIN = f"{HELPER}\n{USER}\n{TAIL}"
CALLS = {"main.c": [("int tail11 = 11;\n", "int tail11 = 11;\nint ours = base_path();\n")]}
RENAMED = {
    "main.c": [
        (HELPER, HELPER.replace("base_path", "root_path")),
        (USER, USER.replace("base_path", "root_path")),
    ]
}
MOVED_OUT = {"main.c": [(HELPER, '#include "paths.h"\n'), (USER, "")], "paths.h": HELPER + USER}


def test_a_name_upstream_removed_stops_and_continue_takes_it_as_it_stands(
    cli, tmp_path: Path
) -> None:
    """The patch calls base_path(); upstream renamed it root_path() everywhere. The patch
    still applies (exact), and the tree cannot build: it was passed without a word. The
    name is said in --json and the text report, and the rebase stops there with the patch
    applied; a person who judges it right runs --continue and it goes on as it was, with
    the name in the range-diff."""
    project, up = _project(tmp_path, {"main.c": MAIN}, [("rename", RENAMED)], CALLS)
    text = cli("-C", str(project), "rebase-pin", "P2", "--upstream", str(up.path), "--check").out
    assert "uses names gone?; would be unchanged" in text
    assert "names gone upstream: main.c: its added lines use base_path" in text
    code, data = _rebase(cli, project, up)
    p = data["patches"][0]
    assert code == 1 and data["status"] == "stopped" and p["grade"] == "exact", data
    assert p["gone"] == [{"file": "main.c", "names": ["base_path"]}]
    assert "uses names gone upstream: main.c (base_path)" in data["message"]
    assert "int ours = base_path();" in (Path(data["work"]) / "main.c").read_text()
    code, data = _rebase_continue(cli, project)
    assert code == 0 and data["status"] == "rebased", data["message"]
    assert data["patches"][0]["change"] != "content-changed"  # its lines are as they were
    assert (
        "+int ours = base_path();"
        in next((project / "stack" / "patches").glob("0001-*")).read_text()
    )


def test_a_name_moved_to_another_file_is_not_gone(cli, tmp_path: Path) -> None:
    """Upstream moved base_path() and its callers to a header: gone from main.c, still in
    the tree, so the patch's call is not flagged (a name is gone only from the whole tree)."""
    project, up = _project(tmp_path, {"main.c": MAIN}, [("move", MOVED_OUT)], CALLS)
    code, data = _rebase(cli, project, up, "--check")
    assert code == 0 and data["patches"][0]["gone"] == [], data
