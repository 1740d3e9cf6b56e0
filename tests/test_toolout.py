"""patchctl/toolout.py: the reason patchctl relays when CMake, a compiler, git or the worker
fails, read from their real output (real cmake, ninja, cc and git in temp dirs)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from patchctl.errors import GitError
from patchctl.gitrepo.core import git_env, run_git
from patchctl.toolout import MAX_CHARS, MAX_CMAKE_PARTS, MAX_ERROR_LINES, reason
from tests.builders import git
from tests.system_packages import tool

CMAKE, NINJA = tool("cmake"), tool("ninja")
needs_cmake = pytest.mark.skipif(not (CMAKE and NINJA),
                                 reason="cmake and ninja are needed: pip install cmake ninja")

# As native/cmake/Libraries.cmake writes a refusal: a long first paragraph (CMake wraps it
# at 80 columns), then indented command lines (kept as they are), from inside two functions
# (so CMake prints a call stack after the message).
REFUSING = """cmake_minimum_required(VERSION 3.21)
project(probe LANGUAGES NONE)
function(fail what)
  message(FATAL_ERROR "worker: ${what}.\\n"
    "Found: none (thingConfig.cmake is not in CMAKE_PREFIX_PATH or the system prefixes, "
    "nor anywhere else)\\n"
    "Install it and configure again:\\n"
    "  apt-get install thing-dev    # Debian/Ubuntu\\n"
    "  dnf install thing-devel      # Fedora\\n"
    "or set thing_DIR.")
endfunction()
function(require_thing)
  fail("thing not found")
endfunction()
require_thing()
"""


def cmake(tmp_path: Path, lists: str, *args: str) -> str:
    """Configure a project of ``lists`` as `release build` does; stdout and stderr, in order."""
    source = tmp_path / "src"
    source.mkdir(exist_ok=True)
    (source / "CMakeLists.txt").write_text(lists)
    assert CMAKE and NINJA
    proc = subprocess.run([CMAKE, "-S", str(source), "-B", str(tmp_path / "build"), "-G", "Ninja",
                           f"-DCMAKE_MAKE_PROGRAM={NINJA}", *args], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, check=False, timeout=120)
    assert proc.returncode != 0, proc.stdout
    return proc.stdout


@needs_cmake
def test_cmake_error_is_its_message_not_its_call_stack(tmp_path: Path) -> None:
    """Bug (bare machine, item 2): `release build` relayed a refused configure as its last
    three lines, `cmake/Vulkan.cmake:25 (worker_library_fail) | CMakeLists.txt:97
    (worker_require_vulkan) | -- Configuring incomplete, errors occurred!`."""
    out = cmake(tmp_path, REFUSING)
    assert "Call Stack (most recent call first):" in out and "(require_thing)" in out
    assert reason(out) == (
        "worker: thing not found. | Found: none (thingConfig.cmake is not in CMAKE_PREFIX_PATH "
        "or the system prefixes, nor anywhere else) | Install it and configure again: | "
        "apt-get install thing-dev # Debian/Ubuntu | dnf install thing-devel # Fedora | "
        "or set thing_DIR.")


@needs_cmake
def test_cmake_error_keeps_the_first_error_and_a_bounded_message(tmp_path: Path) -> None:
    paragraphs = "\\n".join(f"part {i}" for i in range(20))
    out = cmake(tmp_path, "cmake_minimum_required(VERSION 3.21)\nproject(p LANGUAGES NONE)\n"
                f'message(SEND_ERROR "first: {paragraphs}")\n'
                'message(FATAL_ERROR "second")\n')
    why = reason(out)
    assert why.startswith("first: part 0 | part 1 | ") and "second" not in why
    assert why.count(" | ") == MAX_CMAKE_PARTS - 1


@needs_cmake
def test_cmake_error_without_a_location(tmp_path: Path) -> None:
    """`CMake Error: TEXT` (no file, no call stack): the text."""
    assert CMAKE
    proc = subprocess.run([CMAKE, "-S", str(tmp_path / "nowhere"), "-B", str(tmp_path / "b")],
                          capture_output=True, text=True, check=False, timeout=60)
    assert proc.returncode != 0
    why = reason(proc.stdout + proc.stderr)
    assert why.startswith(f'The source directory "{tmp_path / "nowhere"}" does not exist.'), why


@needs_cmake
@pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")),
                    reason="a C compiler is needed")
def test_compiler_error_is_its_error_lines_not_ninja_stopping(tmp_path: Path) -> None:
    """A build that fails to compile: the compiler's `error:` lines, not ninja's last words
    (`ninja: build stopped: subcommand failed.`)."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "broken.c").write_text("int f(void) { return undeclared_name; }\n")
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.21)\nproject(p C)\nadd_library(broken broken.c)\n")
    assert CMAKE and NINJA
    build = tmp_path / "build"
    subprocess.run([CMAKE, "-S", str(source), "-B", str(build), "-G", "Ninja",
                    f"-DCMAKE_MAKE_PROGRAM={NINJA}"], capture_output=True, check=True, timeout=120)
    proc = subprocess.run([CMAKE, "--build", str(build)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, check=False, timeout=120)
    assert proc.returncode != 0 and "build stopped" in proc.stdout
    why = reason(proc.stdout)
    assert "broken.c:1:" in why and "error:" in why and "undeclared_name" in why, why
    assert "build stopped" not in why and "FAILED" not in why


def test_git_error_is_its_error_lines_not_its_hints(tmp_path: Path) -> None:
    """`git am` of a patch that does not apply ends with `hint:` lines; GitError (and every
    message that quotes git) names the error instead."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "a.txt").write_text("one\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "one")
    (repo / "a.txt").write_text("two\n")
    git(repo, "commit", "-q", "-am", "two")
    patch = git(repo, "format-patch", "--stdout", "-1")
    (repo / "a.txt").write_text("three\n")
    git(repo, "commit", "-q", "-am", "three")
    (tmp_path / "two.patch").write_text(patch)
    with pytest.raises(GitError) as raised:
        run_git(["am", str(tmp_path / "two.patch")], repo=repo,
                env=git_env(GIT_COMMITTER_NAME="T", GIT_COMMITTER_EMAIL="t@example.invalid"))
    assert "hint:" in raised.value.stderr
    message = str(raised.value)
    assert "patch does not apply" in message and "hint" not in message, message


def test_worker_error_is_its_message_not_its_usage() -> None:
    """The worker writes `worker: WHY` and then its usage (native/src/worker/main.cpp)."""
    said = ("worker: --bogus: unknown option\n"
            "usage: worker [--version | --capabilities | --check | --self-test] [--json]\n"
            "exit codes: 0 ok, 2 usage, 3 output or library error\n")
    assert reason(said) == "worker: --bogus: unknown option"
    assert reason(said.encode()) == "worker: --bogus: unknown option"


def test_bounds_and_fallbacks() -> None:
    errors = "".join(f"f.c:{i}:1: error: e{i}\n" for i in range(10))
    assert reason(errors).count("error:") == MAX_ERROR_LINES
    assert reason("a\nb\nc\nd\nhint: try again\n") == "b | c | d"
    assert reason("") == reason(None) == "no output"
    assert len(reason("x" * 5000)) == MAX_CHARS
    assert reason("error: \x1b[31mred\n") == "error: \\x1b[31mred"
