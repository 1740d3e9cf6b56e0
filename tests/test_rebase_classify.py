"""rebase-pin names the class of each conflict (rebase/classify.py): in ``--json``
(``class``), in ``--check``'s text (``why:``) and in a stop's message, beside what each rule
tried, so a stop says why in one step."""

from __future__ import annotations

import json
from pathlib import Path

from tests.builders import Upstream, make_project
from tests.rebase_history import make_stacked

VALUES = "".join(f"int value_number_{i} = {i};\n" for i in range(10))
ENUMS = "enum op {\n    OP_ADD,\n    OP_SUB,\n    OP_COUNT,\n};\n"


def _project(tmp_path: Path, files: dict[str, str], upstream, change) -> tuple[Path, Upstream]:
    up, patches = make_stacked(
        tmp_path / "hist", files, upstream, [(("a : one", change), "a.c b.c")]
    )
    return make_project(tmp_path / "project", up, patches, pin=up.commits["P1"]), up


def _check(cli, project: Path, up: Upstream, *args: str) -> tuple[dict, str]:
    """The one patch's JSON result, and --check's text, at P2."""
    base = ("-C", str(project), "rebase-pin", "P2", "--upstream", str(up.path), "--check", *args)
    r = cli(*base, "--json")
    assert r.code == 1, r.err
    return json.loads(r.out)["patches"][0], cli(*base).out


def test_a_conflict_on_lines_upstream_changed_says_so(cli, tmp_path: Path) -> None:
    """A stop used to list only what each rule tried, never the kind of conflict: upstream
    changed the very line the patch changes, and the JSON, the text and the stop's message
    now all say `same lines changed`."""
    project, up = _project(
        tmp_path,
        {"a.c": VALUES},
        [("retune", {"a.c": ("value_number_3 = 3;", "value_number_3 = 30;")})],
        {"a.c": ("value_number_3 = 3;", "value_number_3 = 33;")},
    )
    p, text = _check(cli, project, up)
    assert p["grade"] == "conflict" and p["class"] == "same lines changed", p
    assert "why: same lines changed: upstream changed the lines it removes" in text
    r = cli("-C", str(project), "rebase-pin", "P2", "--upstream", str(up.path), "--json")
    data = json.loads(r.out)
    assert r.code == 1 and data["status"] == "stopped"
    assert data["patches"][0]["class"] == "same lines changed"
    assert (
        "conflicts at the new pin (same lines changed: upstream changed the lines it removes, "
        "in a.c; tried moved: " in data["message"]
    )
    # --continue reads the stop's class back from the state file
    state = json.loads((project / ".patchctl" / "rebase" / "state.json").read_text())
    assert state["conflict"]["class_"] == "same lines changed"


def test_a_conflict_in_a_file_upstream_deleted_is_file_gone(cli, tmp_path: Path) -> None:
    """The patch changes a file upstream removed (its lines nowhere else): class
    `file gone`, where the report used to give no class at all."""
    project, up = _project(
        tmp_path,
        {"a.c": VALUES, "b.c": "int other_file_here = 1;\n"},
        [("drop a.c", {"a.c": None})],
        {"a.c": ("value_number_3 = 3;", "value_number_3 = 33;")},
    )
    p, text = _check(cli, project, up)
    assert p["class"] == "file gone", p
    assert "why: file gone: a file it changes is gone" in text


def test_a_conflict_whose_lines_moved_is_moved_code(cli, tmp_path: Path) -> None:
    """Upstream moved the patch's lines to another file; with --strict nothing follows
    them, and the conflict's class says `moved code`."""
    project, up = _project(
        tmp_path,
        {"a.c": VALUES, "b.c": "int other_file_here = 1;\n"},
        [("move", {"a.c": "int left_behind = 0;\n", "b.c": "int other_file_here = 1;\n" + VALUES})],
        {"a.c": ("value_number_3 = 3;", "value_number_3 = 33;")},
    )
    p, text = _check(cli, project, up, "--strict")
    assert p["class"] == "moved code", p
    assert "why: moved code: its lines are in another file now" in text


def test_a_conflict_of_context_only_is_context_drift(cli, tmp_path: Path) -> None:
    """Upstream changed the line beside the patch's; with --strict nothing re-anchors it,
    and the class says `context drift` (its removed line still stands)."""
    project, up = _project(
        tmp_path,
        {"a.c": VALUES},
        [("retune 4", {"a.c": ("value_number_4 = 4;", "value_number_4 = 44;")})],
        {"a.c": ("value_number_3 = 3;", "value_number_3 = 33;")},
    )
    p, text = _check(cli, project, up, "--strict")
    assert p["class"] == "context drift", p
    assert "why: context drift: its lines stand, the lines around them changed" in text


def test_two_insertions_at_one_place_are_told_apart(cli, tmp_path: Path) -> None:
    """Upstream and the patch each added an enum entry after the same one; with --strict
    it stays a conflict, of class `insertions at one place`."""
    project, up = _project(
        tmp_path,
        {"a.c": ENUMS},
        [("add OP_MUL", {"a.c": ("    OP_SUB,\n", "    OP_SUB,\n    OP_MUL,\n")})],
        {"a.c": ("    OP_SUB,\n", "    OP_SUB,\n    OP_DIV,\n")},
    )
    p, text = _check(cli, project, up, "--strict")
    assert p["class"] == "insertions at one place", p
    assert "why: insertions at one place: it and upstream inserted lines at one place" in text
