"""patchctl ci github: deterministic workflows that actionlint and the workflow schema accept.

`ci github` is run in a subprocess because it takes the repository root from the
working directory, which a test must not change in-process.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from patchctl.ci import workflows
from patchctl.errors import InputError

REPO = Path(__file__).resolve().parent.parent
ZIZMOR_CONFIG = REPO / "patchctl" / "ci" / "zizmor.yml"
GOLDEN = Path(__file__).parent / "fixtures" / "ci" / "workflows"
BIN = Path(sys.executable).parent
FILES = ("patchctl-stack.yml", "patchctl-canary.yml")
# Read at import: the autouse fixture clears PATCHCTL_* before each test.
UPDATE_GOLDEN = bool(os.environ.get("PATCHCTL_UPDATE_GOLDEN"))
# Every option away from its default, and a project below the repository root.
GOLDEN_ARGS = ["-C", "examples/tiny", "ci", "github", "--lanes", "cpu,cuda,vulkan,metal",
               "--runner", "cuda=self-hosted,linux,x64,gpu,cuda", "--runner", "metal=macos-15",
               "--canary-cron", "0 4 * * 1-5", "--canary-issue",
               "--install", "patchctl @ git+https://example.invalid/patchctl@v0.1.0"]
# Outside patchctl's own checkout --install has no default: the fewest options a user gives.
PINNED = "patchctl @ git+https://example.invalid/patchctl@" + "0123456789" * 4
FEWEST = ["-C", "examples/tiny", "ci", "github", "--install", PINNED]


def patchctl(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "patchctl", *args], cwd=cwd,
                          capture_output=True, text=True, check=False)


def tool(name: str) -> str:
    path = shutil.which(name, path=str(BIN)) or shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is missing: `pip install -e '.[test]'` installs it")
    return path


def actionlint(*files: Path) -> subprocess.CompletedProcess[str]:
    """actionlint, with shellcheck on every `run:` script."""
    return subprocess.run([tool("actionlint"), "-no-color", "-shellcheck", tool("shellcheck"),
                           *map(str, files)], capture_output=True, text=True, check=False)


def schema_check(*files: Path) -> subprocess.CompletedProcess[str]:
    """The GitHub workflow JSON schema that check-jsonschema vendors (offline)."""
    return subprocess.run([tool("check-jsonschema"), "--builtin-schema",
                           "vendor.github-workflows", *map(str, files)],
                          capture_output=True, text=True, check=False)


def zizmor(*files: Path) -> list[str]:
    """zizmor's findings (audit ids), offline and as an auditor (its widest persona),
    with the findings the generated workflows accept by design configured, each with its
    reason, in patchctl/ci/zizmor.yml."""
    r = subprocess.run([tool("zizmor"), "--offline", "--persona", "auditor", "--config",
                        str(ZIZMOR_CONFIG), "--format", "json", "--no-progress",
                        *map(str, files)], capture_output=True, text=True, check=False)
    assert r.returncode in (0, 11, 12, 13, 14), r.stderr  # 1x: findings of severity x
    return [f["ident"] for f in json.loads(r.stdout)]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository root holding the tiny example under examples/tiny."""
    root = tmp_path / "repo"
    shutil.copytree(REPO / "examples" / "tiny", root / "examples" / "tiny")
    return root


