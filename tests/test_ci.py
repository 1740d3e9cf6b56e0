"""patchctl ci run: a lane's steps, run here exactly as the workflow's lane job runs them."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.builders import Upstream, commit_all, replace_in

REPO = Path(__file__).resolve().parent.parent

# A stand-in for native/: it needs the stamped `apply --into` tree, builds against
# it and runs one CTest test, as the worker's native/ does.
NATIVE_CMAKE = """\
cmake_minimum_required(VERSION 3.21)
project(native_probe C)
set(WORKER_UPSTREAM_DIR "" CACHE PATH "tree made by patchctl apply --into")
if(NOT EXISTS "${WORKER_UPSTREAM_DIR}/.patchctl-stamp")
  message(FATAL_ERROR "no stamped tree at '${WORKER_UPSTREAM_DIR}'")
endif()
add_subdirectory("${WORKER_UPSTREAM_DIR}" upstream EXCLUDE_FROM_ALL)
file(WRITE "${CMAKE_BINARY_DIR}/probe.c"
  "int tiny_square(int v);\\nint main(void) { return tiny_square(-3) == 9 ? 0 : 1; }\\n")
add_executable(probe "${CMAKE_BINARY_DIR}/probe.c")
target_link_libraries(probe PRIVATE tiny)
enable_testing()
add_test(NAME probe COMMAND probe)
"""


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    """A copy of examples/tiny (its pin URL is a bundle path relative to the project)."""
    dest = tmp_path / "tiny"
    shutil.copytree(REPO / "examples" / "tiny", dest,
                    ignore=shutil.ignore_patterns(".patchctl", "evidence"))
    return dest


def steps_of(out: str) -> dict[str, dict]:
    return {s["name"]: s for s in json.loads(out)["steps"]}


@pytest.mark.slow
def test_cpu_lane_passes_on_the_tiny_example(cli, tiny: Path) -> None:
    """Also the regression for `reproduce` resolving a relative pin URL (the example's
    bundle) against the working directory instead of the project: run from elsewhere,
    the lane's reproduce step failed with 'upstream tiny-upstream.bundle does not exist'."""
    r = cli("-C", str(tiny), "ci", "run", "--lane", "cpu", "--json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert data["ok"] and data["lane"] == "cpu"
    steps = steps_of(r.out)
    assert [s["name"] for s in data["steps"]] == ["verify", "apply", "configure", "build",
                                                  "test", "reproduce"]
    assert {n: s["status"] for n, s in steps.items()} == {
        "verify": "passed", "apply": "passed", "configure": "skipped", "build": "skipped",
        "test": "skipped", "reproduce": "passed"}
    assert steps["build"]["skip"] == "the project has no native/CMakeLists.txt: no native build"
    work = tiny / ".patchctl" / "ci" / "cpu"
    assert (work / "tree" / ".patchctl-stamp").is_file()
    assert "fails-before/passes-after" in Path(steps["reproduce"]["log"]).read_text()
    assert json.loads((work / "result.json").read_text())["ok"] is True
    # The step output went to stderr (stdout is the JSON), and into the logs.
    assert "result: OK" in r.err and "result: OK" in (work / "logs" / "01-verify.log").read_text()


@pytest.mark.slow
def test_native_steps_configure_build_and_test_the_applied_tree(cli, tiny: Path) -> None:
    (tiny / "native").mkdir()
    (tiny / "native" / "CMakeLists.txt").write_text(NATIVE_CMAKE)
    for patch in (tiny / "stack" / "patches").glob("*.patch"):
        patch.write_text(re.sub(r"^Reproducer: .*\n", "", patch.read_text(), flags=re.M))
    assert cli("-C", str(tiny), "lock").code == 0
    r = cli("-C", str(tiny), "ci", "run", "--json")
    assert r.code == 0, r.err
    steps = steps_of(r.out)
    assert [steps[n]["status"] for n in ("configure", "build", "test")] == ["passed"] * 3
    assert steps["reproduce"]["status"] == "skipped"
    assert "no patch names a reproducer" in steps["reproduce"]["skip"]
    assert "100% tests passed" in Path(steps["test"]["log"]).read_text()


def test_list_shows_the_plan_with_the_lanes_backend(cli, tiny: Path) -> None:
    (tiny / "native").mkdir()
    (tiny / "native" / "CMakeLists.txt").write_text(NATIVE_CMAKE)
    r = cli("-C", str(tiny), "ci", "run", "--lane", "cuda", "--list", "--upstream",
            "/some/clone", "--exclude", "models/*.gguf")
    assert r.code == 0, r.err
    lines = {ln.split()[0]: ln for ln in r.out.splitlines()}
    work = tiny.absolute() / ".patchctl" / "ci" / "cuda"
    assert f"-DWORKER_UPSTREAM_DIR={work / 'tree'}" in lines["configure"]
    assert lines["configure"].rstrip().endswith("-DGGML_CUDA=ON")
    assert f"apply --into {work / 'tree'} --upstream /some/clone '--exclude=models/*.gguf'" \
        in lines["apply"]
    assert lines["verify"].startswith("verify     patchctl -C ")
    r = cli("-C", str(tiny), "ci", "run", "--lane", "cuda", "--list", "--upstream",
            "/some/clone", "--exclude", "models/*.gguf", "--json")
    assert r.code == 0, r.err
    plan = json.loads(r.out)
    assert (plan["schema"], plan["lane"], plan["work"]) == ("patchctl.ci-plan/1", "cuda",
                                                             str(work))
    assert [s["name"] for s in plan["steps"]] == list(lines)
    by_name = {s["name"]: s for s in plan["steps"]}
    assert by_name["configure"]["command"].endswith("-DGGML_CUDA=ON")
    assert not (tiny / ".patchctl").exists()  # --list runs nothing


def test_the_first_failure_stops_the_lane(cli, project: Path, upstream: Upstream,
                                          tmp_path: Path) -> None:
    replace_in(upstream.path / "src" / "util.c", "int tiny_abs(int v)", "int tiny_abs(long v)")
    moved = commit_all(upstream.path, "upstream moves")
    pin = project / "stack" / "upstream.toml"
    pin.write_text(pin.read_text().replace(upstream.commits["base"], moved))
    assert cli("-C", str(project), "lock").code == 0
    r = cli("-C", str(project), "ci", "run", "--json")
    assert r.code == 1
    steps = steps_of(r.out)
    assert steps["verify"]["status"] == "failed" and steps["verify"]["returncode"] == 1
    assert steps["apply"]["status"] == "not-run" and steps["reproduce"]["status"] == "not-run"
    assert "failed" in Path(steps["verify"]["log"]).read_text()
    assert "==> [cpu] verify failed (exit 1); log: " in r.err


def test_on_github_steps_are_grouped_and_a_failure_annotated(cli, project: Path,
                                                             monkeypatch) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    r = cli("-C", str(project), "ci", "run")
    # The fixture's 0001 names reproducers/square, which this project lacks.
    assert r.code == 1, r.out + r.err
    assert "::group::cpu: verify\n" in r.out and "::endgroup::\n" in r.out
    assert "::group::cpu: apply\n" in r.out
    assert "::error title=patchctl ci lane cpu::reproduce failed (exit 2): patchctl -C " in r.out


def test_a_missing_tool_is_an_environment_failure(cli, tiny: Path, tmp_path: Path,
                                                  monkeypatch) -> None:
    (tiny / "native").mkdir()
    (tiny / "native" / "CMakeLists.txt").write_text(NATIVE_CMAKE)
    only_git = tmp_path / "bin"
    only_git.mkdir()
    (only_git / "git").symlink_to(shutil.which("git"))
    monkeypatch.setenv("PATH", str(only_git))
    r = cli("-C", str(tiny), "ci", "run")
    assert r.code == 3
    assert "cmake is not on PATH" in r.err and "pip install cmake ninja" in r.err
    assert len(r.err.strip().splitlines()) == 1


def test_an_unknown_lane_is_a_usage_error(cli, project: Path) -> None:
    r = cli("-C", str(project), "ci", "run", "--lane", "rocm")
    assert r.code == 2
    assert r.err.strip() == "patchctl: error: unknown lane 'rocm'; the lanes are cpu, cuda, " \
        "vulkan, metal"


def test_ci_help_is_listed(cli) -> None:
    r = cli("--help")
    assert "  ci " in r.out
