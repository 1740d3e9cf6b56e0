"""native/: the worker's out-of-tree CMake build, driven with real cmake and ninja.

Every test configures a private copy of native/ in tmp_path (or points -B
there), so nothing is written into the repository's build/ and tests can run
in parallel. Stamps and locks written by hand follow docs/FORMATS.md; the
consumer tests use the real `patchctl apply --into`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import system_packages
from tests.builders import Upstream
from tests.system_packages import LIBRARIES, needs

REPO = Path(__file__).resolve().parents[1]
NATIVE = REPO / "native"
# Read at import: the autouse isolation fixture clears PATCHCTL_* for each test.
LLAMA_CPP = os.environ.get("PATCHCTL_LLAMA_CPP", "")

PIN = "45155597aa23243c5f6d10064bd9bca3eaddee16"
FINGERPRINT = "0123456789abcdef" * 4
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
PATCHES = [
    ("0001-llama-add-layer-range-loading.patch", 1, "a" * 64),
    ("0002-ggml-fix.patch", 0, "b" * 64),
]
CPU_LANE_TESTS = {
    "compute.smoke.threads1", "compute.smoke.threads2", "compute.smoke.threads4",
    "identity.json_matches_lock", "identity.text", "capabilities.only_certified",
    "stamp.missing", "stamp.fingerprint", "stamp.edited", "stamp.accepts", "selftest.worker",
    "frame.codec", "core.json_sha256", "core.sha256_unavailable", "core.tls_key",
}
# The stage mode's CTests, registered only in a consumer build against llama.cpp.
STAGE_TESTS = {
    "pipeline.write_model", "pipeline.two_stage", "pipeline.three_stage", "pipeline.uneven",
    *(f"pipeline.refuses.{name}" for name in (
        "truncated", "checksum", "width", "magic", "tokens", "silent", "next-dies", "head-drops",
        "head-vanishes",
        # a hostile peer costs bounded memory and time.
        "huge", "slow", "second-peer", "nan", "inf", "positions", "past-ctx", "vocab")),
    # TLS 1.3 links with a pre-shared key.
    *(f"pipeline.tls.{name}" for name in (
        "ok", "wrong-key", "plain-client", "on-plain", "silent", "drive", "key-mode",
        "resume_middle",
        "resume_first")),
    *(f"pipeline.tls.refuses.{name}" for name in (
        "plain-listen", "plain-next", "plain-connect", "key-and-plain", "key-missing")),
    "pipeline.write_other_model", "pipeline.checkpoint.resume_middle",
    "pipeline.checkpoint.resume_first",
    "pipeline.checkpoint.refusals",
    "pipeline.offload.two_stage", "pipeline.offload.partial",
}


CMAKE, CTEST, NINJA = (system_packages.tool(t) for t in ("cmake", "ctest", "ninja"))
needs_tools = pytest.mark.skipif(
    not (CMAKE and CTEST and NINJA),
    reason="cmake, ctest and ninja are needed: pip install cmake ninja")
posix_only = pytest.mark.skipif(os.name != "posix", reason="fakes tools with shell scripts")


def tool_env(**extra: str) -> dict[str, str]:
    """The environment for cmake: our ninja first, no inherited CMAKE_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CMAKE_")}
    env["PATH"] = os.pathsep.join([str(Path(NINJA).parent), env.get("PATH", "")]) \
        if NINJA else env.get("PATH", "")
    env.update(extra)
    return env


def run(args: list, *, cwd: Path | None = None, env: dict | None = None,
        check: bool = True, timeout: int = 900) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(a) for a in args], cwd=cwd, env=env or tool_env(),
                          capture_output=True, text=True, timeout=timeout, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} exited {proc.returncode}\n"
                             f"--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}")
    return proc


def flat(text: str) -> str:
    """CMake reflows messages; compare with all whitespace runs as one space."""
    return " ".join(text.split())


def lock_text(*, name: str = "llama.cpp", pin: str = PIN, fingerprint: str = FINGERPRINT,
              patches: list[tuple[str, int, str]] = PATCHES) -> str:
    lines = ["# patchctl stack lock: written by `patchctl lock`; do not edit by hand.",
             "format = 1", 'algorithm = "pcfp2"', f'name = "{name}"', f'pin = "{pin}"',
             f'fingerprint = "{fingerprint}"']
    for file, strip, digest in patches:
        lines += ["", "[[patch]]", f'file = "{file}"', f"strip = {strip}", f'digest = "{digest}"']
    return "\n".join(lines) + "\n"


