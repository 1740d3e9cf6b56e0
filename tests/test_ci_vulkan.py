"""The vulkan lane: `ci run --lane vulkan` (and so the workflow's vulkan job) runs the steps
of native/ci/vulkan-lane.sh, the one place that installs the packages, picks the Vulkan
headers and the device, runs the stage CTests on it and checks the offload.

No Vulkan and no build here: the plan is printed (`--list`), and the script's setup step
runs against stand-ins for the system's package tools and vulkaninfo on PATH (a test
cannot install packages or own a GPU). The lane itself, end to end, is an opt-in run
recorded as evidence (native/README.md, "The Vulkan lane on lavapipe").
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "native" / "ci" / "vulkan-lane.sh"
PACKAGES = "mesa-vulkan-drivers libvulkan-dev glslc spirv-headers vulkan-tools"
LAVAPIPE = glob.glob("/usr/share/vulkan/icd.d/lvp_icd.*.json")


@pytest.fixture
def vulkan_project(tiny: Path) -> Path:
    """The tiny example with a native/ build and this repository's vulkan lane script."""
    (tiny / "native" / "ci").mkdir(parents=True)
    (tiny / "native" / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.21)\n")
    shutil.copy(SCRIPT, tiny / "native" / "ci" / "vulkan-lane.sh")
    return tiny


def test_ci_run_lane_vulkan_runs_the_lane_scripts_steps(cli, vulkan_project: Path) -> None:
    """`ci run --lane vulkan` configured with the system's Vulkan headers
    (no -DVulkan_INCLUDE_DIR: Debian 12's are too old for the pin), ran every CTest without
    naming lavapipe and no offload check. Its plan now calls native/ci/vulkan-lane.sh's
    setup (packages, headers, device), configures with the cache it writes, and runs the
    script's CTests and offload check."""
    r = cli("-C", str(vulkan_project), "ci", "run", "--lane", "vulkan", "--list", "--json")
    assert r.code == 0, r.err
    steps = {s["name"]: s["command"] for s in json.loads(r.out)["steps"]}
    assert list(steps) == ["verify", "setup", "apply", "configure", "build", "test", "check",
                           "reproduce"]
    work = vulkan_project.absolute() / ".patchctl" / "ci" / "vulkan"
    script = vulkan_project.absolute() / "native" / "ci" / "vulkan-lane.sh"
    assert steps["setup"].endswith(f"bash {script} --step setup {work}")
    assert steps["setup"].startswith("env CTEST=") and " PYTHON=" in steps["setup"]
    assert f" -C {work / 'lane.cmake'} -S " in steps["configure"]
    assert steps["configure"].endswith("-DGGML_VULKAN=ON")
    assert steps["test"].endswith(f"bash {script} --step ctest {work} {work / 'native'}")
    assert steps["check"].endswith(f"bash {script} --step check {work} {work / 'native'}")
    # A lane without a script keeps the plain CTest step and gets no setup or check.
    r = cli("-C", str(vulkan_project), "ci", "run", "--lane", "cuda", "--list", "--json")
    plain = {s["name"]: s["command"] for s in json.loads(r.out)["steps"]}
    assert list(plain) == ["verify", "apply", "configure", "build", "test", "reproduce"]
    assert " -C " not in plain["configure"] and "--no-tests=error" in plain["test"]


STUBS = {
    # Installed once the marker exists; versions for the `${Package} ${Version}` query.
    "dpkg-query": """case "$*" in
  *Status*) [ -e "$STUB/installed" ] && echo "install ok installed" || exit 1 ;;
  *) shift 3; for p in "$@"; do echo "$p 1.0-stub"; done ;;
esac""",
    "apt-get": 'echo "apt-get $*" >>"$STUB/calls"; '
               'case "$*" in *install*) touch "$STUB/installed" ;; esac',
    "sudo": 'echo "sudo $1" >>"$STUB/calls"; shift; exec "$@"',
    "id": 'echo "$STUB_UID"',
    # The compiler vulkan-headers-check.sh runs (as CXX): vulkan.hpp new enough or not.
    "cxx-new": "cat >/dev/null",
    "cxx-old": "cat >/dev/null; echo '<stdin>:3:5: error: LayerSettingEXT'; exit 1",
    "vulkaninfo": 'echo "Vulkan Instance Version: 1.3.999"; echo "Devices:"; '
                  'echo "  deviceType = PHYSICAL_DEVICE_TYPE_$STUB_DEVICE"',
}


