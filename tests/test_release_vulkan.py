"""The vulkan release lane: `release build --lane vulkan`, the
manifest's backend and the device it was tested on, the SBOM's Vulkan loader, and the
refusal of a host without a Vulkan device by `release verify` and the worker's gate.

Everything here but the last test needs no Vulkan build: configure refusals of native/,
patchctl's writers and `release verify` on fake packages. The last one builds the real
package twice (opt-in: PATCHCTL_VULKAN_TREE names a `patchctl apply --into` llama.cpp
tree of this repository's lock; the environment gives the device, e.g. lavapipe).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from patchctl.errors import EnvironmentFailure
from patchctl.release import devices, documents, layout
from patchctl.release.sbom import SbomInputs, document
from patchctl.untrusted import validate
from tests import fake_release
from tests.system_packages import LIBRARIES, missing, needs
from tests.test_native import (
    configure,
    copy_native,
    flat,
    make_fixture_tree,
    needs_tools,
    write_stamp,
)
from tests.test_release import (
    REPO,
    assert_relays_the_refusal,
    release_build_refused,
    tool_env,
    worker,
)

# Read at import: the autouse isolation fixture clears PATCHCTL_* and moves HOME.
VULKAN_TREE = os.environ.get("PATCHCTL_VULKAN_TREE", "")
VULKAN_BUILD_DIR = os.environ.get("PATCHCTL_VULKAN_BUILD_DIR", "")
CCACHE_DIR = os.environ.get("CCACHE_DIR") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ccache")
NO_DEVICE = {"VK_ICD_FILENAMES": "/nonexistent.json"}  # the loader finds no driver

LLVMPIPE = {"name": "llvmpipe (LLVM 15.0.6, 256 bits)", "type": "cpu", "api_version": "1.3.230",
            "driver": "llvmpipe", "driver_info": "Mesa 22.3.6 (LLVM 15.0.6)"}
VULKAN_LIBRARIES = [*fake_release.LIBRARIES,
                    {"name": "Vulkan-Loader", "version": "1.3.239", "license": "Apache-2.0",
                     "linkage": "shared"},
                    {"name": "Vulkan-Headers", "version": "1.4.309",
                     "license": "Apache-2.0 OR MIT", "linkage": "header-only"}]


# --- native/: the lane's configure ------------------------------------------------------

@needs_tools
@needs(*LIBRARIES)
def test_vulkan_lane_without_an_upstream_is_refused(tmp_path: Path) -> None:
    """The vulkan lane is a backend lane; without the upstream tree there is
    no Vulkan backend to link (before: `unknown lane vulkan`)."""
    native = copy_native(tmp_path)
    proc = configure(native, tmp_path / "b", "-DWORKER_RELEASE_LANE=vulkan", check=False)
    assert proc.returncode != 0
    assert "lane vulkan links the upstream's Vulkan backend: configure with " \
        "-DWORKER_UPSTREAM_DIR=" in flat(proc.stderr)


@needs_tools
@needs(*LIBRARIES)
def test_vulkan_lane_without_the_loader_or_headers_is_refused(tmp_path: Path) -> None:
    """Where find_package finds no Vulkan (here: hidden from it), the lane's
    configure stops with one message: what is missing, and the line that installs it."""
    native = copy_native(tmp_path)
    tree = make_fixture_tree(tmp_path / "upstream")
    write_stamp(tree)
    proc = configure(native, tmp_path / "b", f"-DWORKER_UPSTREAM_DIR={tree}",
                     "-DWORKER_UPSTREAM_TARGET=fixture_upstream", "-DWORKER_RELEASE_LANE=vulkan",
                     "-DCMAKE_DISABLE_FIND_PACKAGE_Vulkan=TRUE", check=False)
    assert proc.returncode != 0
    message = flat(proc.stderr)
    assert "worker: the Vulkan loader or headers not found." in message
    assert "apt-get install libvulkan-dev glslc spirv-headers mesa-vulkan-drivers" in message
    assert message.count("CMake Error") == 1


@needs_tools
@needs(*LIBRARIES, "Vulkan")
def test_vulkan_lane_names_the_loader_it_links_and_needs_ggml_vulkan(tmp_path: Path) -> None:
    """The lane's identity names the backend, and the loader and headers
    versions configure measured (the loader's from the file libvulkan.so resolves to);
    an upstream without a ggml-vulkan target is refused."""
    native = copy_native(tmp_path)
    tree = make_fixture_tree(tmp_path / "upstream")
    write_stamp(tree)
    build = tmp_path / "b"
    proc = configure(native, build, f"-DWORKER_UPSTREAM_DIR={tree}",
                     "-DWORKER_UPSTREAM_TARGET=fixture_upstream", "-DWORKER_RELEASE_LANE=vulkan",
                     check=False)
    assert proc.returncode != 0
    message = flat(proc.stderr)
    assert f"{tree} defines no ggml-vulkan target with GGML_VULKAN=ON" in message
    cache = (build / "CMakeCache.txt").read_text()
    library = re.search(r"^Vulkan_LIBRARY:FILEPATH=(.*)$", cache, re.M)
    assert library
    loader = re.fullmatch(r"libvulkan\.so\.(\d+\.\d+\.\d+)",
                          Path(library.group(1)).resolve().name)
    assert loader, library.group(1)
    header = (build / "generated" / "worker" / "build_identity.hpp").read_text()
    assert 'id.lane = "vulkan";' in header and 'id.backend = "vulkan";' in header
    assert f'id.backend_loader = "{loader.group(1)}";' in header
    assert f'{{"Vulkan-Loader", "{loader.group(1)}", "Apache-2.0", "shared"}}' in header
    assert re.search(r'\{"Vulkan-Headers", "1\.\d+\.\d+", "[^"]+", "header-only"\}', header)


@needs_tools
@needs(*LIBRARIES)
def test_release_build_of_the_vulkan_lane_refuses_an_upstream_without_it(
        tmp_path: Path) -> None:
    """`release build --lane vulkan` is a lane of the CLI, and a tree that
    has no Vulkan backend stops at configure with the reason (exit 3), no archive; so does
    a machine without the Vulkan loader and headers. Bug (bare machine, item 2): there
    patchctl relayed CMake's call stack, not the refusal."""
    stderr = release_build_refused(tmp_path, "vulkan")
    if missing("Vulkan"):
        assert_relays_the_refusal(stderr, "Vulkan")
    else:
        assert "release configure failed" in stderr
        assert "no ggml-vulkan target with GGML_VULKAN=ON" in stderr, stderr


def test_release_build_dir_must_be_new_or_its_own(cli, tmp_path: Path) -> None:
    """--build-dir (a fixed path, so ccache serves a rebuild) empties only a
    new or empty directory or one a release build made; anything else is refused."""
    from patchctl.release.build import BUILD_DIR_MARK, _fresh_build_dir

    other = tmp_path / "someone-elses"
    other.mkdir()
    (other / "keep.txt").write_text("mine\n")
    r = cli("-C", str(tmp_path), "release", "build", "--build-dir", str(other))
    assert r.code == 2  # refused before anything (here: no native/), never emptied
    assert (other / "keep.txt").read_text() == "mine\n"
    with pytest.raises(Exception, match="is not empty and no release build made it"):
        _fresh_build_dir(other)
    assert (other / "keep.txt").is_file()
    ours = _fresh_build_dir(tmp_path / "new")
    (ours / "CMakeCache.txt").write_text("old\n")
    assert _fresh_build_dir(ours) == ours
    assert sorted(p.name for p in ours.iterdir()) == [BUILD_DIR_MARK]


# --- the manifest, BUILDINFO and SBOM: what the lane says ------------------------------------

def probe(*used: dict, physical: list[dict] | None = None, error: str | None = None) -> dict:
    """A `worker --devices --json` report."""
    return {"backend": "vulkan", "loader": "1.3.239", "error": error, "visible_devices": "0",
            "physical_devices": physical if physical is not None else [LLVMPIPE],
            "devices": list(used)}


def test_tested_on_is_what_the_build_machine_reported() -> None:
    """The manifest's tested_on comes from `worker --devices` of the build."""
    report = probe({"name": "Vulkan0", "description": LLVMPIPE["name"], "physical": LLVMPIPE})
    validate(report, documents.DEVICES_SCHEMA)
    assert devices.from_probe(report) == {
        "loader": "1.3.239", "devices": [{"ggml": "Vulkan0", **LLVMPIPE}]}


@pytest.mark.parametrize(("report", "why"), [
    (probe(physical=[], error="vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER; "
           "vkCreateInstance: Found no drivers!"), "Found no drivers!"),
    (probe(), "the loader sees llvmpipe (LLVM 15.0.6, 256 bits) (cpu), which ggml-vulkan skips"),
])
def test_a_machine_without_a_device_cannot_build_the_lane(report: dict, why: str) -> None:
    """No package is built where its self-test could not run on a device."""
    with pytest.raises(EnvironmentFailure) as e:
        devices.from_probe(report)
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith("lane vulkan: this machine has no Vulkan device that "
                              "ggml-vulkan runs on (")
    assert why in message and "GGML_VK_VISIBLE_DEVICES=0" in message


def vulkan_identity() -> dict:
    ident = fake_release.identity()
    ident["lane"]["name"] = "vulkan"
    ident["backend"] = {"name": "vulkan", "loader": "1.3.239", "headers": "1.4.309"}
    ident["libraries"] = VULKAN_LIBRARIES
    return ident


def test_manifest_and_buildinfo_name_the_backend_and_its_device() -> None:
    """The manifest names the backend, the loader and headers it was built
    with, and the device, driver and loader it was tested on; BUILDINFO says so too."""
    tested = devices.from_probe(probe({"name": "Vulkan0", "description": LLVMPIPE["name"],
                                       "physical": LLVMPIPE}))
    man = documents.manifest(
        package="worker-0.1.0-ffff-vulkan-linux-x86_64", binary=layout.WORKER,
        identity=vulkan_identity(), upstream=fake_release.manifest("p")["upstream"],
        commit="c" * 40, source_date_epoch=0, toolchain={"glslc": "shaderc 2023.2-1"},
        configure=["-DWORKER_RELEASE_LANE=vulkan"], tested_on=tested)
    validate(man, documents.MANIFEST_SCHEMA)
    assert man["backend"] == {"name": "vulkan", "loader": "1.3.239", "headers": "1.4.309",
                              "tested_on": {"loader": "1.3.239",
                                            "devices": [{"ggml": "Vulkan0", **LLVMPIPE}]}}
    lines = devices.buildinfo_lines(man["backend"])
    assert "vulkan: loader 1.3.239 linked, headers 1.4.309\n" in lines
    assert ("  Vulkan0: llvmpipe (LLVM 15.0.6, 256 bits) (cpu, Vulkan 1.3.230, driver llvmpipe "
            "Mesa 22.3.6 (LLVM 15.0.6))\n") in lines
    assert devices.buildinfo_lines({"name": "cpu"}) == ""
    cpu = fake_release.manifest("p")
    assert cpu["backend"] == {"name": "cpu"}  # a worker from before backends: cpu


def test_sbom_lists_the_vulkan_loader_linked_dynamically(tmp_path: Path) -> None:
    """The SBOM names the Vulkan loader (Apache-2.0, dynamic link) and the
    headers under their own SPDX expression (before: NOASSERTION for `A OR B`)."""
    from spdx_tools.spdx.parser.parse_anything import parse_file
    from spdx_tools.spdx.validation.document_validator import validate_full_spdx_document

    (tmp_path / "worker").write_bytes(b"\x7fELF")
    sbom = document(SbomInputs(
        package="worker-0.1.0-ffff-vulkan-linux-x86_64", engine_version="0.1.0", lane="vulkan",
        fingerprint="f" * 64, upstream_name="llama.cpp",
        upstream_url="https://github.com/ggml-org/llama.cpp", pin="a" * 40,
        license_text=fake_release.MIT, license_file="licenses/llama.cpp/LICENSE", patches=[],
        toolchain={"glslc": "shaderc 2023.2-1"}, libraries=VULKAN_LIBRARIES,
        files={layout.WORKER: tmp_path / "worker"}, source_date_epoch=0))
    path = tmp_path / "sbom.spdx.json"
    path.write_text(json.dumps(sbom))
    assert [m.validation_message for m in validate_full_spdx_document(parse_file(str(path)))] \
        == []
    packages = {p["name"]: p for p in sbom["packages"]}
    loader = packages["Vulkan-Loader"]
    assert (loader["versionInfo"], loader["licenseDeclared"]) == ("1.3.239", "Apache-2.0")
    assert loader["homepage"] == "https://github.com/KhronosGroup/Vulkan-Loader"
    assert "libvulkan.so.1 is loaded at run time" in loader["comment"]
    assert packages["Vulkan-Headers"]["licenseDeclared"] == "Apache-2.0 OR MIT"
    links = {r["spdxElementId"]: r["relationshipType"] for r in sbom["relationships"]
             if r["relatedSpdxElement"] == "SPDXRef-Package-worker"}
    assert links["SPDXRef-Library-Vulkan-Loader"] == "DYNAMIC_LINK"
    assert links["SPDXRef-Library-Vulkan-Headers"] == "STATIC_LINK"
    assert packages["glslc"]["versionInfo"] == "shaderc 2023.2-1"


# --- release verify: a host without a Vulkan device ---------------------------------------

REFUSAL = ("worker: lane vulkan needs a Vulkan device; the Vulkan loader 1.3.239 found none "
           "(vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER): install the device's Vulkan "
           "driver (Mesa's CPU device, lavapipe: mesa-vulkan-drivers), or use the package of "
           "a CPU lane")  # what the real one says here (test_vulkan_release_... below)


def vulkan_fake(root: Path, marker: Path) -> Path:
    """A fake vulkan package whose worker refuses --check as the real one does here."""
    ident = vulkan_identity()
    before = f"case \"$1\" in --check) echo \"{REFUSAL}\" >&2; exit 14 ;; esac\n"
    package = fake_release.make_package(root, marker, version_output=json.dumps(ident),
                                        before=before)
    man = json.loads((package / layout.MANIFEST).read_text())
    man["lane"] = ident["lane"]
    man["backend"] = {**ident["backend"], "tested_on": {"loader": "1.3.239", "devices": []}}
    fake_release.write_json(package / layout.MANIFEST, man)
    recipe = json.loads((package / layout.RECIPE).read_text())
    fake_release.write_json(package / layout.RECIPE, {**recipe, "lane": "vulkan"})
    sbom = json.loads((package / layout.SBOM).read_text())
    sbom["packages"] += [{"SPDXID": f"SPDXRef-Library-{lib['name']}", "name": lib["name"],
                          "versionInfo": lib["version"]} for lib in VULKAN_LIBRARIES[2:]]
    fake_release.write_json(package / layout.SBOM, sbom)
    fake_release.resum(package)
    return package


def test_verify_refuses_a_vulkan_package_where_there_is_no_device(cli, tmp_path: Path) -> None:
    """The worker's gate exit 14 is verify's finding, named for what it is."""
    package = vulkan_fake(tmp_path / "worker-0.1.0-vulkan", tmp_path / "ran")
    r = cli("release", "verify", str(package))
    assert r.code == 1, r.out
    assert r.out.splitlines() == [
        f"{package}: this host has no Vulkan device the package runs on (exit 14): {REFUSAL}",
        f"{package}: 1 finding(s)"]


def test_verify_compares_the_manifests_backend_with_the_binary(cli, tmp_path: Path) -> None:
    """A manifest that names another backend than the binary embeds."""
    package = fake_release.make_package(tmp_path / "worker-0.1.0-cpu", tmp_path / "ran")
    man = json.loads((package / layout.MANIFEST).read_text())
    man["backend"] = {"name": "vulkan", "loader": "1.3.239"}
    fake_release.write_json(package / layout.MANIFEST, man)
    fake_release.resum(package)
    r = cli("release", "verify", str(package))
    assert r.code == 1
    assert 'manifest.json names backend {"loader": "1.3.239", "name": "vulkan"}, the binary ' \
        'embeds {"name": "cpu"}' in r.out


# --- the real thing: the Vulkan build, twice (opt-in) -----------------------------------------

@needs_tools
@pytest.mark.slow
@pytest.mark.llama
@pytest.mark.skipif(not VULKAN_TREE, reason="set PATCHCTL_VULKAN_TREE to a `patchctl apply "
                    "--into` llama.cpp tree of this lock, with a Vulkan device in the "
                    "environment (e.g. lavapipe: VK_ICD_FILENAMES, GGML_VK_VISIBLE_DEVICES=0) "
                    "and Vulkan_INCLUDE_DIR where the system's headers are too old (minutes)")
@needs(*LIBRARIES)
def test_vulkan_release_twice_byte_identical_and_refused_without_a_device(
        tmp_path: Path) -> None:
    """`release build --lane vulkan` of this (clean) checkout twice
    gives the same bytes; the package names its backend, loader and tested device, its
    SBOM the loader; verify and the worker accept it here and refuse it on a host without
    a Vulkan device (the loader pointed at no driver: VK_ICD_FILENAMES=/nonexistent.json)."""
    home = tmp_path / "home"
    home.mkdir()
    env = tool_env(home)
    env["CCACHE_DIR"] = CCACHE_DIR  # ggml compiles through ccache when it finds it
    build_dir = Path(VULKAN_BUILD_DIR) if VULKAN_BUILD_DIR else tmp_path / "build"
    results = []
    for run in ("one", "two"):  # a cold Vulkan build takes 20 min on 2 busy cores
        proc = subprocess.run([sys.executable, "-m", "patchctl", "-C", str(REPO), "release",
                               "build", "--tree", VULKAN_TREE, "--lane", "vulkan", "--build-dir",
                               str(build_dir), "--out", str(tmp_path / run), "--json"],
                              env=env, capture_output=True, text=True, timeout=5400, check=False)
        assert proc.returncode == 0, proc.stderr
        results.append(json.loads(proc.stdout))
    one, two = results
    a, b = Path(one["archive"]), Path(two["archive"])
    print(f"vulkan release: {a.name}: {one['bytes']} bytes; sha256 {one['sha256']} "
          f"({one['seconds']} s), {two['sha256']} ({two['seconds']} s)")
    assert a.name == b.name and a.name.endswith("-vulkan-linux-x86_64.tar.gz")
    assert a.read_bytes() == b.read_bytes()
    assert hashlib.sha256(b.read_bytes()).hexdigest() == one["sha256"] == two["sha256"]

    root = layout.extract(a, tmp_path / "unpacked")
    man = json.loads((root / layout.MANIFEST).read_text())
    backend = man["backend"]
    assert backend["name"] == "vulkan" and backend["loader"] != "unknown"
    assert backend["tested_on"]["devices"], backend
    print(f"manifest backend: {json.dumps(backend, sort_keys=True)}")
    identity = json.loads(worker(root, "--version", "--json").stdout)
    assert {k: v for k, v in backend.items() if k != "tested_on"} == identity["backend"]
    sbom = json.loads((root / layout.SBOM).read_text())
    loader = next(p for p in sbom["packages"] if p["name"] == "Vulkan-Loader")
    assert (loader["versionInfo"], loader["licenseDeclared"]) == (backend["loader"],
                                                                  "Apache-2.0")
    assert "Vulkan-Loader" in (root / layout.BUILDINFO).read_text()

    def verify(**extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "patchctl", "release",
                               "verify", str(a)], capture_output=True, text=True, timeout=300,
                              check=False, env={**env, "PYTHONPATH": str(REPO), **extra})

    ok = verify()
    print(f"verify with the device: exit {ok.returncode}: {ok.stdout.strip()}")
    assert ok.returncode == 0 and "OK (" in ok.stdout and "lane vulkan" in ok.stdout
    refused = verify(**NO_DEVICE)
    print(f"verify without a device: exit {refused.returncode}: {refused.stdout.strip()}")
    assert refused.returncode == 1
    assert "this host has no Vulkan device the package runs on (exit 14): worker: lane " \
        "vulkan needs a Vulkan device; the Vulkan loader" in refused.stdout
    for args, extra in ((["--check"], NO_DEVICE), (["--self-test"], NO_DEVICE),
                        (["--check"], {"GGML_VK_VISIBLE_DEVICES": ""})):
        env_run = {k: v for k, v in env.items() if k != "GGML_VK_VISIBLE_DEVICES"} \
            if "GGML_VK_VISIBLE_DEVICES" in extra else dict(env)
        env_run.update({k: v for k, v in extra.items() if v})
        proc = subprocess.run([str(root / layout.WORKER), *args], capture_output=True,
                              text=True, timeout=120, check=False, env=env_run)
        print(f"worker {' '.join(args)} ({extra}): exit {proc.returncode}: {proc.stderr.strip()}")
        assert proc.returncode == 14 and proc.stderr.count("\n") == 1, proc.stderr
    started = time.time()
    check = worker(root, "--check")
    assert check.returncode == 0 and "device: ok, Vulkan0: " in check.stdout, check.stderr
    print(f"worker --check with the device ({time.time() - started:.1f} s): {check.stdout}")