def copy_native(root: Path, lock: str | None = None) -> Path:
    """native/ copied to root/native with root/stack/stack.lock, as in the repository."""
    dest = root / "native"
    shutil.copytree(NATIVE, dest, ignore=shutil.ignore_patterns("CMakeCache.txt", "CMakeFiles"))
    (root / "stack").mkdir(parents=True, exist_ok=True)
    (root / "stack" / "stack.lock").write_text(lock if lock is not None else lock_text())
    return dest


def configure(source: Path, build: Path, *args: str, check: bool = True,
              env: dict | None = None) -> subprocess.CompletedProcess[str]:
    return run([CMAKE, "-S", source, "-B", build, "-G", "Ninja", *args], check=check, env=env)


def manifest(root: Path) -> str:
    """docs/FORMATS.md's manifest, written from the spec, independent of patchctl."""
    entries = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if here == root and ".git" in dirnames:
            dirnames.remove(".git")
        linked_dirs = [d for d in dirnames if (here / d).is_symlink()]
        for name in filenames + linked_dirs:
            path = here / name
            rel = path.relative_to(root).as_posix()
            if rel == ".patchctl-stamp":
                continue
            data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
            entries.append((rel.encode(), hashlib.sha256(data).hexdigest()))
    text = "".join(f"{digest}  {rel.decode()}\n" for rel, digest in sorted(entries))
    return hashlib.sha256(text.encode()).hexdigest()


def make_fixture_tree(root: Path) -> Path:
    """A small upstream-like tree: a CMake INTERFACE target, a link, a `[id]` dir."""
    root.mkdir(parents=True)
    (root / "CMakeLists.txt").write_text("add_library(fixture_upstream INTERFACE)\n")
    (root / "src").mkdir()
    (root / "src" / "fixture.c").write_text("int fixture(void) { return 42; }\n")
    (root / "routes" / "[id]").mkdir(parents=True)
    (root / "routes" / "[id]" / "page.txt").write_text("route\n")
    (root / "fixture-link.c").symlink_to("src/fixture.c")
    return root


def write_stamp(tree: Path, *, fingerprint: str = FINGERPRINT, pin: str = PIN,
                digest: str | None = None, tree_id: str = EMPTY_TREE) -> None:
    (tree / ".patchctl-stamp").write_text(
        "# patchctl apply stamp: DIR = pin + stack; do not edit by hand.\n"
        "format = 1\n"
        'algorithm = "pcfp2"\n'
        'name = "llama.cpp"\n'
        f'pin = "{pin}"\n'
        f'fingerprint = "{fingerprint}"\n'
        f'tree = "{tree_id}"\n'
        f'manifest = "{digest or manifest(tree)}"\n'
        'patches = ["0001-llama-add-layer-range-loading.patch", "0002-ggml-fix.patch"]\n')


def worker_json(build: Path, *args: str) -> dict:
    return json.loads(run([build / "bin" / "worker", *args, "--json"]).stdout)


@dataclass
class Lane:
    native: Path
    build: Path
    ctest_out: str


@pytest.fixture(scope="module")
def cpu_lane(tmp_path_factory: pytest.TempPathFactory) -> Lane:
    """The cpu presets end to end in a copy of native/ (binaries in <copy>/../build)."""
    if not (CMAKE and CTEST and NINJA):
        pytest.skip("cmake, ctest and ninja are needed: pip install cmake ninja")
    system_packages.require(*LIBRARIES)
    native = copy_native(tmp_path_factory.mktemp("lane"))
    run([CMAKE, "--preset", "cpu"], cwd=native)
    run([CMAKE, "--build", "--preset", "cpu"], cwd=native)
    ctest = run([CTEST, "--preset", "cpu"], cwd=native)
    return Lane(native, native.parent / "build" / "native-cpu", ctest.stdout)


# --- the CPU lane ------------------------------------------------------------

@pytest.mark.slow
def test_cpu_preset_configures_builds_and_passes_ctest(cpu_lane: Lane) -> None:
    assert (cpu_lane.build / "bin" / "worker").is_file()
    # CTest 3.x says "100% tests passed, 0 tests failed out of 10"; 4.x drops the middle.
    assert re.search(rf"100% tests passed(, 0 tests failed)? out of {len(CPU_LANE_TESTS)}\n",
                     cpu_lane.ctest_out)
    for name in CPU_LANE_TESTS:
        assert f" {name} " in cpu_lane.ctest_out, name
    # The identity header is generated into the build tree, never the source.
    assert (cpu_lane.build / "generated" / "worker" / "build_identity.hpp").is_file()
    assert not list(cpu_lane.native.rglob("build_identity.hpp"))