def test_golden_workflows(repo: Path) -> None:
    """Every option shows in the output; regenerate the goldens with
    PATCHCTL_UPDATE_GOLDEN=1 after a deliberate template change."""
    r = patchctl(*GOLDEN_ARGS, cwd=repo)
    assert r.returncode == 0, r.stderr
    out = repo / ".github" / "workflows"
    if UPDATE_GOLDEN:
        for name in FILES:
            shutil.copy(out / name, GOLDEN / name)
    for name in FILES:
        assert (out / name).read_text() == (GOLDEN / name).read_text(), name
    stack = (out / "patchctl-stack.yml").read_text()
    assert 'runner: ["self-hosted", "linux", "x64", "gpu", "cuda"]' in stack
    assert 'runner: ["macos-15"]' in stack and 'runner: ["self-hosted", "linux", "x64", ' \
        '"vulkan"]' in stack
    assert 'working-directory: "examples/tiny"' in stack
    assert "hashFiles('examples/tiny/stack/upstream.toml')" in stack
    assert 'REQUIREMENT: "patchctl @ git+https://example.invalid/patchctl@v0.1.0"' in stack
    assert 'run: python -m pip install "$REQUIREMENT"' in stack
    canary = (out / "patchctl-canary.yml").read_text()
    assert 'cron: "0 4 * * 1-5"' in canary and "issues: write" in canary
    # The token reaches gh through its environment only: never on a command line or echoed.
    assert "GH_TOKEN: ${{ github.token }}" in canary and canary.count("github.token") == 1
    assert "GH_TOKEN" not in canary.replace("GH_TOKEN: ${{ github.token }}", "")
    assert "set -x" not in canary and "secrets." not in canary
    first = canary.splitlines()[0]
    assert first == f"# Generated by `patchctl {shlex.join(GOLDEN_ARGS)}`; do not edit."


def test_the_vulkan_job_runs_the_lane_scripts_steps(repo: Path) -> None:
    """The vulkan job had its own install step (packages only when glslc or
    vulkaninfo was missing, no headers check, GGML_VK_VISIBLE_DEVICES without the ICD) and
    then `ci run --lane vulkan`, which did neither the headers nor the offload check. Now
    the job installs nothing Vulkan itself: `ci run --lane vulkan` runs
    native/ci/vulkan-lane.sh's steps, the same on a workstation (tests/test_ci_vulkan.py)."""
    assert patchctl(*GOLDEN_ARGS, cwd=repo).returncode == 0
    stack = (repo / ".github" / "workflows" / "patchctl-stack.yml").read_text()
    for what in ("vulkaninfo", "mesa-vulkan-drivers", "glslc", "GGML_VK", "VK_ICD"):
        assert what not in stack.replace("glslc and Vulkan headers", ""), what
    assert "native/ci/vulkan-lane.sh --step setup" in stack
    assert 'run: patchctl ci run --lane "$LANE"' in stack
    assert patchctl(*FEWEST, "--lanes", "cpu,cuda", cwd=repo).returncode == 0
    stack = (repo / ".github" / "workflows" / "patchctl-stack.yml").read_text()
    assert "vulkan" not in stack and "mesa" not in stack


