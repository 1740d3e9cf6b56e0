"""The README's quickstart, run as written on a temp downstream of a temp upstream.

tests/quickstart.py reads the block and builds the world; here the tests' own patchctl
runs every command but the install (tests/test_packaging.py runs that one too, from the
built wheel, and the rest with the patchctl it installed).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests import quickstart


def series_of(project: Path) -> list[str]:
    return [
        line
        for line in (project / "stack/series").read_text().splitlines()
        if line and not line.startswith("#")
    ]


def check_outcome(world: quickstart.World, out: str) -> None:
    """What the quickstart's commands leave behind, and what they print."""
    project = world.project
    assert series_of(project) == world.patches, out
    pin_file = (project / "stack/upstream.toml").read_text()
    assert world.pin in pin_file and quickstart.UPSTREAM_URL in pin_file
    assert "reverse: the reversed stack restores the pin's tree exactly\nresult: OK" in out
    assert "stack: 2 distinct upstream commits in 90 days" in out, out  # burden
    assert "offsets: src/util.c hunk #1 +2" in out and "check only: nothing written" in out
    workflows = sorted(p.name for p in (project / ".github/workflows").iterdir())
    assert workflows == ["patchctl-canary.yml", "patchctl-stack.yml"]
    committed = subprocess.run(
        ["git", "-C", str(project), "ls-files"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert {"stack/stack.lock", ".github/workflows/patchctl-stack.yml"} <= set(committed)
    # Each `# or:` import (a quilt series, a fork's commits) gives the same series in its
    # own copy of the project.
    imported = [alt for alt in project.parent.glob("alt-*") if (alt / "stack/series").exists()]
    assert len(imported) == 2, out
    for alt in imported:
        assert series_of(alt) == world.patches, alt


def test_the_readme_quickstart_runs_as_written(tmp_path: Path) -> None:
    """The quickstart a maintainer follows from their own patches folder to CI: every command
    of the README's block, in order, with their real upstream URL rewritten by git to a local
    one; the install step is left to the packaging test."""
    steps = quickstart.steps()
    commands = [s.command for s in steps]
    assert any(c.startswith("pipx install ") for c in commands)
    for verb in ("init", "import", "verify", "burden", "rebase-pin", "ci github"):
        assert any(
            c.startswith(f"patchctl {verb} ") or c == f"patchctl {verb}" for c in commands
        ), verb
    world = quickstart.make_world(tmp_path)
    dist = world.project.parent / "patchctl" / "dist"
    dist.mkdir(parents=True)
    (dist / quickstart.wheel_name()).write_text("a stand-in: only copied, never installed\n")
    r = quickstart.run(
        world, quickstart.script(steps, install=False), path_dirs=[Path(sys.executable).parent]
    )
    assert r.returncode == 0, r.stdout
    check_outcome(world, r.stdout)