@pytest.mark.slow
def test_identity_json_matches_the_lock(cpu_lane: Lane) -> None:
    identity = worker_json(cpu_lane.build, "--version")
    assert identity["stack"] == {
        "algorithm": "pcfp2", "name": "llama.cpp", "pin": PIN, "fingerprint": FINGERPRINT,
        "short": FINGERPRINT[:16],
        "patches": [{"file": f, "strip": s, "digest": d} for f, s, d in PATCHES],
    }
    assert identity["protocol_version"] == 4
    assert identity["engine_version"] == "0.1.0"
    assert identity["build_type"] == "Release"
    assert identity["compiler"]["id"] and identity["compiler"]["version"]
    cmake_version = run([CMAKE, "--version"]).stdout.split()[2]
    assert identity["cmake_version"] == cmake_version
    assert identity["certification"] == "uncertified"
    assert identity["upstream_build"] is None
    assert identity["lane"]["name"] == "dev" and identity["lane"]["release"] is False
    libraries = {lib["name"]: lib for lib in identity["libraries"]}
    assert set(libraries) == {"nlohmann_json", "OpenSSL"}
    assert libraries["nlohmann_json"]["license"] == "MIT"
    assert libraries["nlohmann_json"]["linkage"] == "header-only"
    assert libraries["OpenSSL"]["license"] == "Apache-2.0"
    assert all(re.fullmatch(r"\d+\.\d+\.\d+\w*", lib["version"]) for lib in libraries.values())


@pytest.mark.slow
def test_version_text_names_the_fingerprint(cpu_lane: Lane) -> None:
    text = run([cpu_lane.build / "bin" / "worker", "--version"]).stdout
    assert text.startswith("worker 0.1.0 (protocol 4)\n")
    assert f"stack: {FINGERPRINT[:16]} (pcfp2 {FINGERPRINT}), 2 patches" in text
    assert "upstream build: none (standalone CPU lane)" in text


@pytest.mark.slow
def test_capabilities_are_empty_without_certification(cpu_lane: Lane) -> None:
    caps = worker_json(cpu_lane.build, "--capabilities")
    assert caps["capabilities"] == []
    assert caps["certification"] == "uncertified"
    assert caps["notes"][0].startswith(
        f"no certification record matches fingerprint {FINGERPRINT[:16]}")
    text = run([cpu_lane.build / "bin" / "worker", "--capabilities"]).stdout
    assert text.startswith("capabilities: none\n")


@pytest.mark.slow
def test_worker_rejects_bad_usage(cpu_lane: Lane) -> None:
    worker = cpu_lane.build / "bin" / "worker"
    for args in ([], ["--bogus"], ["--version", "--capabilities"]):
        proc = run([worker, *args], check=False)
        assert proc.returncode == 2, args
        assert "usage: worker" in proc.stderr


def test_presets_put_binaries_outside_the_source_tree() -> None:
    presets = json.loads((NATIVE / "CMakePresets.json").read_text())
    configure_presets = {p["name"]: p for p in presets["configurePresets"]}
    assert configure_presets["cpu"]["binaryDir"] == "${sourceDir}/../build/native-cpu"
    assert configure_presets["cpu-debug"]["binaryDir"] == "${sourceDir}/../build/native-cpu-debug"
    assert configure_presets["lane-base"]["generator"] == "Ninja"
    assert configure_presets["cpu"]["cacheVariables"]["CMAKE_BUILD_TYPE"] == "Release"
    assert configure_presets["cpu-debug"]["cacheVariables"]["CMAKE_BUILD_TYPE"] == "Debug"
    for kind in ("buildPresets", "testPresets"):
        names = {p["name"] for p in presets[kind] if not p.get("hidden")}
        assert names == {"cpu", "cpu-debug"}, kind


@needs_tools
@needs(*LIBRARIES)
def test_debug_preset_configures_outside_the_source_tree(tmp_path: Path) -> None:
    native = copy_native(tmp_path)
    run([CMAKE, "--preset", "cpu-debug"], cwd=native)
    cache = (tmp_path / "build" / "native-cpu-debug" / "CMakeCache.txt").read_text()
    assert "CMAKE_BUILD_TYPE:STRING=Debug" in cache
    assert not (native / "CMakeCache.txt").exists()


