"""The package as PyPI checks it, installed as a user installs it, running the quickstart.

`python -m build` makes the sdist and, from it, the wheel (no build isolation: offline,
with the build requirements of the test extra); `twine check --strict` accepts both; pipx
installs the wheel (and, for the README's `# or:` line, a checkout) into environments of
its own, pip taking the dependencies from a wheelhouse packed from this environment
(tests/wheelhouse.py), no index; and the README's quickstart runs, install step included,
with that `patchctl`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from tests import quickstart, wheelhouse
from tests.test_precommit_hooks import BUILD_REQUIRES, runtime_requirements
from tests.test_quickstart import check_outcome

BIN = Path(sys.executable).parent


def build(src: Path, out: Path) -> tuple[Path, Path]:
    r = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(src)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return sdist, wheel


@pytest.mark.slow
def test_the_wheel_installs_with_pipx_and_runs_the_quickstart(tmp_path: Path) -> None:
    """From the sources to a maintainer's CI: the built wheel and sdist pass `twine check
    --strict` with the metadata an index shows; pip installs the wheel offline into a fresh
    venv and `pip check` finds its dependencies whole; pipx installs it offline; the
    README's quickstart runs as written with the `patchctl` pipx installed."""
    world = quickstart.make_world(tmp_path / "world")
    src = quickstart.snapshot(world.project.parent / "patchctl")
    sdist, wheel = build(src, src / "dist")
    assert wheel.name == quickstart.wheel_name()
    twine = subprocess.run(
        [str(BIN / "twine"), "check", "--strict", str(sdist), str(wheel)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert twine.returncode == 0, twine.stdout + twine.stderr
    assert twine.stdout.count("PASSED") == 2, twine.stdout
    with zipfile.ZipFile(wheel) as z:
        meta = Parser().parsestr(z.read("patchctl-0.1.0.dist-info/METADATA").decode())
    assert meta["License-Expression"] == "MIT" and meta["Requires-Python"] == ">=3.11"
    assert meta["Description-Content-Type"] == "text/markdown"
    assert meta.get_payload().startswith("# patchctl\n")  # the README is the description
    classifiers = meta.get_all("Classifier") or []
    assert "Environment :: Console" in classifiers and len(classifiers) >= 8

    house = tmp_path / "wheelhouse"
    wheelhouse.wheelhouse(house, [*runtime_requirements(), *BUILD_REQUIRES, "pip"])
    # Plain pip into a fresh venv, offline: the wheel's Requires-Dist is all it needs.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin/python"), "-m", "pip"]
    install = subprocess.run(
        [*pip, "install", "-q", "--no-index", "--find-links", str(house), str(wheel)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    check = subprocess.run([*pip, "check"], capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout
    version = subprocess.run(
        [str(venv / "bin/patchctl"), "--version"], capture_output=True, text=True, check=False
    )
    assert version.stdout == "patchctl, version 0.1.0\n", version.stdout + version.stderr

    tools = tmp_path / "tools"  # pipx alone: the tests' own patchctl stays off PATH
    tools.mkdir()
    (tools / "pipx").symlink_to(BIN / "pipx")
    pipx_bin = tmp_path / "pipx-bin"
    path = [d for d in os.environ["PATH"].split(os.pathsep) if Path(d) != BIN]
    env = {
        "PATH": os.pathsep.join(path),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(house),
        "PIPX_HOME": str(tmp_path / "pipx-home"),
        "PIPX_BIN_DIR": str(pipx_bin),
        "PIPX_MAN_DIR": str(tmp_path / "pipx-man"),
    }
    text = quickstart.script(quickstart.steps(), install=True)
    r = quickstart.run(
        world,
        text + "command -v patchctl\npatchctl --version\n",
        path_dirs=[pipx_bin, tools],
        extra_env=env,
    )
    print(r.stdout)  # the quickstart's transcript (pytest -s)
    assert r.returncode == 0, r.stdout
    assert f"\n{pipx_bin / 'patchctl'}\npatchctl, version 0.1.0\n" in r.stdout
    assert (tmp_path / "pipx-man/man1/patchctl-verify.1").is_file()
    check_outcome(world, r.stdout)
    # The `# or:` install from a checkout, in an environment of its own.
    assert (world.project.parent / "alt-1/.pipx/bin/patchctl").exists(), r.stdout
