"""rebase-pin --continue --widen-scope: a resolution that follows code into a new file.

Upstream (P1 -> P2) moves a block of ``a.c`` into a new ``b.c`` (touching one line of it
on the way); the stack's 0001 (``Scope: a.c``) changes a line of that block, so it
conflicts, and its resolution is in ``b.c``; 0002 changes ``a.c`` elsewhere.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.builders import Upstream, git, system_config_off
from tests.rebase_history import make_stacked, stacked_project, stopped_at

HEAD = "".join(f"int a{i:02d} = {i};\n" for i in range(12))
BLOCK = "".join(f"int moved{i} = {i};\n" for i in range(10))
NAMES = ["0001-a-set-moved5.patch", "0002-a-set-a02.patch"]


@pytest.fixture(scope="module")
def _built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Upstream, list[tuple[str, str]]]:
    moved = BLOCK.replace("int moved4 = 4;\n", "int moved4 = 4; /* from a.c */\n")
    with system_config_off():
        return make_stacked(
            tmp_path_factory.mktemp("widen"),
            {"a.c": HEAD + BLOCK},
            [("split the moved block into b.c", {"a.c": HEAD, "b.c": moved})],
            [
                (("a : set moved5", {"a.c": ("int moved5 = 5;\n", "int moved5 = 50;\n")}), "a.c"),
                (("a : set a02", {"a.c": ("int a02 = 2;\n", "int a02 = 20;\n")}), "a.c"),
            ],
        )


@pytest.fixture
def proj(tmp_path: Path, _built) -> tuple[Path, Upstream]:
    return stacked_project(tmp_path, _built)


def _stop(cli, project: Path, up: Upstream) -> Path:
    """Rebase to P2, stop at 0001, resolve it in b.c (where its line went)."""
    work = stopped_at(cli, project, up, NAMES[0])
    git(work, "checkout", "HEAD", "--", "a.c")  # upstream's a.c: the block is gone
    text = (work / "b.c").read_text()
    (work / "b.c").write_text(text.replace("int moved5 = 5;\n", "int moved5 = 50;\n"))
    git(work, "add", "a.c", "b.c")
    return work


def test_continue_names_the_files_outside_scope(cli, proj) -> None:
    """A resolution that reached a file outside the patch's Scope: was refused with a lint
    message, and the only way on was to widen Scope: in .patchctl/rebase/header by hand
    and retry; --continue must name the files and the one flag that takes them."""
    project, up = proj
    _stop(cli, project, up)
    header = project / ".patchctl/rebase/header"
    before = header.read_text()
    r = cli("-C", str(project), "rebase-pin", "--continue")
    assert r.code == 2 and r.out == ""
    assert "reaches files outside its Scope (a.c): b.c;" in r.err
    assert "`patchctl rebase-pin --continue --widen-scope`" in r.err
    assert header.read_text() == before  # nothing was widened without asking


def test_widen_scope_takes_the_files_in_one_step(cli, proj) -> None:
    """`--continue --widen-scope` adds the exact paths to Scope: and finishes the rebase,
    with the stack re-checked at the new pin (it applies, reverses, stays in Scope)."""
    project, up = proj
    _stop(cli, project, up)
    r = cli("-C", str(project), "rebase-pin", "--continue", "--widen-scope", "--json")
    data = json.loads(r.out)
    assert r.code == 0 and data["status"] == "rebased", (r.err, data.get("message"))
    first = {p["name"]: p for p in data["patches"]}[NAMES[0]]
    assert first["widened"] == ["b.c"] and first["resolved"] is True
    text = (project / "stack/patches" / NAMES[0]).read_text()
    assert "\nScope: a.c b.c\n" in text and "+int moved5 = 50;" in text
    v = cli("-C", str(project), "verify", "--upstream", str(up.path))
    assert v.code == 0, v.out + v.err


def test_widen_scope_only_with_continue(cli, proj) -> None:
    """--widen-scope takes what a resolution adds; --abort takes nothing, and a first run's
    moved patches follow their code by themselves, so anywhere but --continue it is a usage
    error."""
    project, up = proj
    _stop(cli, project, up)
    r = cli("-C", str(project), "rebase-pin", "--abort", "--widen-scope")
    assert r.code == 2 and "--widen-scope goes with --continue only" in r.err
    assert (project / ".patchctl/rebase/state.json").exists()