def test_compute_smoke_constants_match_an_independent_reference() -> None:
    """The C++ smoke test's constants, re-derived in Python from the documented formats.

    A constant that was merely recorded from the C++ output would bless a bug in
    the generator, the wire encoding or the checksum; this re-computes all three.
    """
    source = (NATIVE / "src" / "core" / "selftest.cpp").read_text()

    def constant(name: str) -> int:
        line = next(ln for ln in source.splitlines() if f" {name} = " in ln)
        return int(line.split("=")[1].split(";")[0].strip().rstrip("ULl"), 0)

    mask = (1 << 64) - 1

    def fnv1a64(data: bytes, h: int = 0xCBF29CE484222325) -> int:
        for byte in data:
            h = ((h ^ byte) * 0x100000001B3) & mask
        return h

    def f32(x: float) -> float:  # round to binary32, as one float add does
        return struct.unpack("<f", struct.pack("<f", x))[0]

    n_tokens, n_embd, state = constant("kTokens"), constant("kEmbd"), constant("kSeed")
    values = []
    for _ in range(n_tokens * n_embd):  # SplitMix64
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        z ^= z >> 31
        values.append(((z >> 40) - (1 << 23)) / 8388608.0)
    # Protocol 4: a boundary-state frame (kind 2, float32) of sequence 0, step 0,
    # ring steps -1, whose payload is the positions 0..n_tokens-1, then the values.
    payload = b"".join(struct.pack("<i", i) for i in range(n_tokens))
    payload += b"".join(struct.pack("<f", v) for v in values)
    header = b"WKHS" + struct.pack("<HHHHIIIIiQ", 4, 1, 2, 0, n_tokens, n_embd, 0, 0, -1,
                                   len(payload))
    assert fnv1a64(payload, fnv1a64(header)) == constant("kExpectedFrameChecksum")

    row_sums = []
    for r in range(n_tokens):
        acc = 0.0
        for v in values[r * n_embd:(r + 1) * n_embd]:
            acc = f32(acc + v)  # exact in double, then rounded once: binary32 addition
        row_sums.append(acc)
    total = 0.0
    for s in row_sums:
        total = f32(total + s)
    assert struct.unpack("<I", struct.pack("<f", total))[0] == constant("kExpectedSumBits")
    rows = b"".join(struct.pack("<f", s) for s in row_sums)
    assert fnv1a64(rows) == constant("kExpectedRowSumsChecksum")


# --- refusals at configure time ----------------------------------------------

@needs_tools
@pytest.mark.parametrize("where", [".", "build"])
def test_in_source_build_is_refused(tmp_path: Path, where: str) -> None:
    native = copy_native(tmp_path)
    proc = configure(native, native / where, check=False)
    assert proc.returncode != 0
    message = flat(proc.stderr)
    assert "in-source build refused" in message
    assert "cmake --preset cpu" in message


@needs_tools
def test_missing_lock_is_refused(tmp_path: Path) -> None:
    native = copy_native(tmp_path)
    missing = tmp_path / "nowhere" / "stack.lock"
    proc = configure(native, tmp_path / "b", f"-DWORKER_STACK_LOCK={missing}", check=False)
    assert proc.returncode != 0
    message = flat(proc.stderr)
    assert f"stack lock {missing} not found" in message
    assert "patchctl lock" in message


@needs_tools
@pytest.mark.parametrize(("edit", "reason"), [
    (lambda t: t.replace(f'pin = "{PIN}"', 'pin = "abc"'), "`pin = abc` is not a 40-hex commit"),
    (lambda t: t.replace("format = 1", "format = 2"), "format 2 is not supported"),
    (lambda t: t.replace('algorithm = "pcfp2"', 'algorithm = "pcfp9"'), "pcfp9"),
    (lambda t: t + "this is not toml\n", "unexpected line `this is not toml`"),
    (lambda t: t.replace("strip = 0", 'strip = "zero"'), "is not a strip level"),
])
def test_malformed_lock_is_refused(tmp_path: Path, edit, reason: str) -> None:
    native = copy_native(tmp_path, edit(lock_text()))
    proc = configure(native, tmp_path / "b", check=False)
    assert proc.returncode != 0
    message = flat(proc.stderr)
    assert f"stack lock {tmp_path / 'stack' / 'stack.lock'} is malformed" in message
    assert reason in message
    assert "patchctl lock" in message


