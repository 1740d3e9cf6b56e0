"""The vulkan lane's device facts: what a package says it was tested on, and how.

``release build --lane vulkan`` asks the freshly built worker what this machine
offers (``worker --devices --json``: the Vulkan loader's version and each device
ggml-vulkan runs on, with its driver) and writes it into the manifest as
``backend.tested_on``: measured by the build machine, never typed in. A machine
where ggml-vulkan has no device cannot build the package (its self-test could not
run there either). The shader compiler that turned ggml-vulkan's shaders into the
binary's SPIR-V is named with the toolchain.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from patchctl import procs
from patchctl.errors import EnvironmentFailure
from patchctl.release import documents
from patchctl.toolout import reason
from patchctl.untrusted import BadDocument, parse_json, printable, shorten

# How to show Mesa's CPU device (lavapipe) to ggml-vulkan, which skips CPU-type devices.
LAVAPIPE_HINT = ("on Mesa's CPU device (lavapipe): VK_ICD_FILENAMES="
                 "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json GGML_VK_VISIBLE_DEVICES=0")


def tested_on(build: Path, env: dict[str, str]) -> dict[str, Any]:
    """``{"loader", "devices"}`` from ``BUILD/bin/worker --devices --json``, on this machine.

    Raises EnvironmentFailure when ggml-vulkan has no device here."""
    worker = build / "bin" / "worker"
    try:
        proc = procs.capture([str(worker), "--devices", "--json"], env=env, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise EnvironmentFailure(f"`worker --devices` of the vulkan build did not run "
                                 f"({shorten(str(e))})") from e
    if proc.returncode != 0:
        raise EnvironmentFailure(f"`worker --devices` of the vulkan build failed "
                                 f"(exit {proc.returncode}): {shorten(reason(proc.stderr), 300)}")
    try:
        probe: dict[str, Any] = parse_json(proc.stdout, documents.DEVICES_SCHEMA)
    except BadDocument as e:
        raise EnvironmentFailure(f"`worker --devices --json` of the vulkan build: {e}") from e
    return from_probe(probe)


def from_probe(probe: dict[str, Any]) -> dict[str, Any]:
    """The manifest's ``tested_on`` from a ``worker --devices --json`` report."""
    used = probe.get("devices") or []
    if not used:
        seen = "; ".join(f"{d.get('name')} ({d.get('type')})"
                         for d in probe.get("physical_devices") or [])
        why = probe.get("error") or (f"the loader sees {seen}, which ggml-vulkan skips"
                                     if seen else "no device")
        raise EnvironmentFailure(
            f"lane vulkan: this machine has no Vulkan device that ggml-vulkan runs on "
            f"({printable(shorten(str(why), 200))}); a vulkan package is tested on one before "
            f"it is kept: build it where one is, e.g. {LAVAPIPE_HINT}")
    devices = []
    for d in used:
        physical = d.get("physical") or {}
        devices.append({"ggml": d["name"], "name": physical.get("name", d["description"]),
                        "type": physical.get("type", "unknown"),
                        "api_version": physical.get("api_version", "unknown"),
                        "driver": physical.get("driver", ""),
                        "driver_info": physical.get("driver_info", "")})
    return {"loader": str(probe.get("loader") or "unknown"), "devices": devices}


def shader_compiler(build: Path, env: dict[str, str]) -> dict[str, str]:
    """``{"glslc": "<first line of glslc --version>"}`` when the build compiled Vulkan
    shaders (CMakeCache names the glslc it used), else ``{}``."""
    cache = build / "CMakeCache.txt"
    glslc = ""
    if cache.is_file():
        for line in cache.read_text(errors="replace").splitlines():
            if line.startswith("Vulkan_GLSLC_EXECUTABLE:"):
                glslc = line.partition("=")[2].strip()
    if not glslc or not Path(glslc).is_file():
        return {}
    try:
        proc = procs.capture([glslc, "--version"], env=env,
                              timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return {"glslc": "unknown"}
    first = (proc.stdout.strip().splitlines() or ["unknown"])[0]
    return {"glslc": shorten(first, 80)}


def buildinfo_lines(backend: dict[str, Any]) -> str:
    """BUILDINFO's lines about the backend (none for cpu)."""
    if backend.get("name") != "vulkan":
        return ""
    tested = backend.get("tested_on") or {}
    devices = "".join(f"  {d['ggml']}: {d['name']} ({d['type']}, Vulkan {d['api_version']}, "
                      f"driver {d['driver']} {d['driver_info']})\n"
                      for d in tested.get("devices", []))
    return (f"vulkan: loader {backend.get('loader')} linked, headers {backend.get('headers')}\n"
            f"tested on (this build machine's `worker --devices`, loader "
            f"{tested.get('loader')}):\n{devices}")


def buildinfo_environment(backend: dict[str, Any]) -> str:
    """BUILDINFO's note on the environment a vulkan rebuild needs."""
    if backend.get("name") != "vulkan":
        return ""
    return ("; Vulkan_INCLUDE_DIR: the Vulkan headers above\n"
            "  (when the system's are older), VK_ICD_FILENAMES and GGML_VK_VISIBLE_DEVICES:\n"
            "  a device ggml-vulkan runs on. manifest.json's backend.tested_on is what this\n"
            "  machine's loader and driver reported: a rebuild is byte-identical where they\n"
            "  report the same")
