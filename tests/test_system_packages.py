"""tests/system_packages.py: README command 2 passes on a machine without the optional
system packages, and the tests of the refusals run there.

The check runs the tests that need a library again in a private mount namespace where
empty file systems cover the library's headers and CMake files (``unshare -m``, as root;
``unshare -rm`` otherwise, where user namespaces are allowed), so CMake finds nothing; it
skips where neither is permitted. CI runs it as root on Debian (.ci/run).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import system_packages
from tests.system_packages import LIBRARIES, install_line, missing

REPO = Path(__file__).resolve().parents[1]
# Where Debian, Fedora and a /usr/local install keep each library's headers and CMake files.
PLACES = {
    "nlohmann_json": ["/usr/include/nlohmann", "/usr/share/cmake/nlohmann_json",
                      "/usr/lib/cmake/nlohmann_json", "/usr/lib64/cmake/nlohmann_json",
                      "/usr/local/include/nlohmann", "/usr/local/share/cmake/nlohmann_json"],
    "OpenSSL": ["/usr/include/openssl", "/usr/local/include/openssl"],
    "Vulkan": ["/usr/include/vulkan", "/usr/local/include/vulkan"],
}
# Mount an empty tmpfs on each directory before "--", then run the rest.
_HIDE = ('while [ "$1" != -- ]; do mount -t tmpfs -o size=64k,mode=755 none "$1" || exit 97; '
         'shift; done; shift; exec "$@"')


def hidden(names: tuple[str, ...], argv: list[str]) -> subprocess.CompletedProcess[str]:
    """``argv`` run where the libraries ``names`` are hidden from it (and from CMake)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("no unshare here (util-linux) to hide the libraries with")
    places = [d for n in names for d in PLACES[n] if Path(d).is_dir()]
    flags = ["-m"] if os.geteuid() == 0 else ["-r", "-m"]
    env = {k: v for k, v in os.environ.items()
           if k not in ("Vulkan_INCLUDE_DIR", "VULKAN_SDK") and not k.startswith("CMAKE_")}
    return subprocess.run([unshare, *flags, "sh", "-c", _HIDE, "sh", *places, "--", *argv],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=1800,
                          check=False)


def hide_or_skip(names: tuple[str, ...]) -> None:
    """Skips unless the probe, run with ``names`` hidden, finds each of them missing."""
    probe = hidden(names, [sys.executable, "-c", "import sys\nfrom tests import system_packages"
                           "\nprint(all(system_packages.missing(n) for n in sys.argv[1:]))",
                           *names])
    if probe.returncode != 0:
        pytest.skip(f"cannot hide libraries here (unshare: {probe.stderr.strip()[-200:]})")
    if probe.stdout.strip() != "True":
        pytest.skip(f"{', '.join(names)} found outside {PLACES}: cannot hide them")


def pytest_hidden(names: tuple[str, ...], *args: str) -> tuple[str, dict[str, str]]:
    """A pytest run of ``args`` with ``names`` hidden, which must pass: its output and each
    test's outcome (``-rA``'s short summary)."""
    hide_or_skip(names)
    proc = hidden(names, [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                          "--no-header", "-rA", *args])
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    outcomes = {m.group(2): m.group(1)
                for m in re.finditer(r"^(PASSED|SKIPPED|FAILED|ERROR) (\S+)", out, re.M)}
    return out, outcomes


@pytest.mark.slow
def test_without_the_libraries_their_tests_skip_and_the_refusals_name_them() -> None:
    """Bug (bare machine, item 1): README command 2 failed five tests where nlohmann-json3-dev
    and libssl-dev were not installed: tests that build native/ without saying so, and one
    whose assertion assumed the other library was there. Now each test that needs one
    skips with the install line, and the refusals are tested there."""
    names = (*LIBRARIES, "Vulkan")
    out, outcomes = pytest_hidden(
        names, "tests/test_native.py", "tests/test_release.py", "tests/test_release_vulkan.py",
        "tests/test_corpus_kill.py::test_kill_release_build")
    skips = re.findall(r"^SKIPPED \[\d+\] \S+: (.*)$", out, re.M)
    assert len([s for s in skips if s.endswith(install_line(list(LIBRARIES)))]) >= 20, out
    for skip in skips:  # whatever is missing, the skip says how to install it
        assert "not found" not in skip or "apt-get install" in skip, skip
    for test in ("tests/test_release.py::test_release_build_without_a_library_names_it_and_how_"
                 "to_install_it[cpu]",
                 "tests/test_release.py::test_release_build_without_a_library_names_it_and_how_"
                 "to_install_it[vulkan]",
                 "tests/test_native.py::test_missing_library_is_refused[nlohmann_json]",
                 "tests/test_native.py::test_system_packages_probe_names_what_to_install"):
        assert outcomes.get(test) == "PASSED", (test, out[-6000:])


# What runs (and passes) with these hidden and the other libraries found.
REFUSALS = {
    "OpenSSL": [*(f"tests/test_release.py::test_release_build_without_a_library_names_it_and_"
                  f"how_to_install_it[{lane}]" for lane in ("cpu", "vulkan")),
                "tests/test_native.py::test_missing_library_is_refused[OpenSSL]"],
    "Vulkan": ["tests/test_release_vulkan.py::test_release_build_of_the_vulkan_lane_refuses_"
               "an_upstream_without_it",
               "tests/test_release_vulkan.py::test_vulkan_lane_without_the_loader_or_headers_"
               "is_refused"],
}


@pytest.mark.slow
@pytest.mark.parametrize("hide", ["OpenSSL", "Vulkan"])
def test_each_refusal_names_its_library(hide: str) -> None:
    """Item 2: `release build`'s refusal for a missing OpenSSL (nlohmann_json found) and for
    the vulkan lane without the Vulkan loader and headers (the libraries found) is what
    configure wrote, not CMake's call stack; on a machine that has them, hidden."""
    shown = [n for n in LIBRARIES if n != hide]
    why = missing(*shown)
    if why:
        pytest.skip(f"the refusal for {hide} shows only where the rest is found: {why}")
    _, outcomes = pytest_hidden(
        (hide, "Vulkan"), *sorted({t.split("::")[0] for t in REFUSALS[hide]}),
        "-k", " or ".join(t.split("::")[1].split("[")[0] for t in REFUSALS[hide]))
    for test in REFUSALS[hide]:
        assert outcomes.get(test) == "PASSED", (test, outcomes)


def test_install_line_names_each_package_once() -> None:
    assert install_line(list(LIBRARIES)) == "apt-get install nlohmann-json3-dev libssl-dev"
    assert system_packages.missing() is None