@needs_tools
def test_stale_stamp_is_refused(tmp_path: Path) -> None:
    """A tree stamped for another stack must not be built under this lock's fingerprint."""
    native = copy_native(tmp_path)
    tree = make_fixture_tree(tmp_path / "upstream")
    other = "f" * 64
    write_stamp(tree, fingerprint=other)
    proc = configure(native, tmp_path / "b", f"-DWORKER_UPSTREAM_DIR={tree}",
                     "-DWORKER_UPSTREAM_TARGET=fixture_upstream", check=False)
    assert proc.returncode != 0
    message = flat(proc.stderr)
    assert "does not match the stack lock" in message
    assert f"fingerprint {other}" in message and f"fingerprint {FINGERPRINT}" in message
    assert f"patchctl apply --into {tree} --force" in message


@needs_tools
def test_unstamped_tree_is_refused(tmp_path: Path) -> None:
    native = copy_native(tmp_path)
    tree = make_fixture_tree(tmp_path / "upstream")
    proc = configure(native, tmp_path / "b", f"-DWORKER_UPSTREAM_DIR={tree}", check=False)
    assert proc.returncode != 0
    message = flat(proc.stderr)
    assert "has no .patchctl-stamp" in message
    assert f"patchctl apply --into {tree} --force" in message


@needs_tools
@needs(*LIBRARIES)
def test_edited_tree_is_refused(tmp_path: Path) -> None:
    """One changed byte after stamping is refused; the intact tree is accepted.

    The accepted configure also shows that CMake's manifest equals the one
    computed here from docs/FORMATS.md (links and `[id]` paths included).
    """
    native = copy_native(tmp_path)
    tree = make_fixture_tree(tmp_path / "upstream")
    write_stamp(tree)
    args = [f"-DWORKER_UPSTREAM_DIR={tree}", "-DWORKER_UPSTREAM_TARGET=fixture_upstream"]
    ok = configure(native, tmp_path / "ok", *args)
    assert f"upstream tree {tree} matches the lock" in flat(ok.stdout)

    source = tree / "src" / "fixture.c"
    source.write_bytes(source.read_bytes().replace(b"42", b"43"))
    proc = configure(native, tmp_path / "edited", *args, check=False)
    assert proc.returncode != 0
    message = flat(proc.stderr)
    assert f"upstream tree {tree} was edited after `patchctl apply` stamped it" in message
    assert f"patchctl apply --into {tree} --force" in message


# --- toolchain failures --------------------------------------------------------

@needs_tools
def test_bad_compiler_path_is_refused(tmp_path: Path) -> None:
    native = copy_native(tmp_path)
    proc = configure(native, tmp_path / "b", "-DCMAKE_CXX_COMPILER=/nonexistent/bin/c++",
                     check=False)
    assert proc.returncode != 0
    message = flat(proc.stderr)
    assert "worker toolchain: the C++ compiler does not exist" in message
    assert "CMAKE_CXX_COMPILER=/nonexistent/bin/c++: no such file" in message
    assert "GCC >= 9, Clang >= 10, AppleClang >= 12 or MSVC >= 19.20" in message


@needs_tools
def test_missing_ninja_is_refused(tmp_path: Path) -> None:
    native = copy_native(tmp_path)
    empty = tmp_path / "empty-path"
    empty.mkdir()
    proc = configure(native, tmp_path / "b", check=False, env=tool_env(PATH=str(empty)))
    assert proc.returncode != 0
    message = flat(proc.stderr)
    assert "the Ninja generator needs Ninja" in message
    assert "Found: no ninja, ninja-build or samu on PATH" in message
    assert "python -m pip install cmake ninja" in message


@needs_tools
@posix_only
def test_too_old_ninja_is_refused(tmp_path: Path) -> None:
    native = copy_native(tmp_path)
    fake = tmp_path / "ninja"
    fake.write_text("#!/bin/sh\necho 1.8.2\n")
    fake.chmod(0o755)
    proc = configure(native, tmp_path / "b", f"-DCMAKE_MAKE_PROGRAM={fake}", check=False)
    assert proc.returncode != 0
    message = flat(proc.stderr)
    assert "Ninja 1.8.2 is too old" in message
    assert "Needed: Ninja >= 1.10" in message
    assert "python -m pip install cmake ninja" in message


def _wrapper(tmp_path: Path, name: str, line: str) -> Path:
    compiler = shutil.which("g++")
    if not compiler:
        pytest.skip("needs g++ to fake an older compiler around")
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\n{line.replace('CXX', compiler)}\n")
    path.chmod(0o755)
    return path


