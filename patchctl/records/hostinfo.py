"""What the machine is: CPU, memory, GPU and driver, Vulkan devices, network, OS.

Every run record carries this (``patchctl record``), and ``release verify``
checks a package's lane against :func:`cpu_features`. Linux reads /proc and
/sys; elsewhere the fields it cannot learn are None, never guessed.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

from patchctl import procs

# The spelling differs between GCC's __builtin_cpu_supports (what the worker
# and native/cmake/Lanes.cmake use) and /proc/cpuinfo.
_CPUINFO_NAMES = {"sse4.2": "sse4_2", "sse4.1": "sse4_1"}


def machine_arch() -> str:
    """x86_64, aarch64, ... normalized as native/cmake/Lanes.cmake does."""
    arch = platform.machine().lower()
    return {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}.get(arch, arch)


def _cpuinfo() -> dict[str, str]:
    """The first processor's block of /proc/cpuinfo; empty where there is none."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return {}
    info: dict[str, str] = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        key, sep, value = line.partition(":")
        if sep:
            info.setdefault(key.strip(), value.strip())
    return info


def cpu_features() -> set[str] | None:
    """CPU flags as the worker names them; None when the OS does not say."""
    info = _cpuinfo()
    flags = info.get("flags") or info.get("Features")
    if flags is None:
        return None
    have = set(flags.split())
    have |= {ours for ours, theirs in _CPUINFO_NAMES.items() if theirs in have}
    return have


def _memory_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _gpus() -> list[dict[str, str]]:
    """NVIDIA GPUs as nvidia-smi reports them (name, driver, memory); [] without one."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        proc = procs.capture([smi, "--query-gpu=name,driver_version,memory.total",
                               "--format=csv,noheader"], timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    gpus = []
    for line in proc.stdout.splitlines() if proc.returncode == 0 else []:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3:
            gpus.append({"name": parts[0], "driver": parts[1], "memory": parts[2]})
    return gpus


# vulkaninfo --summary's device fields, as a run record names them.
_VULKAN_FIELDS = {"deviceName": "name", "deviceType": "type", "apiVersion": "api",
                  "driverName": "driver", "driverInfo": "driver_info"}


def parse_vulkaninfo(text: str) -> dict[str, Any]:
    """The instance version and the devices of ``vulkaninfo --summary``'s text."""
    instance = None
    devices: list[dict[str, str]] = []
    in_devices = False
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("Vulkan Instance Version:"):
            instance = line.split(":", 1)[1].strip()
        elif line == "Devices:":
            in_devices = True
        elif in_devices and re.fullmatch(r"GPU\d+:", line):
            devices.append({})
        elif devices and "=" in line:
            key, value = (part.strip() for part in line.split("=", 1))
            if key in _VULKAN_FIELDS:
                devices[-1][_VULKAN_FIELDS[key]] = value
    return {"instance": instance, "devices": devices}


def _vulkan() -> dict[str, Any] | None:
    """The Vulkan loader's view (VK_ICD_FILENAMES and the like apply): the instance
    version and each device's name, type, API version and driver; None without
    vulkaninfo, no devices where the loader finds no driver."""
    tool = shutil.which("vulkaninfo")
    if tool is None:
        return None
    try:
        proc = procs.capture([tool, "--summary"], timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_vulkaninfo(proc.stdout if proc.returncode == 0 else "")


def _network() -> dict[str, Any]:
    """Host name and each interface's state, MTU and link speed (Linux /sys)."""
    interfaces = []
    for _, name in sorted(socket.if_nameindex(), key=lambda x: x[1]):
        entry: dict[str, object] = {"name": name}
        base = Path("/sys/class/net") / name
        for key, conv in (("operstate", str), ("mtu", int), ("speed", int)):
            try:
                entry[key] = conv((base / key).read_text().strip())
            except (OSError, ValueError):
                entry[key] = None  # e.g. speed of a virtual or down link
        interfaces.append(entry)
    return {"hostname": socket.gethostname(), "interfaces": interfaces}


def describe() -> dict[str, Any]:
    """The whole host, as a run record stores it."""
    info = _cpuinfo()
    gpus = _gpus()
    return {
        "os": platform.platform(),
        "arch": machine_arch(),
        "cpu": {"model": info.get("model name") or platform.processor() or None,
                "cores": os.cpu_count(),
                "features": sorted(cpu_features() or ())},
        "memory_bytes": _memory_bytes(),
        "gpus": gpus,
        "driver": gpus[0]["driver"] if gpus else None,
        "vulkan": _vulkan(),
        "network": _network(),
    }
