""".pre-commit-hooks.yaml: the hooks a project with a stack adds, run by a real pre-commit.

`pre-commit try-repo` installs a snapshot of this checkout (its working tree, uncommitted
changes included: tests/quickstart.py) the way a user's `repo:` entry would: into an
environment of its own, with pip. No network: pip takes patchctl's dependencies and its
build requirements from a wheelhouse packed from this environment (tests/wheelhouse.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests import quickstart, wheelhouse
from tests.builders import git, make_project, make_upstream, standard_patches

REPO = Path(__file__).resolve().parents[1]
BUILD_REQUIRES = ["setuptools", "click", "click-man"]


def test_the_hooks_file_names_the_hooks() -> None:
    hooks = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"patchctl-lock", "patchctl-verify"}
    for hook in hooks.values():
        assert hook["language"] == "python" and hook["pass_filenames"] is False
        assert hook["entry"].startswith("patchctl ")


@pytest.mark.slow
def test_try_repo_refuses_a_broken_patch_and_passes_a_good_one(tmp_path: Path) -> None:
    """The hooks as a user gets them: pre-commit installs patchctl from this repository
    and runs them in a project; a patch edited so that it no longer applies at the pin
    fails `patchctl-verify` (and `patchctl-lock`, whose lock no longer matches), the
    stack as it was passes both."""
    repo = quickstart.snapshot(tmp_path / "patchctl")
    house = tmp_path / "wheelhouse"
    wheelhouse.wheelhouse(house, [*runtime_requirements(), *BUILD_REQUIRES])
    upstream = make_upstream(tmp_path / "upstream")
    project = make_project(
        tmp_path / "project", upstream, standard_patches(upstream, tmp_path / "scratch")
    )
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "a stack")
    env = {
        **os.environ,
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(house),
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-cache"),
        "PATCHCTL_UPSTREAM": str(upstream.path),
    }
    env.pop("PIP_CONSTRAINT", None)

    def try_repo() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(Path(sys.executable).parent / "pre-commit"), "try-repo", str(repo), "--all-files"],
            cwd=project,
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            check=False,
            timeout=600,
        )

    good = try_repo()
    assert good.returncode == 0, good.stdout
    assert "patchctl verify" in good.stdout and "Passed" in good.stdout
    patch = project / "stack/patches/0002-tiny-bump-op-02.patch"
    patch.write_text(patch.read_text().replace("-    int y = x * 4;", "-    int y = x * 5;"))
    git(project, "add", "-A")
    bad = try_repo()
    assert bad.returncode == 1, bad.stdout
    assert "patchctl verify" in bad.stdout and "Failed" in bad.stdout
    assert "0002-tiny-bump-op-02.patch" in bad.stdout
    lock_line = next(line for line in bad.stdout.splitlines() if "patchctl lock --check" in line)
    assert lock_line.endswith("Failed"), bad.stdout
    print(good.stdout, bad.stdout, sep="\n")  # what a user sees (pytest -s)


def runtime_requirements() -> list[str]:
    """The names patchctl's metadata requires at run time (no extra)."""
    from importlib import metadata

    from packaging.requirements import Requirement

    return [Requirement(r).name for r in metadata.requires("patchctl") or [] if "extra ==" not in r]