@needs_tools
@posix_only
def test_compiler_without_cxx17_is_refused(tmp_path: Path) -> None:
    """A new enough compiler forced to C++14 fails the C++17 feature check."""
    native = copy_native(tmp_path)
    cxx14 = _wrapper(tmp_path, "cxx14", 'exec CXX "$@" -std=c++14')
    proc = configure(native, tmp_path / "b", f"-DCMAKE_CXX_COMPILER={cxx14}", check=False)
    assert proc.returncode != 0
    message = flat(proc.stderr)
    assert "cannot compile C++17" in message
    assert str(cxx14) in message


@needs_tools
@posix_only
def test_too_old_compiler_is_refused(tmp_path: Path) -> None:
    """GCC 8 (faked through the macro CMake identifies it by) is below the floor."""
    native = copy_native(tmp_path)
    gcc8 = _wrapper(tmp_path, "gcc8", 'exec CXX -U__GNUC__ -D__GNUC__=8 "$@"')
    proc = configure(native, tmp_path / "b", f"-DCMAKE_CXX_COMPILER={gcc8}", check=False)
    assert proc.returncode != 0
    message = flat(proc.stderr)
    assert "worker toolchain: GNU 8." in message and "is too old for C++17" in message
    assert "apt-get install g++" in message


@needs_tools
def test_too_old_cmake_message(tmp_path: Path) -> None:
    """The check that runs before cmake_minimum_required(), fed an old version."""
    script = tmp_path / "old.cmake"
    script.write_text(f'include("{(NATIVE / "cmake" / "Toolchain.cmake").as_posix()}")\n'
                      'worker_require_cmake("3.16.3")\n')
    proc = run([CMAKE, "-P", script], check=False)
    assert proc.returncode != 0
    message = flat(proc.stderr)
    assert "worker toolchain: CMake 3.16.3 is too old" in message
    assert "Needed: CMake >= 3.21" in message
    assert "python -m pip install cmake ninja" in message


# --- libraries ---------------------------------------------------------------------

@needs_tools
@pytest.mark.parametrize(("package", "what", "install", "hint"), [
    pytest.param("nlohmann_json", "worker: nlohmann_json not found.",
                 "apt-get install nlohmann-json3-dev", "set nlohmann_json_DIR", id="nlohmann_json"),
    # configure looks for nlohmann_json first: OpenSSL's refusal shows only where it is found
    pytest.param("OpenSSL", "worker: OpenSSL (libcrypto) not found.", "apt-get install libssl-dev",
                 "set OPENSSL_ROOT_DIR", marks=needs("nlohmann_json"), id="OpenSSL"),
])
def test_missing_library_is_refused(tmp_path: Path, package: str, what: str, install: str,
                                    hint: str) -> None:
    """JSON and SHA-256 come from nlohmann/json and OpenSSL, found by
    find_package; without one configure stops with one message naming the package to
    install (shown by hiding the installed one from find_package). Bug (bare machine):
    the OpenSSL case ran where nlohmann_json, looked for first, was missing too."""
    native = copy_native(tmp_path)
    proc = configure(native, tmp_path / "b", f"-DCMAKE_DISABLE_FIND_PACKAGE_{package}=TRUE",
                     check=False)
    assert proc.returncode != 0
    message = flat(proc.stderr)
    assert what in message and install in message and hint in message
    assert message.count("CMake Error") == 1


def test_system_packages_probe_names_what_to_install() -> None:
    """The skip reason of the tests that need a system package: configure's own words for
    what is missing, and the one line that installs it (tests/system_packages.py)."""
    if not (CMAKE and NINJA):
        pytest.skip("cmake and ninja are needed: pip install cmake ninja")
    for name, what in (("nlohmann_json", "worker: nlohmann_json"),
                       ("OpenSSL", "worker: OpenSSL"),
                       ("Vulkan", "worker: the Vulkan loader or headers not found")):
        why = system_packages.missing(name)
        assert why is None or (why.startswith(what)
                               and why.endswith(f": {system_packages.install_line([name])}"))
    why = system_packages.missing(*LIBRARIES)
    assert why is None or why.endswith(("nlohmann-json3-dev", "libssl-dev"))


# --- certification -------------------------------------------------------------

def _record(fingerprint: str, evidence: str, sha: str, model: str) -> str:
    return ("format = 1\n"
            'backend = "cpu"\n'
            f'model = "{model}"\n'
            'recipe = "greedy-32"\n'
            f'fingerprint = "{fingerprint}"\n'
            f'evidence = "{evidence}"\n'
            f'evidence_sha256 = "{sha}"\n'
            'capabilities = ["generate", "embed"]\n')