def setup_step(tmp_path: Path, *, installed: bool, uid: int, device: str, headers_ok: bool,
               os_release: str = 'ID=debian\nVERSION_ID="12"\n'
               ) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    stub = tmp_path / "stub"
    stub.mkdir()
    for name, body in STUBS.items():
        (stub / name).write_text(f"#!/bin/bash\n{body}\n")
        (stub / name).chmod(0o755)
    if installed:
        (stub / "installed").touch()
    (tmp_path / "os-release").write_text(os_release)
    work = tmp_path / "work"
    env = {**os.environ, "PATH": f"{stub}:{os.environ['PATH']}", "STUB": str(stub),
           "STUB_UID": str(uid), "STUB_DEVICE": device, "VK_LANE_OS_RELEASE":
           str(tmp_path / "os-release"), "CXX": "cxx-new" if headers_ok else "cxx-old"}
    env.pop("VK_LANE_SKIP_APT", None)
    r = subprocess.run(["bash", str(SCRIPT), "--step", "setup", str(work)], env=env,
                       capture_output=True, text=True, check=False, cwd=tmp_path)
    return r, stub, work


def test_setup_installs_only_what_is_missing_through_sudo(tmp_path: Path) -> None:
    """A hosted runner is not root and may have the packages or not. setup
    installs them only when one is missing, with `sudo -n` when not root (the workflow's
    own install step, now gone, did the same); a GPU-type device is used as the loader
    finds it, and the headers the compiler accepts go to lane.cmake."""
    r, stub, work = setup_step(tmp_path, installed=False, uid=1001, device="DISCRETE_GPU",
                               headers_ok=True)
    assert r.returncode == 0, r.stdout + r.stderr
    calls = (stub / "calls").read_text().splitlines()
    assert calls == ["sudo -n", "apt-get update -qq", "sudo -n",
                     f"apt-get install -y -qq {PACKAGES}"]
    assert r.stdout.splitlines()[0].endswith(f" apt: {PACKAGES}")
    assert "libvulkan1 1.0-stub" in r.stdout
    assert "vulkaninfo --summary (the loader's default: a GPU-type device)" in r.stdout
    assert "VK_ICD_FILENAMES" not in r.stdout
    assert (work / "lane.cmake").read_text() == (
        'set(Vulkan_INCLUDE_DIR "/usr/include" CACHE PATH "native/ci/vulkan-lane.sh --step '
        'setup" FORCE)\n')
    (stub / "calls").unlink()
    again = subprocess.run(["bash", str(SCRIPT), "--step", "setup", str(work)],
                           env={**os.environ, "PATH": f"{stub}:{os.environ['PATH']}",
                                "STUB": str(stub), "STUB_UID": "1001",
                                "STUB_DEVICE": "DISCRETE_GPU", "CXX": "cxx-new"},
                           capture_output=True, text=True, check=False)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"apt: {PACKAGES}: installed already" in again.stdout
    assert not (stub / "calls").exists()


@pytest.mark.skipif(not LAVAPIPE, reason="no lavapipe ICD here (mesa-vulkan-drivers)")
def test_setup_names_lavapipe_when_there_is_no_gpu(tmp_path: Path) -> None:
    """On a runner without a GPU the lane runs on lavapipe (its ICD, and
    GGML_VK_VISIBLE_DEVICES for ggml-vulkan, which skips CPU-type devices unless named)
    instead of failing."""
    r, _, _ = setup_step(tmp_path, installed=True, uid=0, device="CPU", headers_ok=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"vulkaninfo --summary (VK_ICD_FILENAMES={LAVAPIPE[0]})" in r.stdout


def test_too_old_headers_off_debian_stop_with_one_line(tmp_path: Path) -> None:
    """The headers fallback downloads Debian 13's libvulkan-dev with a Debian
    apt source, which an Ubuntu runner cannot use; there the lane stops with one line
    saying what to install, before any download."""
    r, stub, work = setup_step(tmp_path, installed=True, uid=0, device="DISCRETE_GPU",
                               headers_ok=False,
                               os_release='ID=ubuntu\nVERSION_ID="22.04"\nID_LIKE=debian\n')
    assert r.returncode == 1, r.stdout + r.stderr
    fail = [ln for ln in r.stdout.splitlines() if ln.startswith("FAIL")]
    assert len(fail) == 1 and "needs Debian, not ubuntu 22.04: install Vulkan-Headers " \
        "1.3.272 or later" in fail[0], r.stdout
    assert not (stub / "calls").exists() and not (work / "apt-trixie").exists()
    assert not (work / "lane.cmake").exists()


def test_an_unknown_step_is_refused(tmp_path: Path) -> None:
    r = subprocess.run(["bash", str(SCRIPT), "--step", "build", str(tmp_path)],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 2
    assert r.stderr == "vulkan-lane.sh: --step takes setup, ctest, check or archs, not 'build'\n"
