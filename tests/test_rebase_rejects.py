"""rebase-pin's .rej files: a stop where not even a three-way merge puts the patch on.

The patch's diff carries no ``index`` lines (as quilt and hand-made patches often do), so
``git apply --3way`` has no preimage blob to merge with and the stop falls back to
``git apply --reject``: the hunk that applies goes on, the other lands in ``a.c.rej``.
Upstream (P1 -> P2) rewrote the line the patch's second hunk changes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.builders import Upstream, git, system_config_off
from tests.rebase_history import make_stacked, stacked_project, stopped_at

LINES = "".join(f"int v{i:02d} = {i};\n" for i in range(20))
NAME = "0001-a-set-v02-and-v15.patch"


@pytest.fixture(scope="module")
def _built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Upstream, list[tuple[str, str]]]:
    with system_config_off():
        up, patches = make_stacked(
            tmp_path_factory.mktemp("rejects"),
            {"a.c": LINES},
            [("retype v15", {"a.c": ("int v15 = 15;\n", "long v15 = 15;\n")})],
            [
                (
                    (
                        "a : set v02 and v15",
                        {
                            "a.c": [
                                ("int v02 = 2;\n", "int v02 = 20;\n"),
                                ("int v15 = 15;\n", "int v15 = 150;\n"),
                            ]
                        },
                    ),
                    "a.c",
                )
            ],
        )
    # No blob ids: a three-way merge has nothing to merge from.
    return up, [(n, re.sub(r"(?m)^index [0-9a-f]+\.\.[0-9a-f]+.*\n", "", t)) for n, t in patches]


@pytest.fixture
def proj(tmp_path: Path, _built) -> tuple[Path, Upstream]:
    return stacked_project(tmp_path, _built)


def _stop(cli, project: Path, up: Upstream) -> Path:
    work = stopped_at(cli, project, up, NAME)
    assert (work / "a.c.rej").is_file() and "+int v15 = 150;" in (work / "a.c.rej").read_text()
    return work


def _resolve(work: Path) -> None:
    """The person's resolution: the hunk from a.c.rej put on by hand, a.c staged."""
    text = (work / "a.c").read_text()
    assert "int v02 = 20;\n" in text  # the hunk that applied
    (work / "a.c").write_text(text.replace("long v15 = 15;\n", "long v15 = 150;\n"))
    git(work, "add", "a.c")


def test_continue_removes_the_rej_files_the_stop_left(cli, proj) -> None:
    """A stop that fell back to `git apply --reject` left a.c.rej in the work tree, and
    --continue refused it as a change that is not staged until a person deleted the file
    by hand, though patchctl had written it: an untouched .rej is removed, and the
    resolution goes on."""
    project, up = proj
    work = _stop(cli, project, up)
    _resolve(work)
    r = cli("-C", str(project), "rebase-pin", "--continue", "--json")
    data = json.loads(r.out) if r.out else {}
    assert (r.code, data.get("status")) == (0, "rebased"), r.err
    assert not (work / "a.c.rej").exists()
    assert "long v15 = 150;" in (project / "stack/patches" / NAME).read_text()
    assert cli("-C", str(project), "verify", "--upstream", str(up.path)).code == 0


def test_a_rej_file_the_person_changed_is_kept_and_named(cli, proj) -> None:
    """Removing the stop's .rej files must never take what a person made: a .rej they
    edited is theirs, so --continue refuses it, naming it, and leaves it in place."""
    project, up = proj
    work = _stop(cli, project, up)
    _resolve(work)
    rej = work / "a.c.rej"
    rej.write_text(rej.read_text() + "# done by hand\n")
    (work / "b.c.rej").write_text("mine\n")  # a .rej the stop never wrote
    r = cli("-C", str(project), "rebase-pin", "--continue")
    assert r.code == 2 and "not staged" in r.err and "a.c.rej" in r.err, r.err
    assert rej.read_text().endswith("# done by hand\n")
    assert (work / "b.c.rej").read_text() == "mine\n"
    r = cli("-C", str(project), "rebase-pin", "--abort")  # forgets the work tree whole
    assert r.code == 0 and not (project / ".patchctl/rebase").exists()


def test_the_stop_names_the_rej_files_to_read(cli, proj) -> None:
    """The stop's text said only "resolve each file": the .rej files holding the hunks that
    did not go on are named, as what to read."""
    project, up = proj
    r = cli("-C", str(project), "rebase-pin", "P2", "--upstream", str(up.path))
    assert r.code == 1
    assert "less a.c.rej   # the hunks that did not go on" in r.out, r.out
    assert "--continue removes them" in r.out
    assert cli("-C", str(project), "rebase-pin", "--abort").code == 0
    r = cli("-C", str(project), "rebase-pin", "P2", "--upstream", str(up.path), "--json")
    data = json.loads(r.out)
    assert data["rejects"] == ["a.c.rej"] and "are in a.c.rej" in data["message"], data
