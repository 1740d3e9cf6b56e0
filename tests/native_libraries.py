"""Whether native/ finds its libraries here: nlohmann/json and OpenSSL's libcrypto.

Configure refuses without them (native/cmake/Libraries.cmake) and CI installs
them (.ci/run). Where they cannot be installed, the tests that build native/
skip with configure's own refusal as the reason, as they do without cmake and
ninja. The probe runs that same check in a project with no compiler: ~0.2 s.
"""

from __future__ import annotations

import functools
import os
import subprocess
import tempfile
from pathlib import Path

MODULES = Path(__file__).resolve().parents[1] / "native" / "cmake"
INSTALL = "apt-get install nlohmann-json3-dev libssl-dev"


@functools.cache
def missing(cmake: str, ninja: str) -> str | None:
    """None when configure would find both libraries; else why not, in one line."""
    with tempfile.TemporaryDirectory(prefix="native-libraries-") as tmp:
        source = Path(tmp) / "probe"
        source.mkdir()
        (source / "CMakeLists.txt").write_text(
            "cmake_minimum_required(VERSION 3.21)\n"
            "project(probe LANGUAGES NONE)\n"
            f'list(APPEND CMAKE_MODULE_PATH "{MODULES.as_posix()}")\n'
            "include(Libraries)\n"
            "worker_require_libraries(found)\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith("CMAKE_")}
        proc = subprocess.run([cmake, "-S", str(source), "-B", str(Path(tmp) / "build"),
                               "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}"],
                              capture_output=True, text=True, timeout=120, check=False, env=env)
    if proc.returncode == 0:
        return None
    lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
    why = next((ln for ln in lines if ln.startswith("worker:")), lines[-1] if lines else "")
    return f"{why} native/ needs its libraries: {INSTALL}"
