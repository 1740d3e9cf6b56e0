"""patchctl record: what every run record carries (evidence/2), from real runs."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

import pytest


def _record(cli, project: Path, ev: Path, *args: str):
    return cli("-C", str(project), "record", "--name", "run", "--evidence-dir", str(ev), *args)


def test_record_carries_host_backend_artifacts_splits_and_metrics(cli, project: Path,
                                                                  tmp_path: Path) -> None:
    ev = tmp_path / "ev"
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF whole model\n")
    splits = [tmp_path / f"m-0000{i}-of-00002.gguf" for i in (1, 2)]
    for i, s in enumerate(splits):
        s.write_bytes(f"split {i}\n".encode())
    metrics = tmp_path / "metrics.json"
    script = ("import json; json.dump({'tokens_per_s': 12.5, 'runs': [1, 2]}, "
              f"open({str(metrics)!r}, 'w'))")
    r = _record(cli, project, ev, "--backend", "cpu", "--artifact", str(model),
                "--split", str(splits[0]), "--split", str(splits[1]), "--metrics", str(metrics),
                "--", sys.executable, "-c", script)
    assert r.code == 0, r.err
    rec = json.loads((ev / "run.json").read_text())
    assert rec["schema"] == "patchctl.evidence/2"
    assert rec["commands"] == [[sys.executable, "-c", script]]
    assert rec["metrics"] == {"tokens_per_s": 12.5, "runs": [1, 2]}  # raw, as written
    assert [(a["role"], Path(a["path"]).name, a["sha256"], a["bytes"]) for a in rec["artifacts"]] \
        == [("artifact", "model.gguf", hashlib.sha256(model.read_bytes()).hexdigest(), 17)] + \
        [("split", s.name, hashlib.sha256(s.read_bytes()).hexdigest(), 8) for s in splits]
    assert rec["backend"] == {"name": "cpu", "driver": None}
    host = rec["host"]
    assert host["cpu"]["cores"] == os.cpu_count()
    assert host["arch"] and host["os"]
    assert isinstance(host["gpus"], list)
    assert host["network"]["hostname"]
    assert any(i["name"] == "lo" for i in host["network"]["interfaces"]) or sys.platform != "linux"
    if sys.platform == "linux":
        assert host["memory_bytes"] > 0 and host["cpu"]["model"]
    assert rec["stack"]["pin"] and rec["stack"]["fingerprint"]  # the upstream pin
    assert rec["runtime"] is None  # no --worker


def test_record_of_a_missing_artifact_is_bad_input(cli, project: Path, tmp_path: Path) -> None:
    r = _record(cli, project, tmp_path / "ev", "--split", str(tmp_path / "nope.gguf"), "--",
                sys.executable, "-c", "pass")
    assert r.code == 2
    assert "nope.gguf" in r.err
    assert not (tmp_path / "ev" / "run.json").exists()


def test_record_with_a_binary_that_is_no_worker_fails_cleanly(cli, project: Path,
                                                              tmp_path: Path) -> None:
    fake = tmp_path / "worker"
    fake.write_text("#!/bin/sh\nexit 7\n")
    fake.chmod(0o755)
    r = _record(cli, project, tmp_path / "ev", "--worker", str(fake), "--", sys.executable,
                "-c", "pass")
    assert r.code == 3
    assert "`worker --version --json` failed (exit 7" in r.err
    assert len(r.err.strip().splitlines()) == 1


def test_unreadable_metrics_are_recorded_as_an_error(cli, project: Path, tmp_path: Path) -> None:
    """The run happened: a metrics file it failed to write must not lose the record."""
    ev = tmp_path / "ev"
    r = _record(cli, project, ev, "--metrics", str(tmp_path / "absent.json"), "--",
                sys.executable, "-c", "pass")
    assert r.code == 0
    assert "absent.json" in json.loads((ev / "run.json").read_text())["metrics"]["error"]


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/cpuinfo")
def test_cpu_features_use_the_workers_names() -> None:
    from patchctl.records import hostinfo

    features = hostinfo.cpu_features()
    assert features
    if hostinfo.machine_arch() == "x86_64":
        assert "sse2" in features
        if "sse4_2" in features:
            assert "sse4.2" in features  # /proc spells it sse4_2, GCC sse4.2


def test_a_worker_identity_that_is_not_of_its_schema_is_one_failure(tmp_path: Path) -> None:
    """`record --worker` parsed the worker's `--version --json`
    with json.loads: 100,000 nested arrays gave a RecursionError traceback."""
    from patchctl.errors import EnvironmentFailure
    from patchctl.records.evidence import worker_identity

    for out in ("[" * 100_000, '{"stack": [1]}'):
        worker = tmp_path / "worker"
        worker.write_text(f"#!/bin/sh\nprintf '%s' '{out}'\n")
        worker.chmod(0o755)
        with pytest.raises(EnvironmentFailure, match=r"`worker --version --json` failed \("):
            worker_identity(worker)


def test_metrics_nested_too_deep_are_recorded_as_an_error(cli, project: Path,
                                                          tmp_path: Path) -> None:
    """`record --metrics FILE` read the file with json.loads, so
    a file nested 100,000 deep ended the command in a RecursionError traceback."""
    metrics = tmp_path / "metrics.json"
    metrics.write_text("[" * 100_000 + "]" * 100_000)
    r = cli("-C", str(project), "record", "--name", "deep", "--metrics", str(metrics), "--",
            sys.executable, "-c", "pass")
    assert r.code == 0 and "Traceback" not in r.err, r.err
    rec = json.loads((project / "evidence/deep.json").read_text())
    assert rec["metrics"] == {"error": f"{metrics}: nested deeper than 64 levels"}


# vulkaninfo --summary of Mesa 22.3.6's lavapipe (Debian 12), abridged to the parts read.
VULKANINFO_SUMMARY = """\
==========
VULKANINFO
==========