@needs_tools
@pytest.mark.slow
@needs(*LIBRARIES)
def test_only_records_with_matching_fingerprint_and_evidence_are_advertised(
        tmp_path: Path) -> None:
    native = copy_native(tmp_path)
    evidence = tmp_path / "evidence" / "certify" / "run.json"
    evidence.parent.mkdir(parents=True)
    evidence.write_text('{"result": "pass"}\n')
    sha = hashlib.sha256(evidence.read_bytes()).hexdigest()
    records = tmp_path / "records"
    records.mkdir()
    good = _record(FINGERPRINT, "evidence/certify/run.json", sha, "tiny-model")
    (records / "cpu-tiny-greedy.toml").write_text(good)
    (records / "cpu-bad-sha.toml").write_text(
        _record(FINGERPRINT, "evidence/certify/run.json", "0" * 64, "bad-sha"))
    (records / "cpu-other-fp.toml").write_text(
        _record("e" * 64, "evidence/certify/run.json", sha, "other-fp"))
    (records / "cpu-no-evidence.toml").write_text(
        _record(FINGERPRINT, "evidence/certify/missing.json", sha, "no-evidence"))

    build = tmp_path / "build"
    configured = configure(native, build, "-DCMAKE_BUILD_TYPE=Debug",
                           f"-DWORKER_CERTIFICATIONS_DIR={records}")
    assert "cpu-bad-sha.toml not accepted" in flat(configured.stderr)
    run([CMAKE, "--build", build])

    caps = worker_json(build, "--capabilities")
    assert [(c["name"], c["model"], c["record"]) for c in caps["capabilities"]] == [
        ("generate", "tiny-model", "cpu-tiny-greedy.toml"),
        ("embed", "tiny-model", "cpu-tiny-greedy.toml"),
    ]
    assert caps["capabilities"][0]["evidence_sha256"] == sha
    notes = " | ".join(caps["notes"])
    assert "cpu-bad-sha.toml: evidence evidence/certify/run.json has sha256" in notes
    assert f"cpu-other-fp.toml: certifies fingerprint {'e' * 16}" in notes
    assert "cpu-no-evidence.toml: evidence evidence/certify/missing.json not found" in notes
    # The certification fingerprint covers exactly the accepted record's bytes.
    expected = hashlib.sha256(
        f"{hashlib.sha256(good.encode()).hexdigest()}  cpu-tiny-greedy.toml\n".encode()
    ).hexdigest()
    assert caps["certification"] == expected
    assert worker_json(build, "--version")["certification"] == expected
    run([CTEST, "--test-dir", build, "-R", "capabilities|identity"])


@needs_tools
@needs(*LIBRARIES)
def test_malformed_certification_record_stops_configure(tmp_path: Path) -> None:
    native = copy_native(tmp_path)
    records = tmp_path / "records"
    records.mkdir()
    (records / "broken.toml").write_text(
        _record(FINGERPRINT, "../etc/passwd", "0" * 64, "m"))
    proc = configure(native, tmp_path / "b", f"-DWORKER_CERTIFICATIONS_DIR={records}",
                     check=False)
    assert proc.returncode != 0
    message = flat(proc.stderr)
    assert f"certification record {records / 'broken.toml'} is malformed" in message
    assert "is not a path under evidence/" in message


def test_repository_ships_no_certification_record() -> None:
    """No evidence exists yet, so no record may claim a capability."""
    assert sorted(p.name for p in (NATIVE / "certifications").iterdir()) == ["README.md"]


# --- the consumer path with real `patchctl apply --into` --------------------------

@needs_tools
@pytest.mark.slow
@needs(*LIBRARIES)
def test_identity_matches_patchctl_fingerprint(cli, project: Path, tmp_path: Path) -> None:
    fingerprint = cli("-C", str(project), "fingerprint", "--json")
    assert fingerprint.code == 0, fingerprint.err
    expected = json.loads(fingerprint.out)
    build = tmp_path / "build"
    configure(NATIVE, build, "-DCMAKE_BUILD_TYPE=Debug",
              f"-DWORKER_STACK_LOCK={project / 'stack' / 'stack.lock'}")
    run([CMAKE, "--build", build, "--target", "worker"])
    stack = worker_json(build, "--version")["stack"]
    assert set(stack) == set(expected)
    for key in expected:
        assert stack[key] == expected[key], key