def test_the_vulkan_lane_on_a_hosted_runner(repo: Path) -> None:
    """`--runner vulkan=ubuntu-latest` puts the vulkan job on a hosted runner
    (lavapipe, no GPU): no self-hosted label anywhere, no step that needs a GPU-type
    device, and actionlint, the workflow schema and zizmor (its self-hosted-runner audit
    included) accept it."""
    args = [*FEWEST, "--lanes", "cpu,vulkan", "--runner", "vulkan=ubuntu-latest"]
    r = patchctl(*args, cwd=repo)
    assert r.returncode == 0, r.stderr
    files = [repo / ".github" / "workflows" / name for name in FILES]
    doc = yaml.safe_load(files[0].read_text())
    assert doc["jobs"]["lane"]["strategy"]["matrix"]["include"] == [
        {"lane": "cpu", "runner": ["ubuntu-latest"]},
        {"lane": "vulkan", "runner": ["ubuntu-latest"]}]
    text = files[0].read_text()
    assert "self-hosted" not in text and "PHYSICAL_DEVICE_TYPE" not in text
    lint = actionlint(*files)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert schema_check(*files).returncode == 0
    config = files[0].parent / "zizmor.yml"  # the project's, self-hosted-runner audit on
    config.write_text(ZIZMOR_CONFIG.read_text().split("  self-hosted-runner:")[0])
    r = subprocess.run([tool("zizmor"), "--offline", "--persona", "auditor", "--config",
                        str(config), "--format", "json", "--no-progress", *map(str, files)],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0 and json.loads(r.stdout) == [], r.stdout + r.stderr


@pytest.mark.parametrize("args", [GOLDEN_ARGS, FEWEST], ids=["every-option", "defaults"])
def test_actionlint_and_the_workflow_schema_accept_them(repo: Path, args: list[str]) -> None:
    assert patchctl(*args, cwd=repo).returncode == 0
    files = [repo / ".github" / "workflows" / name for name in FILES]
    lint = actionlint(*files)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    schema = schema_check(*files)
    assert schema.returncode == 0, schema.stdout + schema.stderr


def test_the_validators_catch_a_broken_workflow(tmp_path: Path) -> None:
    """The control for the test above: both validators fail on a workflow they must reject."""
    text = (GOLDEN / "patchctl-canary.yml").read_text()
    bad = tmp_path / "bad.yml"
    bad.write_text(text.replace('cron: "0 4 * * 1-5"', 'cron: "61 4 * * *"'))
    assert actionlint(bad).returncode == 1
    bad.write_text(text.replace("    runs-on: ubuntu-latest\n", "", 1)
                   .replace("    timeout-minutes: 60\n", "    timeout-minutes: soon\n", 1))
    assert schema_check(bad).returncode == 1
    bad.write_text(text.replace('echo "commit=$commit" >> "$GITHUB_OUTPUT"',
                                'echo commit=$commit >> $GITHUB_OUTPUT'))
    assert "shellcheck" in actionlint(bad).stdout


def test_zizmor_finds_nothing(repo: Path) -> None:
    """Every lane and --canary-issue, through zizmor's template-injection
    audit and the rest (artipacked, excessive-permissions, undocumented-permissions were
    found and fixed; unpinned-uses and self-hosted-runner are configured with a reason)."""
    assert patchctl(*GOLDEN_ARGS, cwd=repo).returncode == 0
    assert zizmor(*(repo / ".github" / "workflows" / name for name in FILES)) == []
    assert zizmor(*(REPO / ".github" / "workflows" / name for name in FILES)) == []


def test_zizmor_catches_an_injection(tmp_path: Path) -> None:
    """The control for the test above: zizmor reports an expression in a `run:` script
    and a checkout that keeps its token, with the same configuration."""
    text = (GOLDEN / "patchctl-stack.yml").read_text()
    bad = tmp_path / "bad.yml"
    bad.write_text(text.replace('run: python -m pip install "$REQUIREMENT"',
                                "run: python -m pip install "
                                "${{ github.event.head_commit.message }}", 1))
    assert "template-injection" in zizmor(bad)
    bad.write_text(text.replace("persist-credentials: false", "persist-credentials: true", 1))
    assert "artipacked" in zizmor(bad)


# An --out whose lines end the header comment and add a top-level `defaults:` (a shell
# for every step), and still resolve to .github/workflows.
OUT_INJECTION = ("x\ndefaults:\n  run:\n    shell: sh -c 'touch pwned' {0}\n"
                 "#/../.github/workflows")


@pytest.mark.parametrize(("pin_name", "args", "message"), [
    ("up ${{ secrets.NPM_TOKEN }}", ["--canary-issue"], "the pin's name (stack/upstream.toml)"),
    ("up\njobs: {}", ["--canary-issue"], "the pin's name (stack/upstream.toml)"),
    (None, ["--install", "${{ github.event.head_commit.message }}"], "--install"),
    (None, ["--install", "patchctl\x1b[2J"], "--install"),
    (None, ["--out", OUT_INJECTION], "--out"),
    (None, ["--out", ".github/${{ github.actor }}"], "--out"),
], ids=["name-expression", "name-newline", "install-expression", "install-escape",
        "out-newline", "out-expression"])
def test_a_value_that_would_change_the_workflow_is_refused(
        repo: Path, pin_name: str | None, args: list[str], message: str) -> None:
    """The pin's name reached the canary's issue title env, where Actions
    evaluates `${{ }}`. --out reached the header comment, where a newline
    ends it, and --install a `run:` line. Each is refused: exit 2, one line, nothing
    written."""
    if pin_name is not None:
        pin = repo / "examples" / "tiny" / "stack" / "upstream.toml"
        pin.write_text(pin.read_text().replace('name = "tiny"', f"name = {json.dumps(pin_name)}"))
    r = patchctl("-C", "examples/tiny", "ci", "github", *args, cwd=repo)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.startswith(f"patchctl: error: {message} ") and \
        len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert sorted(p.name for p in repo.iterdir()) == ["examples"]  # nothing written


@pytest.mark.parametrize("field", ["project", "out", "install", "name", "canary_cron",
                                   "runners"])
@pytest.mark.parametrize("bad", ["a ${{ github.token }}", "a\nb: c", "a\rb", "a\tb",
                                 "a\x00b", "a\x9bb", "a\u202eb"])
def test_every_option_passes_the_one_check(field: str, bad: str) -> None:
    """Every value that reaches the text passes workflow_value, whichever
    way it comes in (the library API too, not only the CLI)."""
    value: object = {"canary_cron": "0 4 * * " + bad,
                     "runners": {"cpu": ("ubuntu-latest", bad)}}.get(field, bad)
    with pytest.raises(InputError, match=r"line break or control character|'\$\{\{'"):
        workflows.render(workflows.Options(**{field: value}))


def test_data_reaches_the_shell_through_env_only(repo: Path) -> None:
    """No `run:` script holds a value from an option or the pin; a step reads
    it from `env:`, double-quoted, so no character of it is shell syntax."""
    install = "patchctl @ git+https://example.invalid/p@v1 ; echo $HOME `id` 'q'"
    pin = repo / "examples" / "tiny" / "stack" / "upstream.toml"
    pin.write_text(pin.read_text().replace('name = "tiny"', 'name = "ti\'ny $(id) `x`"'))
    r = patchctl("-C", "examples/tiny", "ci", "github", "--canary-issue", "--install", install,
                 cwd=repo)
    assert r.returncode == 0, r.stderr
    envs: list[dict[str, str]] = []
    for name in FILES:
        doc = yaml.safe_load((repo / ".github" / "workflows" / name).read_text())
        for job in doc["jobs"].values():
            for step in job["steps"]:
                assert "ti'ny" not in step.get("run", "") and "example.invalid" not in \
                    step.get("run", ""), step
                envs.append(step.get("env", {}))
    assert {"REQUIREMENT": install} in envs
    title = next(e["TITLE"] for e in envs if "TITLE" in e)
    assert title == "patchctl upstream canary: ti'ny $(id) `x` patches no longer apply"
    canary = (repo / ".github" / "workflows" / "patchctl-canary.yml").read_text()
    assert '--title "$TITLE"' in canary


def test_this_repositorys_workflows_are_current() -> None:
    """.github/workflows here is generated by the command in its header: re-running that
    command with --check must find nothing stale."""
    for name in FILES:
        path = REPO / ".github" / "workflows" / name
        first = path.read_text().splitlines()[0]
        assert first.startswith("# Generated by `patchctl ci github") and \
            first.endswith("`; do not edit."), first
        argv = shlex.split(first.split("`")[1])[1:]
        r = patchctl(*argv, "--check", cwd=REPO)
        assert r.returncode == 0, f"{name} is stale; regenerate with `{first.split('`')[1]}`" \
            f"\n{r.stdout}{r.stderr}"


def test_check_finds_a_stale_file_and_write_restores_it(repo: Path) -> None:
    args = FEWEST
    assert patchctl(*args, cwd=repo).returncode == 0
    path = repo / ".github" / "workflows" / "patchctl-stack.yml"
    before = path.read_bytes()
    again = patchctl(*args, cwd=repo)
    assert "patchctl-stack.yml: unchanged" in again.stdout
    path.write_text(path.read_text().replace("timeout-minutes: 30", "timeout-minutes: 31"))
    stale = patchctl(*args, "--check", cwd=repo)
    assert stale.returncode == 1
    assert "patchctl-stack.yml: stale" in stale.stdout
    assert f"regenerate with: {shlex.join(['patchctl', *FEWEST])}" in stale.stdout
    assert patchctl(*args, cwd=repo).returncode == 0
    assert path.read_bytes() == before


@pytest.mark.parametrize(("args", "message"), [
    (["--lanes", "cpu,rocm"], "unknown lane 'rocm'"),
    (["--lanes", "cpu,cpu"], "names a lane twice"),
    (["--runner", "cuda"], "expected LANE=LABEL"),
    (["--runner", "cuda=gpu;rm"], "is not a runner label"),
    (["--runner", "cuda=gpu"], "which --lanes does not include"),
    (["--canary-cron", "daily"], "is not a 5-field cron schedule"),
    (["--install", " "], "--install needs one pip requirement"),
])
def test_bad_options_are_one_line_usage_errors(repo: Path, args: list[str],
                                               message: str) -> None:
    r = patchctl("-C", "examples/tiny", "ci", "github", *args, cwd=repo)
    assert r.returncode == 2
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (repo / ".github").exists()


def test_a_project_outside_the_repository_is_refused(repo: Path, tmp_path: Path) -> None:
    r = patchctl("-C", str(repo / "examples" / "tiny"), "ci", "github", "--install", PINNED,
                 cwd=tmp_path / "repo" / "examples")
    assert r.returncode == 0  # inside: fine
    r = patchctl("-C", str(repo / "examples" / "tiny"), "ci", "github", "--install", PINNED,
                 cwd=tmp_path / "repo" / "examples" / "tiny" / "stack")
    assert r.returncode == 2 and "outside the current directory" in r.stderr


def test_the_same_command_from_two_clones_writes_the_same_bytes(tmp_path: Path) -> None:
    """`ci github --out DIR` wrote the absolute DIR into the workflows' header
    line, so two clones wrote different bytes; a DIR inside the repository is named
    relative to its root."""
    written = []
    for clone in ("a", "b"):
        root = tmp_path / clone
        shutil.copytree(REPO / "examples" / "tiny", root / "examples" / "tiny")
        out = root / ".github" / "workflows"
        r = patchctl(*FEWEST, "--out", str(out), cwd=root)
        assert r.returncode == 0, r.stderr
        written.append({name: (out / name).read_bytes() for name in FILES})
    assert written[0] == written[1]
    assert written[0]["patchctl-stack.yml"].startswith(
        f"# Generated by `{shlex.join(['patchctl', *FEWEST])}`; do not edit.".encode())


def test_without_install_there_is_no_pypi_default(repo: Path) -> None:
    """`ci github` without --install wrote `pip install patchctl==<version>`
    into both workflows: a name on PyPI that is not this project's, so whoever registers it
    runs their code in the user's CI. Outside patchctl's own checkout there is no safe
    default: refused, one line saying why, nothing written."""
    r = patchctl("-C", "examples/tiny", "ci", "github", cwd=repo)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.startswith("patchctl: error: --install is required here") and \
        len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "a git URL pinned to a commit" in r.stderr and "PyPI is not this project's" in \
        r.stderr
    assert sorted(p.name for p in repo.iterdir()) == ["examples"]  # nothing written
    with pytest.raises(InputError, match="--install is required here"):
        workflows.render(workflows.Options())  # the library has no such default either
    other = repo / "pyproject.toml"  # a Python project, but not patchctl
    other.write_text('[project]\nname = "patchctl-extras"\nversion = "1"\n')
    assert patchctl("-C", "examples/tiny", "ci", "github", cwd=repo).returncode == 2


@pytest.mark.parametrize("below", [False, True], ids=["project-at-root", "project-below"])
def test_in_patchctls_own_checkout_runners_install_that_checkout(tmp_path: Path,
                                                                  below: bool) -> None:
    """In a repository whose pyproject.toml is patchctl's, --install defaults to that
    checkout, named from the project directory (where the step runs), and the header's
    command says so, so regenerating elsewhere gives the same bytes."""
    root = tmp_path / "patchctl"
    project = root / "examples" / "tiny" if below else root
    shutil.copytree(REPO / "examples" / "tiny", project, dirs_exist_ok=True)
    (root / "pyproject.toml").write_text('[project]\nname = "PatchCtl"\nversion = "0.1.0"\n')
    args = ["-C", "examples/tiny"] if below else []
    r = patchctl(*args, "ci", "github", cwd=root)
    assert r.returncode == 0, r.stderr
    want = "../.." if below else "."
    stack = (root / ".github" / "workflows" / "patchctl-stack.yml").read_text()
    assert f'REQUIREMENT: "{want}"' in stack and "patchctl==" not in stack
    command = shlex.join(["patchctl", *args, "ci", "github", "--install", want])
    assert stack.startswith(f"# Generated by `{command}`; do not edit.")
    assert (project / want).resolve() == root.resolve()