Vulkan Instance Version: 1.3.239


Instance Extensions: count = 20
-------------------------------
VK_EXT_debug_report                    : extension revision 10

Devices:
========
GPU0:
	apiVersion         = 1.3.230
	driverVersion      = 0.0.1
	vendorID           = 0x10005
	deviceType         = PHYSICAL_DEVICE_TYPE_CPU
	deviceName         = llvmpipe (LLVM 15.0.6, 256 bits)
	driverID           = DRIVER_ID_MESA_LLVMPIPE
	driverName         = llvmpipe
	driverInfo         = Mesa 22.3.6 (LLVM 15.0.6)
	conformanceVersion = 1.3.1.1
"""


def test_vulkaninfo_summary_names_the_instance_and_each_device() -> None:
    """A Vulkan run's record names the driver, the device and the Vulkan version."""
    from patchctl.records import hostinfo

    assert hostinfo.parse_vulkaninfo(VULKANINFO_SUMMARY) == {
        "instance": "1.3.239",
        "devices": [{"api": "1.3.230", "type": "PHYSICAL_DEVICE_TYPE_CPU",
                     "name": "llvmpipe (LLVM 15.0.6, 256 bits)", "driver": "llvmpipe",
                     "driver_info": "Mesa 22.3.6 (LLVM 15.0.6)"}]}
    # "= " in a line before the device list is not a device's field
    assert hostinfo.parse_vulkaninfo("a = b\nVulkan Instance Version: 1.4.0\n") == {
        "instance": "1.4.0", "devices": []}


LAVAPIPE_ICD = Path("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json")


@pytest.mark.skipif(not LAVAPIPE_ICD.exists() or shutil.which("vulkaninfo") is None,
                    reason="needs Mesa's lavapipe and vulkaninfo (a record without vulkaninfo "
                           "says null): apt-get install mesa-vulkan-drivers vulkan-tools")
@pytest.mark.parametrize("icd", ["lavapipe", "none"])
def test_a_vulkan_record_names_the_device_the_loader_finds(cli, project: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          icd: str) -> None:
    """`record --backend vulkan` names lavapipe's driver and device, and none where
    the loader finds no driver (VK_ICD_FILENAMES naming no file)."""
    monkeypatch.setenv("VK_ICD_FILENAMES", str(LAVAPIPE_ICD if icd == "lavapipe"
                                               else tmp_path / "none.json"))
    r = _record(cli, project, tmp_path / "ev", "--backend", "vulkan", "--",
                sys.executable, "-c", "pass")
    assert r.code == 0, r.err
    rec = json.loads((tmp_path / "ev" / "run.json").read_text())
    vulkan = rec["host"]["vulkan"]
    if icd == "lavapipe":
        assert [d["driver"] for d in vulkan["devices"]] == ["llvmpipe"]
        assert rec["backend"]["name"] == "vulkan"
        assert rec["backend"]["driver"].startswith("llvmpipe Mesa ")
        assert rec["backend"]["device"].startswith("llvmpipe")
        assert rec["backend"]["api"] == vulkan["devices"][0]["api"]
    else:
        assert vulkan["devices"] == []
        assert rec["backend"] == {"name": "vulkan", "driver": None, "device": None, "api": None}
