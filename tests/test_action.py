"""action.yml: the composite GitHub Action, for a project that commits no generated workflow.

Checked as `patchctl ci github`'s output is (tests/test_ci_workflows.py): actionlint
(shellcheck on each `run:`) and the workflow schema on the README's example workflow, which
uses the action from the project itself so that actionlint reads the action's inputs;
zizmor as an auditor on both. The slow test runs the action's own steps, as the runner
would, on a temp downstream.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests import quickstart, wheelhouse
from tests.builders import git, make_project, make_upstream, standard_patches
from tests.test_ci_workflows import actionlint, schema_check, tool, zizmor
from tests.test_precommit_hooks import BUILD_REQUIRES, runtime_requirements

REPO = Path(__file__).resolve().parents[1]
ACTION = REPO / "action.yml"
_EXAMPLE = re.compile(
    r"<!-- action: begin[^>]*-->\s*```yaml\n(.*?)^```\s*<!-- action: end -->",
    re.MULTILINE | re.DOTALL,
)
_USES = re.compile(r"uses: OWNER/patchctl@\S+")


def consumer(root: Path) -> Path:
    """A repository with the action at .github/actions/patchctl and the README's example
    workflow using it there (its `uses: OWNER/patchctl@REF` made local). A git repository:
    actionlint finds a local action from the repository's root, and skips it without one."""
    found = _EXAMPLE.findall(quickstart.README.read_text(encoding="utf-8"))
    assert len(found) == 1, "README.md needs one example workflow between the action markers"
    assert _USES.search(found[0]), found[0]
    git(root, "init", "-q")
    (root / ".github/actions/patchctl").mkdir(parents=True)
    (root / ".github/actions/patchctl/action.yml").write_bytes(ACTION.read_bytes())
    (root / ".github/workflows").mkdir(parents=True)
    workflow = root / ".github/workflows/patch-stack.yml"
    workflow.write_text(_USES.sub("uses: ./.github/actions/patchctl", found[0]))
    return workflow


def test_actionlint_schema_and_zizmor_accept_the_action_and_its_example(tmp_path: Path) -> None:
    workflow = consumer(tmp_path)
    lint = actionlint(workflow)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    schema = schema_check(workflow)
    assert schema.returncode == 0, schema.stdout + schema.stderr
    # zizmor on the workflow as the README has it (a local `uses:` is a finding of its own),
    # pinned to a full commit as the README says to (a tag can move).
    as_written = tmp_path / "readme" / ".github/workflows/patch-stack.yml"
    as_written.parent.mkdir(parents=True)
    example = _EXAMPLE.findall(quickstart.README.read_text(encoding="utf-8"))[0]
    as_written.write_text(_USES.sub(f"uses: OWNER/patchctl@{'ab12' * 10}  # v0.1.0", example))
    assert zizmor(tmp_path / ".github/actions/patchctl/action.yml", as_written) == []
    # shellcheck on the action's own scripts (actionlint checks only a workflow's).
    for n, step in enumerate(yaml.safe_load(ACTION.read_text())["runs"]["steps"]):
        if "run" in step:
            script = tmp_path / f"step{n}.sh"
            script.write_text("#!/bin/bash\n" + step["run"])
            r = subprocess.run(
                [tool("shellcheck"), str(script)], capture_output=True, text=True, check=False
            )
            assert r.returncode == 0, r.stdout


def test_actionlint_catches_an_input_the_action_lacks(tmp_path: Path) -> None:
    """The control: actionlint reads the local action, so a misspelt input fails."""
    workflow = consumer(tmp_path)
    workflow.write_text(workflow.read_text().replace("upstream:", "upstream-url:", 1))
    lint = actionlint(workflow)
    assert lint.returncode == 1 and 'input "upstream-url" is not defined' in lint.stdout


@pytest.mark.slow
def test_the_actions_steps_run_on_a_downstream(tmp_path: Path) -> None:
    """The action's `run:` steps in order, as a runner runs them (bash, the inputs in the
    environment, GITHUB_ACTION_PATH this checkout), with a fresh Python environment in
    place of setup-python and pip offline: it installs patchctl from the action's own
    checkout, verify prints no annotation on a clean stack, burden writes the summary."""
    action_path = quickstart.snapshot(tmp_path / "patchctl")
    house = tmp_path / "wheelhouse"
    wheelhouse.wheelhouse(house, [*runtime_requirements(), *BUILD_REQUIRES])
    upstream = make_upstream(tmp_path / "upstream")
    make_project(
        tmp_path / "ws" / "proj", upstream, standard_patches(upstream, tmp_path / "scratch")
    )
    venv = tmp_path / "python"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    summary = tmp_path / "summary.md"
    inputs = {"upstream": str(upstream.path), "patchctl": "", "project": "proj"}
    env = {
        **os.environ,
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(house),
        "GITHUB_ACTION_PATH": str(action_path),
        "GITHUB_STEP_SUMMARY": str(summary),
        "PATCHCTL_CACHE_DIR": str(tmp_path / "cache"),
    }
    outputs = []
    for step in yaml.safe_load(ACTION.read_text())["runs"]["steps"]:
        if "run" not in step:
            continue  # actions/setup-python and actions/cache: the runner's
        step_env = {
            k: _expand(v, inputs) for k, v in step.get("env", {}).items() if "runner.temp" not in v
        }
        cwd = tmp_path / "ws" / _expand(step.get("working-directory", "."), inputs)
        r = subprocess.run(
            ["bash", "-e", "-c", step["run"]],
            cwd=cwd,
            env={**env, **step_env},
            text=True,
            capture_output=True,
            check=False,
            timeout=600,
        )
        assert r.returncode == 0, f"{step['name']}:\n{r.stdout}{r.stderr}"
        outputs.append(r.stdout)
    assert (venv / "bin" / "patchctl").exists()
    assert "::error" not in outputs[1]
    assert summary.read_text().startswith("burden tiny @ ") and "stack:" in summary.read_text()


def _expand(value: str, inputs: dict[str, str]) -> str:
    return re.sub(r"\$\{\{ inputs\.([a-z-]+) \}\}", lambda m: inputs[m.group(1)], value)
