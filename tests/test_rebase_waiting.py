"""rebase-pin: a patch that conflicts only because an earlier conflict was left out waits.

The history: ``a.c`` holds 40 lines ``int aNN = NN;``. Upstream (P1 -> P2) retunes a10
and a25. The stack on P1: 0001 rewrites a10 (a conflict of its own), 0002 rewrites
0001's line again, 0003 is elsewhere, 0004 edits a12 beside 0002's line and a25 (which
upstream changed too: a conflict of its own), 0005 edits a13 beside 0002's and 0004's
lines.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.builders import Upstream, git, system_config_off
from tests.rebase_history import make_stacked, stacked_project

A_C = "".join(f"int a{i:02d} = {i};\n" for i in range(40))
DOWN = "int a10 = 100; /* downstream */\n"
MARKED = "int a10 = 100; /* downstream, marked */\n"
NAMES = [
    "0001-a-set-a10.patch",
    "0002-a-mark-a10.patch",
    "0003-a-set-a30.patch",
    "0004-a-set-a12-and-a25.patch",
    "0005-a-set-a13.patch",
]


@pytest.fixture(scope="module")
def _built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Upstream, list[tuple[str, str]]]:
    with system_config_off():
        return make_stacked(
            tmp_path_factory.mktemp("waiting"),
            {"a.c": A_C},
            [
                ("a : retune a10", {"a.c": ("int a10 = 10;\n", "int a10 = 11;\n")}),
                ("a : retune a25", {"a.c": ("int a25 = 25;\n", "int a25 = 26;\n")}),
            ],
            [
                (("a : set a10", {"a.c": ("int a10 = 10;\n", DOWN)}), "a.c"),
                (("a : mark a10", {"a.c": (DOWN, MARKED)}), "a.c"),
                (("a : set a30", {"a.c": ("int a30 = 30;\n", "int a30 = 300;\n")}), "a.c"),
                (
                    (
                        "a : set a12 and a25",
                        {
                            "a.c": [
                                ("int a12 = 12;\n", "int a12 = 120;\n"),
                                ("int a25 = 25;\n", "int a25 = 250;\n"),
                            ]
                        },
                    ),
                    "a.c",
                ),
                (("a : set a13", {"a.c": ("int a13 = 13;\n", "int a13 = 130;\n")}), "a.c"),
            ],
        )


@pytest.fixture
def proj(tmp_path: Path, _built) -> tuple[Path, Upstream]:
    return stacked_project(tmp_path, _built)


def check(cli, project: Path, up: Upstream, *args: str) -> tuple[int, dict]:
    r = cli("-C", str(project), "rebase-pin", "P2", "--upstream", str(up.path), *args, "--json")
    assert r.out, r.err
    return r.code, json.loads(r.out)


def test_check_counts_only_the_conflicts_a_person_meets(cli, proj) -> None:
    """`rebase-pin --check` counted a patch as a conflict when it conflicted only because an
    earlier conflicting patch it stands on was left out: here 4 conflicts where a person
    resolving the stack meets 2 (0001 and 0004; 0002 and 0005 stand on their lines)."""
    project, up = proj
    code, data = check(cli, project, up, "--check")
    assert code == 1
    grades = {p["name"]: p["grade"] for p in data["patches"]}
    assert [grades[n] for n in NAMES] == ["conflict", "waiting", "exact", "conflict", "waiting"]
    waits = {p["name"]: p["waits_on"] for p in data["patches"]}
    assert waits[NAMES[1]] == [NAMES[0]]
    assert waits[NAMES[4]] == [NAMES[1], NAMES[3]]
    assert waits[NAMES[3]] == []  # its a25 hunk conflicts on its own: never waiting
    assert (data["to_resolve"], data["waiting"]) == (2, 2)
    text = cli("-C", str(project), "rebase-pin", "P2", "--upstream", str(up.path), "--check").out
    assert f"waits on {NAMES[0]}: its lines stand on that patch's" in text
    assert "to resolve: 2 conflicts; 2 patches waiting on them" in text


def _resolve(work: Path) -> None:
    text = (work / "a.c").read_text()
    lines, out, skip = text.splitlines(keepends=True), [], False
    for line in lines:  # keep the patch's side of each conflict, with upstream's other lines
        if line.startswith("<<<<<<<"):
            skip = True
        elif line.startswith("======="):
            skip = False
        elif line.startswith(">>>>>>>"):
            continue
        elif not skip:
            out.append(line)
    (work / "a.c").write_text("".join(out))
    git(work, "add", "a.c")


def test_the_count_is_the_stops_a_person_meets(cli, proj) -> None:
    """The patches --check calls waiting apply once the conflict they stand on is resolved
    keeping its lines: the rebase stops exactly `to_resolve` times (0001, then 0004)."""
    project, up = proj
    _, data = check(cli, project, up, "--check")
    stops = []
    _, result = check(cli, project, up)
    while result["status"] == "stopped":
        stops.append(result["conflict"])
        _resolve(Path(result["work"]))
        r = cli("-C", str(project), "rebase-pin", "--continue", "--json")
        result = json.loads(r.out)
    assert result["status"] == "rebased", result["message"]
    assert stops == [NAMES[0], NAMES[3]] and len(stops) == data["to_resolve"]