@needs_tools
@needs(*LIBRARIES)
def test_stamped_git_tree_is_accepted(cli, project: Path, upstream: Upstream,
                                      tmp_path: Path) -> None:
    """`apply --commits` leaves a .git/ in the tree; the manifest must skip it."""
    tree = tmp_path / "tiny-commits"
    applied = cli("-C", str(project), "apply", "--into", str(tree), "--commits",
                  "--upstream", str(upstream.path))
    assert applied.code == 0, applied.err
    assert (tree / ".git").is_dir()
    configured = configure(NATIVE, tmp_path / "build",
                           f"-DWORKER_STACK_LOCK={project / 'stack' / 'stack.lock'}",
                           f"-DWORKER_UPSTREAM_DIR={tree}", "-DWORKER_UPSTREAM_TARGET=tiny")
    assert f"upstream tree {tree} matches the lock" in flat(configured.stdout)


@needs_tools
@pytest.mark.slow
@needs(*LIBRARIES)
def test_consumer_path_links_a_stamped_upstream(cli, project: Path, upstream: Upstream,
                                                tmp_path: Path) -> None:
    tree = tmp_path / "tiny-patched"
    applied = cli("-C", str(project), "apply", "--into", str(tree),
                  "--upstream", str(upstream.path))
    assert applied.code == 0, applied.err
    stamp = tomllib.loads((tree / ".patchctl-stamp").read_text())
    assert stamp["manifest"] == manifest(tree)  # patchctl agrees with the spec

    build = tmp_path / "build"
    configure(NATIVE, build, "-DCMAKE_BUILD_TYPE=Debug",
              f"-DWORKER_STACK_LOCK={project / 'stack' / 'stack.lock'}",
              f"-DWORKER_UPSTREAM_DIR={tree}", "-DWORKER_UPSTREAM_TARGET=tiny")
    run([CMAKE, "--build", build, "--target", "worker"])
    assert list((build / "upstream").glob("*tiny*")), "the upstream library was not built"

    identity = worker_json(build, "--version")
    assert identity["upstream_build"] == {"dir": str(tree), "target": "tiny",
                                          "tree": stamp["tree"]}
    assert identity["stack"]["fingerprint"] == stamp["fingerprint"]
    run([CTEST, "--test-dir", build, "-R", "identity"])

    # An edit after configure is caught by the next build's re-configure.
    util = tree / "src" / "util.c"
    util.write_bytes(util.read_bytes() + b"\n")
    proc = run([CMAKE, "--build", build, "--target", "worker"], check=False)
    assert proc.returncode != 0
    assert "was edited after `patchctl apply` stamped it" in flat(proc.stdout + proc.stderr)


@needs_tools
@pytest.mark.slow
@pytest.mark.llama
@pytest.mark.skipif(not LLAMA_CPP, reason="set PATCHCTL_LLAMA_CPP to a llama.cpp clone "
                    "that has the pin to build the real consumer path (minutes)")
@needs(*LIBRARIES)
def test_llama_cpp_consumer_path(cli, tmp_path: Path) -> None:
    tree = tmp_path / "llama.cpp"
    # The library needs neither the vocab test models, the web UI bundle nor the ops
    # tables under docs/, and sparse or partial clones often lack exactly those blobs.
    applied = cli("-C", str(REPO), "apply", "--into", str(tree), "--upstream", LLAMA_CPP,
                  "--exclude", "models/*.gguf", "--exclude", "tools/server/public/*",
                  "--exclude", "docs/ops/*")
    assert applied.code == 0, applied.err
    stamp = tomllib.loads((tree / ".patchctl-stamp").read_text())
    build = tmp_path / "build"
    configured = configure(NATIVE, build, "-DCMAKE_BUILD_TYPE=Release",
                           f"-DWORKER_UPSTREAM_DIR={tree}")
    assert f"upstream tree {tree} matches the lock" in flat(configured.stdout)
    assert "worker: stage mode on" in configured.stdout
    run([CMAKE, "--build", build], timeout=3600)
    identity = worker_json(build, "--version")
    assert identity["upstream_build"] == {"dir": str(tree), "target": "llama",
                                          "tree": stamp["tree"]}
    expected = json.loads(cli("-C", str(REPO), "fingerprint", "--json").out)
    assert identity["stack"] == expected

    # The stage mode: pipelines of worker processes on the tiny model,
    # bit-identical to the full model, and every refusal with its exit code.
    ctest = run([CTEST, "--test-dir", build, "-R", "^(pipeline|frame)\\.", "--output-on-failure"],
                timeout=600)
    for name in STAGE_TESTS | {"frame.codec"}:
        assert f" {name} " in ctest.stdout, name
    report = worker_json(build, "--self-test")
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["pipeline.two_stage"]["status"] == "pass", checks["pipeline.two_stage"]
    assert "bit-identical to the full model" in checks["pipeline.two_stage"]["detail"]
