"""What this machine has of the system packages some tests need: the one place that says.

README command 2 assumes Python, git and a C compiler; everything else comes from PyPI
except these (Debian names; .ci/run installs the first two):

| name | package | what it adds |
| --- | --- | --- |
| nlohmann_json | nlohmann-json3-dev | builds of native/ (JSON) |
| OpenSSL | libssl-dev | builds of native/ (libcrypto's SHA-256) |
| Vulkan | libvulkan-dev | the vulkan lane's configure (loader and headers) |
| quilt | quilt | `quilt push -a` of an exported series |

A test that needs one says so with ``@needs("OpenSSL", ...)`` (conftest.py skips it
where one is missing) or, in a fixture, ``require(...)``; the skip reason names what is
missing and the one line that installs it. Libraries are probed by the very check
native/ configure runs (native/cmake/Libraries.cmake, Vulkan.cmake), in a project with
no compiler, once per session: ~0.2 s each.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

MODULES = Path(__file__).resolve().parents[1] / "native" / "cmake"
# name -> (Debian package, the CMake check that finds it, or None for a program on PATH)
PACKAGES: dict[str, tuple[str, str | None]] = {
    "nlohmann_json": ("nlohmann-json3-dev",
                      "include(Libraries)\nworker_require_nlohmann_json(found)"),
    "OpenSSL": ("libssl-dev", "include(Libraries)\nworker_require_openssl(found)"),
    "Vulkan": ("libvulkan-dev", "include(Libraries)\ninclude(Vulkan)\n"
               "worker_require_vulkan(found loader headers)"),
    "quilt": ("quilt", None),
}
LIBRARIES = ("nlohmann_json", "OpenSSL")  # what every build of native/ needs


def needs(*names: str) -> pytest.MarkDecorator:
    """Marks a test that needs these system packages (checked in conftest.py)."""
    unknown = set(names) - set(PACKAGES)
    assert not unknown, f"unknown system packages {sorted(unknown)}"
    return pytest.mark.needs(*names)


def install_line(names: tuple[str, ...] | list[str]) -> str:
    return "apt-get install " + " ".join(PACKAGES[n][0] for n in names)


def missing(*names: str) -> str | None:
    """None when this machine has every one of ``names``; else what is missing and the
    one line that installs it."""
    gone = [n for n in names if _why_missing(n)]
    if not gone:
        return None
    whys = "; ".join(str(_why_missing(n)) for n in gone)
    return f"{whys}: {install_line(gone)}"


def require(*names: str) -> None:
    """Skips the calling test (or fixture) where one of ``names`` is missing."""
    why = missing(*names)
    if why:
        pytest.skip(why)


def tool(name: str) -> str | None:
    """A program from the test venv (its cmake/ninja wheels sit beside the interpreter,
    which need not be on PATH) or from PATH."""
    search = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return shutil.which(name, path=search)


@functools.cache
def _why_missing(name: str) -> str | None:
    check = PACKAGES[name][1]
    if check is None:
        return None if tool(name) else f"{name} is not installed"
    cmake, ninja = tool("cmake"), tool("ninja")
    if not (cmake and ninja):
        return f"{name} cannot be looked for without cmake and ninja (pip install cmake ninja)"
    with tempfile.TemporaryDirectory(prefix="system-packages-") as tmp:
        source = Path(tmp) / "probe"
        source.mkdir()
        (source / "CMakeLists.txt").write_text(
            "cmake_minimum_required(VERSION 3.21)\n"
            # a language, as the worker's configure has: it sets the multiarch directory
            # (lib/x86_64-linux-gnu) where find_package looks for libvulkan.so
            "project(probe LANGUAGES C)\n"
            f'list(APPEND CMAKE_MODULE_PATH "{MODULES.as_posix()}")\n'
            f"{check}\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith("CMAKE_")}
        proc = subprocess.run([cmake, "-S", str(source), "-B", str(Path(tmp) / "build"),
                               "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}"],
                              capture_output=True, text=True, timeout=120, check=False, env=env)
    if proc.returncode == 0:
        return None
    lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
    # configure's own first line: "worker: nlohmann_json not found." (or "... is too old")
    return next((ln.rstrip(".") for ln in lines if ln.startswith("worker:")),
                f"{name} not found")
