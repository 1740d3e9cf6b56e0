"""patchctl release build / verify, and the packaged worker's start-up gate, for real.

One release of examples/tiny's stack (the worker's CPU lane linked against a
stamp-verified `patchctl apply --into` tree of the tiny upstream) is built per
session and shared; the reproducibility test builds a second one from a clone
in another directory, later. Tampering tests work on unpacked copies.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from patchctl.errors import InputError
from patchctl.release import layout
from tests import fake_release, system_packages
from tests.builders import git, system_config_off

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "examples" / "tiny"
BIN = Path(sys.executable).parent
# Read at import: the autouse isolation fixture clears PATCHCTL_* for each test.
LLAMA_CPP = os.environ.get("PATCHCTL_LLAMA_CPP", "")
HAVE_TOOLS = all(shutil.which(t, path=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))
                 for t in ("cmake", "ninja"))
needs_tools = pytest.mark.skipif(not HAVE_TOOLS, reason="cmake and ninja are needed: "
                                 "pip install cmake ninja")
x86_only = pytest.mark.skipif(os.uname().machine not in ("x86_64", "AMD64"),
                              reason="the cpu lane needs a CPU feature only on x86-64")


def tool_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GIT_", "PATCHCTL_", "CMAKE_"))}
    env.update(PATH=os.pathsep.join([str(BIN), env.get("PATH", "")]), HOME=str(home),
               XDG_CACHE_HOME=str(home / ".cache"), GIT_CONFIG_NOSYSTEM="1",
               GIT_CONFIG_GLOBAL=str(home / ".gitconfig"), PATCHCTL_QUIET="1")
    (home / ".gitconfig").write_text("[user]\n\tname = Test\n\temail = test@example.invalid\n")
    return env


def patchctl(env: dict, *args: object, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "patchctl", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=900, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"patchctl {' '.join(map(str, args))} exited {proc.returncode}\n"
                             f"{proc.stdout}\n{proc.stderr}")
    return proc


def make_checkout(dest: Path) -> Path:
    """A git checkout like the repository's: native/, examples/tiny's stack and bundle."""
    dest.mkdir(parents=True)
    shutil.copytree(REPO / "native", dest / "native",
                    ignore=shutil.ignore_patterns("CMakeCache.txt", "CMakeFiles"))
    shutil.copytree(TINY / "stack", dest / "stack")
    shutil.copy(TINY / "tiny-upstream.bundle", dest)
    (dest / ".gitignore").write_text("/build/\n")
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "release fixture")  # builders: fixed identity and date
    return dest


@dataclass
class Release:
    root: Path            # the session's scratch directory
    env: dict[str, str]
    checkout: Path
    tree: Path
    archive: Path
    result: dict          # `release build --json`
    finished: float       # time.time() when the build ended


@pytest.fixture(scope="session")
def release(tmp_path_factory: pytest.TempPathFactory) -> Release:
    if not HAVE_TOOLS:
        pytest.skip("cmake and ninja are needed: pip install cmake ninja")
    system_packages.require(*system_packages.LIBRARIES)
    root = tmp_path_factory.mktemp("release")
    home = root / "home"
    home.mkdir()
    env = tool_env(home)
    with system_config_off(GIT_CONFIG_GLOBAL=env["GIT_CONFIG_GLOBAL"]):
        checkout = make_checkout(root / "one" / "checkout")
    tree = root / "one" / "tree"
    patchctl(env, "-C", checkout, "apply", "--into", tree)
    built = patchctl(env, "-C", checkout, "release", "build", "--tree", tree,
                     "--upstream-target", "tiny", "--out", root / "one" / "out", "--json")
    result = json.loads(built.stdout)
    return Release(root, env, checkout, tree, Path(result["archive"]), result, time.time())


@pytest.fixture
def unpacked(release: Release, tmp_path: Path) -> Path:
    """A private unpacked copy of the session's package."""
    return layout.extract(release.archive, tmp_path / "pkg")


def worker(package: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(package / layout.WORKER), *args], capture_output=True, text=True,
                          timeout=120, check=False, env={**os.environ, **env})


def resum(package: Path) -> None:
    """Re-write SHA256SUMS, as a tamperer who covers his tracks would."""
    (package / layout.SUMS).write_text(layout.render_sums(package))


def edit_json(path: Path, edit) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


# --- build: reproducible, complete, and nothing else ---------------------------------

@needs_tools
@pytest.mark.slow
def test_release_is_byte_identical_from_another_directory_and_time(release: Release) -> None:
    """Two builds: another clone at another path, another tree, another build dir and out
    dir, at least a second later. The archives must be the same bytes."""
    while time.time() < release.finished + 1.5:
        time.sleep(0.2)
    other = release.root / "two" / "deeper" / "path"
    other.mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", str(release.checkout), str(other / "clone")],
                   env=release.env, check=True, capture_output=True)
    patchctl(release.env, "-C", other / "clone", "apply", "--into", other / "t")
    built = patchctl(release.env, "-C", other / "clone", "release", "build", "--tree",
                     other / "t", "--upstream-target", "tiny", "--json")
    second = json.loads(built.stdout)
    assert Path(second["archive"]).parent == (other / "clone" / "build" / "release")
    assert Path(second["archive"]).name == release.archive.name
    assert Path(second["archive"]).read_bytes() == release.archive.read_bytes()
    assert second["sha256"] == release.result["sha256"]
    print(f"release: {release.result['bytes']} bytes; built in {release.result['seconds']} s "
          f"and {second['seconds']} s")


@needs_tools
@pytest.mark.slow
def test_archive_entries_are_normalized(release: Release) -> None:
    data = release.archive.read_bytes()
    # gzip: no FNAME flag (byte 3), MTIME 0 (bytes 4-7).
    assert data[:2] == b"\x1f\x8b" and data[3] & 0x08 == 0 and data[4:8] == b"\0\0\0\0"
    epoch = release.result["source_date_epoch"]
    commit_time = int(git(release.checkout, "log", "-1", "--format=%ct").strip())
    assert epoch == commit_time
    with tarfile.open(release.archive) as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    assert names == sorted(names, key=str.encode)
    top = release.archive.name.removesuffix(".tar.gz")
    assert names[0] == top
    for m in members:
        assert (m.mtime, m.uid, m.gid, m.uname, m.gname) == (epoch, 0, 0, "", ""), m.name
        assert m.mode in (0o755, 0o644), m.name
    files = {n.removeprefix(top + "/") for m, n in zip(members, names, strict=True) if m.isfile()}
    assert files == {"BUILDINFO", "SHA256SUMS", "bin/worker", "licenses/tiny/LICENSE",
                     "manifest.json", "recipe.json", "sbom.spdx.json"}


@needs_tools
@pytest.mark.slow
def test_package_has_no_build_paths_and_no_upstream_sources(release: Release,
                                                            unpacked: Path) -> None:
    """Regression guard for -ffile-prefix-map and the identity's remapped paths: no
    path of the build machine (checkout, tree, temp build dir, home) in any file."""
    needles = [str(release.root).encode(), str(release.tree).encode(),
               b"patchctl-release-", str(Path.home()).encode()]
    for path in unpacked.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for needle in needles:
                assert needle not in data, f"{needle!r} in {path.name}"
    # The tree's sources stay out: only the license text of the upstream ships.
    tree_files = {p.read_bytes() for p in release.tree.rglob("*.[ch]")}
    assert tree_files
    for path in unpacked.rglob("*"):
        assert not path.is_file() or path.read_bytes() not in tree_files, path
    assert (unpacked / "licenses" / "tiny" / "LICENSE").read_bytes() == \
        (release.tree / "LICENSE").read_bytes()
    identity = json.loads(worker(unpacked, "--version", "--json").stdout)
    assert identity["upstream_build"]["dir"] == "upstream"
    assert identity["lane"] == {"name": "cpu", "arch": identity["lane"]["arch"],
                                "cpu_features": identity["lane"]["cpu_features"],
                                "release": True}


@needs_tools
@pytest.mark.slow
def test_manifest_recipe_and_buildinfo_describe_the_build(release: Release,
                                                          unpacked: Path) -> None:
    man = json.loads((unpacked / "manifest.json").read_text())
    lock = (release.checkout / "stack" / "stack.lock").read_text()
    assert man["schema"] == "patchctl.release/1"
    assert f'fingerprint = "{man["stack"]["fingerprint"]}"' in lock
    assert man["upstream"]["license"] == {"file": "licenses/tiny/LICENSE", "from": "LICENSE",
                                          "spdx": "MIT"}
    assert man["source"]["commit"] == git(release.checkout, "rev-parse", "HEAD").strip()
    recipe = json.loads((unpacked / "recipe.json").read_text())
    assert recipe == {"schema": "worker.recipe/1", "protocol_version": 4,
                      "pin": man["stack"]["pin"], "stack_fingerprint": man["stack"]["fingerprint"],
                      "lane": "cpu", "artifacts": []}
    info = (unpacked / "BUILDINFO").read_text()
    for needle in (f"SOURCE_DATE_EPOCH: {man['source']['source_date_epoch']}",
                   "cmake --build BUILD --target worker", "-DWORKER_RELEASE_LANE=cpu",
                   "patchctl -C SRC release build --tree TREE --lane cpu",
                   man["stack"]["fingerprint"], "nlohmann_json ", "OpenSSL 3."):
        assert needle in info
    sums = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=unpacked, capture_output=True,
                          text=True, check=False)
    assert sums.returncode == 0, sums.stdout + sums.stderr  # coreutils agrees
    # what the writers make, and what the worker says, are of the schemas
    # that `release verify` applies to them.
    from patchctl.records.identity import IDENTITY_SCHEMA
    from patchctl.release import documents
    from patchctl.untrusted import validate

    validate(man, documents.MANIFEST_SCHEMA)
    validate(recipe, documents.RECIPE_SCHEMA)
    validate(json.loads((unpacked / "sbom.spdx.json").read_text()), documents.SBOM_SCHEMA)
    validate(json.loads(worker(unpacked, "--version", "--json").stdout), IDENTITY_SCHEMA)


@needs_tools
@pytest.mark.slow
def test_sbom_is_valid_spdx_2_3(release: Release, unpacked: Path) -> None:
    from spdx_tools.spdx.parser.parse_anything import parse_file
    from spdx_tools.spdx.validation.document_validator import validate_full_spdx_document

    path = unpacked / "sbom.spdx.json"
    messages = validate_full_spdx_document(parse_file(str(path)))
    assert [m.validation_message for m in messages] == []
    sbom = json.loads(path.read_text())
    packages = {p["SPDXID"]: p for p in sbom["packages"]}
    upstream = packages["SPDXRef-Package-upstream-tiny"]
    man = json.loads((unpacked / "manifest.json").read_text())
    assert upstream["versionInfo"] == man["stack"]["pin"]
    assert upstream["licenseDeclared"] == "MIT"
    stack_dir = release.checkout / "stack" / "patches"
    for p in man["stack"]["patches"]:
        entry = next(e for i, e in packages.items()
                     if i.startswith("SPDXRef-Patch-") and e["name"] == p["file"])
        digest = hashlib.sha256((stack_dir / p["file"]).read_bytes()).hexdigest()
        assert entry["checksums"] == [{"algorithm": "SHA256", "checksumValue": digest}]
    assert {p["name"] for p in sbom["packages"]} >= {"worker", "tiny", "cmake", "ninja",
                                                      "patchctl"}
    # The libraries the worker is built with, at the versions the
    # build found (the binary's identity says which), with their licenses.
    identity = json.loads(worker(unpacked, "--version", "--json").stdout)
    versions = {lib["name"]: lib["version"] for lib in identity["libraries"]}
    libraries = {p["name"]: p for i, p in packages.items() if i.startswith("SPDXRef-Library-")}
    assert {n: p["versionInfo"] for n, p in libraries.items()} == versions
    assert libraries["nlohmann_json"]["licenseDeclared"] == "MIT"
    assert libraries["OpenSSL"]["licenseDeclared"] == "Apache-2.0"
    assert versions["OpenSSL"].startswith("3.")
    links = {r["spdxElementId"]: r["relationshipType"] for r in sbom["relationships"]
             if r["relatedSpdxElement"] == "SPDXRef-Package-worker"}
    assert links["SPDXRef-Library-nlohmann-json"] == "STATIC_LINK"  # header-only: compiled in
    assert links["SPDXRef-Library-OpenSSL"] == "DYNAMIC_LINK"
    files = {f["fileName"]: f for f in sbom["files"]}
    worker_sha = hashlib.sha256((unpacked / "bin" / "worker").read_bytes()).hexdigest()
    assert {"algorithm": "SHA256", "checksumValue": worker_sha} in files["./bin/worker"][
        "checksums"]
    assert sbom["creationInfo"]["created"] == time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime(man["source"]["source_date_epoch"]))


@needs_tools
@pytest.mark.slow
@x86_only
def test_avx2_lane_runs_where_the_cpu_has_it_and_is_refused_where_not(release: Release,
                                                                      tmp_path: Path) -> None:
    """The second lane end to end: its flags reach the upstream, the package names its
    features, and its worker runs or refuses by what this CPU has."""
    from patchctl.records import hostinfo

    built = patchctl(release.env, "-C", release.checkout, "release", "build", "--tree",
                     release.tree, "--upstream-target", "tiny", "--lane", "cpu-avx2",
                     "--out", tmp_path / "out", "--json", check=False)
    needs = ["avx", "avx2", "fma", "f16c", "bmi2"]
    if not set(needs) <= (hostinfo.cpu_features() or set()):
        assert built.returncode == 1  # its own self-test refused this CPU: no archive
        assert "exit 11" in built.stderr and "this CPU lacks" in built.stderr
        assert not list((tmp_path / "out").glob("*.tar.gz"))
        return
    assert built.returncode == 0, built.stderr
    archive = Path(json.loads(built.stdout)["archive"])
    assert archive.name.endswith("-cpu-avx2-linux-x86_64.tar.gz")
    root = layout.extract(archive, tmp_path / "unpacked")
    man = json.loads((root / "manifest.json").read_text())
    assert man["lane"]["name"] == "cpu-avx2" and man["lane"]["cpu_features"] == needs
    assert worker(root, "--self-test").returncode == 0
    refused = worker(root, "--check", WORKER_HIDE_CPU_FEATURES="avx2")
    assert refused.returncode == 11 and "this CPU lacks avx2" in refused.stderr


# --- verify --------------------------------------------------------------------------

@needs_tools
@pytest.mark.slow
def test_verify_accepts_the_release(cli, release: Release, unpacked: Path) -> None:
    r = cli("release", "verify", str(release.archive))
    assert r.code == 0, r.out + r.err
    assert "OK (6 files, lane cpu" in r.out  # and SHA256SUMS
    r = cli("release", "verify", "--json", str(unpacked))
    assert r.code == 0 and json.loads(r.out)["ok"] is True


@needs_tools
@pytest.mark.slow
def test_verify_refuses_a_tampered_file(cli, unpacked: Path, tmp_path: Path) -> None:
    license_file = unpacked / "licenses" / "tiny" / "LICENSE"
    license_file.write_text(license_file.read_text().replace("MIT", "MlT", 1))
    r = cli("release", "verify", str(unpacked))
    assert r.code == 1
    assert "licenses/tiny/LICENSE: sha256" in r.out and "SHA256SUMS says" in r.out
    assert "1 finding(s)" in r.out
    # Repacked into an archive, the same.
    archive = tmp_path / "tampered.tar.gz"
    layout.write_archive(unpacked, archive, mtime=0)
    assert cli("release", "verify", str(archive)).code == 1
    # An extra file nobody listed is a finding too.
    (unpacked / "bin" / "helper").write_text("#!/bin/sh\n")
    r = cli("release", "verify", str(unpacked))
    assert "bin/helper is not listed in SHA256SUMS" in r.out


@needs_tools
@pytest.mark.slow
def test_verify_refuses_a_swapped_binary(cli, release: Release, unpacked: Path,
                                         tmp_path: Path) -> None:
    """A worker built for another stack, swapped in with its checksum updated: only the
    embedded identity can tell, and it does."""
    other = make_checkout_copy_with_other_lock(release, tmp_path)
    build = tmp_path / "other-build"
    subprocess.run(["cmake", "-S", other / "native", "-B", build, "-G", "Ninja",
                    "-DCMAKE_BUILD_TYPE=Release"], env=release.env, check=True,
                   capture_output=True)
    subprocess.run(["cmake", "--build", build, "--target", "worker"], env=release.env,
                   check=True, capture_output=True)
    shutil.copy(build / "bin" / "worker", unpacked / "bin" / "worker")
    r = cli("release", "verify", str(unpacked))
    assert r.code == 1
    assert "bin/worker: sha256" in r.out  # first, the checksum
    resum(unpacked)
    r = cli("release", "verify", str(unpacked))
    assert r.code == 1
    assert "manifest.json names stack fingerprint" in r.out
    assert "not a release build" in r.out


def make_checkout_copy_with_other_lock(release: Release, tmp_path: Path) -> Path:
    other = tmp_path / "other"
    shutil.copytree(release.checkout / "native", other / "native")
    (other / "stack").mkdir(parents=True)
    lock = (release.checkout / "stack" / "stack.lock").read_text()
    fingerprint = lock.split('fingerprint = "', 1)[1].split('"', 1)[0]
    (other / "stack" / "stack.lock").write_text(lock.replace(fingerprint, "0" * 64))
    return other


@needs_tools
@pytest.mark.slow
def test_verify_refuses_a_manifest_with_another_fingerprint(cli, unpacked: Path) -> None:
    edit_json(unpacked / "manifest.json",
              lambda m: m["stack"].update(fingerprint="e" * 64))
    resum(unpacked)
    r = cli("release", "verify", str(unpacked))
    assert r.code == 1
    assert f"manifest.json names stack fingerprint {'e' * 64}, the binary embeds" in r.out
    # The worker itself refuses to start from such a package.
    proc = worker(unpacked, "--check")
    assert proc.returncode == 10
    assert "package check failed: manifest.json names stack fingerprint" in proc.stderr


@needs_tools
@pytest.mark.slow
def test_verify_reports_a_recipe_for_another_stack(cli, unpacked: Path) -> None:
    edit_json(unpacked / "recipe.json", lambda r: r.update(stack_fingerprint="f" * 64))
    resum(unpacked)
    r = cli("release", "verify", str(unpacked))
    assert r.code == 1
    assert "recipe.json names stack fingerprint" in r.out


@needs_tools
@pytest.mark.slow
def test_verify_reports_an_sbom_with_other_library_versions(cli, unpacked: Path) -> None:
    """The SBOM's libraries are the ones the binary was built with."""
    def edit(sbom: dict) -> None:
        for p in sbom["packages"]:
            if p["SPDXID"] == "SPDXRef-Library-OpenSSL":
                p["versionInfo"] = "1.1.1w"
    edit_json(unpacked / "sbom.spdx.json", edit)
    resum(unpacked)
    r = cli("release", "verify", str(unpacked))
    assert r.code == 1
    assert "sbom.spdx.json names libraries" in r.out and "OpenSSL 1.1.1w" in r.out


def test_verify_of_a_missing_package_is_bad_input(cli, tmp_path: Path) -> None:
    r = cli("release", "verify", str(tmp_path / "nope.tar.gz"))
    assert r.code == 2
    assert "does not exist" in r.err


@needs_tools
@pytest.mark.slow
def test_record_of_a_packaged_worker_run_names_its_runtime(cli, release: Release,
                                                           unpacked: Path, tmp_path: Path) -> None:
    """`patchctl record --worker` stores the identity the binary embeds (runtime pin)."""
    ev = tmp_path / "ev"
    r = cli("-C", str(release.checkout), "record", "--name", "selftest", "--evidence-dir",
            str(ev), "--worker", str(unpacked / "bin" / "worker"), "--",
            str(unpacked / "bin" / "worker"), "--self-test")
    assert r.code == 0, r.err
    rec = json.loads((ev / "selftest.json").read_text())
    man = json.loads((unpacked / "manifest.json").read_text())
    assert rec["runtime"]["stack"] == man["stack"]
    assert rec["runtime"]["lane"]["name"] == "cpu"
    assert rec["stack"]["fingerprint"] == man["stack"]["fingerprint"]


# --- the worker's start-up gate ---------------------------------------------------------

@needs_tools
@pytest.mark.slow
def test_packaged_worker_passes_its_gate_and_self_test(release: Release, unpacked: Path) -> None:
    proc = worker(unpacked, "--check", "--recipe", str(unpacked / "recipe.json"))
    assert proc.returncode == 0, proc.stderr
    assert "package: ok, 6 files match SHA256SUMS" in proc.stdout
    assert "recipe: ok" in proc.stdout
    report = json.loads(worker(unpacked, "--self-test", "--json").stdout)
    assert report["passed"] is True
    statuses = {c["name"]: c["status"] for c in report["checks"]}
    # The fixture upstream is no llama.cpp, so this worker has no stage mode.
    assert statuses["pipeline.two_stage"] == "skipped"
    assert statuses["reduce.deterministic.threads4"] == "pass"
    assert release.result["self_test"]["passed"] is True  # what release build ran


@needs_tools
@pytest.mark.slow
def test_worker_refuses_a_package_that_fails_its_checksums(unpacked: Path) -> None:
    (unpacked / "BUILDINFO").write_text("changed\n")
    proc = worker(unpacked, "--self-test")
    assert proc.returncode == 10
    assert proc.stderr.count("\n") == 1
    assert "package check failed: BUILDINFO has sha256" in proc.stderr
    assert "reinstall it" in proc.stderr
    assert worker(unpacked, "--version").returncode == 0  # the identity stays readable
    (unpacked / "SHA256SUMS").unlink()
    assert "SHA256SUMS is missing" in worker(unpacked, "--check").stderr


@needs_tools
@pytest.mark.slow
@pytest.mark.parametrize(("edit", "message"), [
    (lambda r: r.update(stack_fingerprint="a" * 64), "requires stack fingerprint aaaa"),
    (lambda r: r.update(pin="b" * 40), "requires pin bbbb"),
    (lambda r: r.update(lane="cpu-avx2"), "requires lane cpu-avx2, this worker is cpu"),
    (lambda r: r.update(protocol_version=1), "requires protocol 1, this worker speaks 4"),
    (lambda r: r.update(stack_fingerprnt="x"), 'unknown key "stack_fingerprnt"'),
    (lambda r: r.update(artifacts=[{"path": "model.gguf", "sha256": "0" * 64}]),
     "artifact model.gguf has sha256"),
    (lambda r: r.pop("pin"), "pin must be a string"),
])
def test_worker_refuses_a_mismatched_recipe(unpacked: Path, tmp_path: Path, edit,
                                            message: str) -> None:
    recipe = tmp_path / "run" / "recipe.json"
    recipe.parent.mkdir()
    (recipe.parent / "model.gguf").write_bytes(b"GGUF tiny model\n")
    shutil.copy(unpacked / "recipe.json", recipe)
    edit_json(recipe, edit)
    proc = worker(unpacked, "--check", "--recipe", str(recipe))
    assert proc.returncode == 12, proc.stderr
    assert proc.stderr.startswith(f"worker: recipe {recipe}: ")
    assert message in proc.stderr
    assert proc.stderr.count("\n") == 1


@needs_tools
@pytest.mark.slow
def test_worker_accepts_a_recipe_whose_split_hashes_match(unpacked: Path, tmp_path: Path) -> None:
    splits = []
    for i in (1, 2):
        split = tmp_path / f"model-0000{i}-of-00002.gguf"
        split.write_bytes(f"split {i}\n".encode())
        splits.append({"path": split.name, "sha256": hashlib.sha256(split.read_bytes())
                       .hexdigest(), "role": "split"})
    recipe = tmp_path / "recipe.json"
    shutil.copy(unpacked / "recipe.json", recipe)
    edit_json(recipe, lambda r: r.update(artifacts=splits))
    proc = worker(unpacked, "--check", "--recipe", str(recipe))
    assert proc.returncode == 0, proc.stderr
    assert "2 artifact hash(es)" in proc.stdout
    bad = tmp_path / "bad.json"
    bad.write_text("{\"schema\": ")
    proc = worker(unpacked, "--check", "--recipe", str(bad))
    assert proc.returncode == 12 and "not JSON" in proc.stderr


@needs_tools
@pytest.mark.slow
@x86_only
def test_worker_refuses_a_lane_this_cpu_cannot_run(unpacked: Path) -> None:
    """The cpu lane needs SSE2; a CPU without it (shown by hiding the feature, which can
    only remove what was detected) is refused before any work."""
    proc = worker(unpacked, "--self-test", WORKER_HIDE_CPU_FEATURES="avx,sse2")
    assert proc.returncode == 11
    assert proc.stderr == ("worker: lane cpu needs CPU features sse2; this CPU lacks sse2: "
                           "install the package of a lane this CPU can run (e.g. cpu)\n")
    assert worker(unpacked, "--check", WORKER_HIDE_CPU_FEATURES="avx").returncode == 0


# --- the real thing: llama.cpp at the pin (opt-in) ------------------------------------------

@needs_tools
@pytest.mark.slow
@pytest.mark.llama
@pytest.mark.skipif(not LLAMA_CPP, reason="set PATCHCTL_LLAMA_CPP to a llama.cpp clone that has "
                    "the pin to build a real release (minutes)")
@system_packages.needs(*system_packages.LIBRARIES)
def test_llama_cpp_release(tmp_path: Path) -> None:
    """The repository's own stack, released against llama.cpp: a clone of this
    repository's HEAD (a clean checkout), the real `apply --into`, the real library."""
    home = tmp_path / "home"
    home.mkdir()
    env = tool_env(home)
    checkout = tmp_path / "checkout"
    subprocess.run(["git", "clone", "-q", str(REPO), str(checkout)], env=env, check=True,
                   capture_output=True)
    tree = tmp_path / "llama.cpp"
    # As in test_native: mirrors and partial clones often lack the docs/ops tables' blobs.
    patchctl(env, "-C", checkout, "apply", "--into", tree, "--upstream", LLAMA_CPP,
             "--exclude", "models/*.gguf", "--exclude", "tools/server/public/*",
             "--exclude", "docs/ops/*")
    built = json.loads(patchctl(env, "-C", checkout, "release", "build", "--tree", tree,
                                "--out", tmp_path / "out", "--json").stdout)
    archive = Path(built["archive"])
    print(f"llama.cpp release: {archive.name}, {built['bytes']} bytes, {built['seconds']} s, "
          f"sha256 {built['sha256']}")
    # release build ran the packaged worker's self-test, stage mode included.
    checks = {c["name"]: c["status"] for c in built["self_test"]["checks"]}
    assert checks["pipeline.two_stage"] == "pass", built["self_test"]
    verified = patchctl(env, "release", "verify", archive)
    assert "OK" in verified.stdout
    root = layout.extract(archive, tmp_path / "unpacked")
    identity = json.loads(worker(root, "--version", "--json").stdout)
    assert identity["upstream_build"] == {"dir": "upstream", "target": "llama",
                                          "tree": json.loads((root / "manifest.json")
                                                             .read_text())["upstream"]["tree"]}
    data = (root / "bin" / "worker").read_bytes()
    for needle in (str(tmp_path).encode(), b"patchctl-release-"):
        assert needle not in data
    license_text = (root / "licenses" / "llama.cpp" / "LICENSE").read_text()
    assert license_text == (tree / "LICENSE").read_text() and "MIT License" in license_text


# --- refusals before anything is built ----------------------------------------------------

@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    return make_checkout(tmp_path / "checkout")


@pytest.fixture
def stamped(cli, checkout: Path, tmp_path: Path) -> Path:
    """`patchctl apply --into` of the checkout's stack."""
    tree = tmp_path / "tree"
    assert cli("-C", str(checkout), "apply", "--into", str(tree)).code == 0
    return tree


def test_release_refuses_a_tree_without_a_stamp(cli, checkout: Path, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    r = cli("-C", str(checkout), "release", "build", "--tree", str(tree))
    assert r.code == 2
    assert f"{tree} has no .patchctl-stamp" in r.err and "never builds an unverified" in r.err


def test_release_defaults_to_the_readme_tree(cli, checkout: Path) -> None:
    """Without --tree: <project>/build/<upstream name>, and how to make it when absent."""
    r = cli("-C", str(checkout), "release", "build")
    assert r.code == 2
    tree = checkout.resolve() / "build" / "tiny"
    assert f"{tree} has no .patchctl-stamp: make the tree with `patchctl apply --into {tree}`" \
        in r.err


def test_release_refuses_an_edited_or_foreign_tree(cli, checkout: Path, stamped: Path) -> None:
    tree = stamped
    (tree / "src" / "util.c").write_text("/* edited */\n")
    r = cli("-C", str(checkout), "release", "build", "--tree", str(tree))
    assert r.code == 2
    assert "was edited after `patchctl apply` stamped it" in r.err
    stamp = tree / ".patchctl-stamp"
    text = stamp.read_text()
    fp = text.split('fingerprint = "', 1)[1].split('"', 1)[0]
    stamp.write_text(text.replace(fp, "1" * 64))
    r = cli("-C", str(checkout), "release", "build", "--tree", str(tree))
    assert f"was made for stack {'1' * 16}" in r.err and "--force" in r.err


def test_release_refuses_a_dirty_checkout(cli, checkout: Path, stamped: Path) -> None:
    (checkout / "native" / "notes.txt").write_text("uncommitted\n")
    r = cli("-C", str(checkout), "release", "build", "--tree", str(stamped))
    assert r.code == 2
    assert "has uncommitted changes (native/notes.txt)" in r.err


def test_release_refuses_an_upstream_without_license(cli, tmp_path: Path, upstream,
                                                     patches) -> None:
    """The builders' upstream has no LICENSE: the package could not carry its text."""
    from tests.builders import make_project

    project = make_project(tmp_path / "p", upstream, patches)
    shutil.copytree(REPO / "native", project / "native")
    (project / ".gitignore").write_text("/build/\n")
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "x")
    tree = tmp_path / "tree"
    assert cli("-C", str(project), "apply", "--into", str(tree), "--upstream",
               str(upstream.path)).code == 0
    r = cli("-C", str(project), "release", "build", "--tree", str(tree))
    assert r.code == 2
    assert "has no LICENSE" in r.err and "license text from the pinned tree" in r.err


# --- refusals at configure: a system library this machine lacks -------------------------------

# Configure's first line for each missing library, and the line that installs it on Debian,
# as patchctl relays them (native/cmake/Libraries.cmake, Vulkan.cmake).
LIBRARY_REFUSALS = {
    "nlohmann_json": ("worker: nlohmann_json not found.",
                      "apt-get install nlohmann-json3-dev # Debian/Ubuntu"),
    "OpenSSL": ("worker: OpenSSL (libcrypto) not found.",
                "apt-get install libssl-dev # Debian/Ubuntu"),
    "Vulkan": ("worker: the Vulkan loader or headers not found.",
               "apt-get install libvulkan-dev glslc spirv-headers mesa-vulkan-drivers "
               "# Debian/Ubuntu"),
}


def release_build_refused(tmp_path: Path, lane: str) -> str:
    """`release build --lane LANE` of a fresh checkout of the tiny stack, expected to stop
    at configure (exit 3, no archive); its stderr."""
    home = tmp_path / "home"
    home.mkdir()
    env = tool_env(home)
    with system_config_off(GIT_CONFIG_GLOBAL=env["GIT_CONFIG_GLOBAL"]):
        checkout = make_checkout(tmp_path / "checkout")
    patchctl(env, "-C", checkout, "apply", "--into", tmp_path / "tree")
    proc = patchctl(env, "-C", checkout, "release", "build", "--tree", tmp_path / "tree",
                    "--upstream-target", "tiny", "--lane", lane, "--out", tmp_path / "out",
                    check=False)
    assert proc.returncode == 3, proc.stderr
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())
    return proc.stderr


def assert_relays_the_refusal(stderr: str, library: str) -> None:
    """What configure wrote (what is missing, and how to install it), not CMake's call
    stack, on the one line of patchctl's error."""
    what, install = LIBRARY_REFUSALS[library]
    assert stderr.startswith(f"patchctl: error: release configure failed (exit 1): {what} | "
                             "Found: "), stderr
    assert f" | {install} | " in stderr, stderr
    for noise in ("Call Stack", "worker_library_fail", "Configuring incomplete", ".cmake:"):
        assert noise not in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1, stderr


@needs_tools
@pytest.mark.parametrize("lane", ["cpu", "vulkan"])
def test_release_build_without_a_library_names_it_and_how_to_install_it(tmp_path: Path,
                                                                          lane: str) -> None:
    """Issue (bare machine), item 2: a release lane's configure refused for a missing
    library; patchctl relayed CMake's last three lines, its call stack and "Configuring
    incomplete", not the refusal. Runs where a library is missing: tests/test_system_packages.py
    runs it with them hidden."""
    if system_packages.missing(*system_packages.LIBRARIES) is None:
        pytest.skip("nlohmann_json and OpenSSL are installed here; "
                    "test_system_packages.py runs this with them hidden")
    first = next(n for n in system_packages.LIBRARIES if system_packages.missing(n))
    assert_relays_the_refusal(release_build_refused(tmp_path, lane), first)


# --- the archive format on its own ------------------------------------------------------------

def test_archive_bytes_ignore_mtimes_owners_and_order(tmp_path: Path) -> None:
    trees = []
    for i, order in enumerate((["b", "a/x"], ["a/x", "b"])):
        root = tmp_path / f"d{i}" / "pkg"
        for rel in order:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(rel)
            os.utime(root / rel, (1000 * (i + 1), 1000 * (i + 1)))
        trees.append(root)
    a, b = tmp_path / "a.tar.gz", tmp_path / "b.tar.gz"
    layout.write_archive(trees[0], a, mtime=42)
    layout.write_archive(trees[1], b, mtime=42)
    assert a.read_bytes() == b.read_bytes()
    with gzip.open(a) as f, tarfile.open(fileobj=f) as tar:
        assert [m.name for m in tar.getmembers()] == ["pkg", "pkg/a", "pkg/a/x", "pkg/b"]


def test_extract_refuses_unsafe_entries(tmp_path: Path) -> None:
    evil = tmp_path / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        info = tarfile.TarInfo("pkg/../../escape")
        tar.addfile(info)
    with pytest.raises(Exception, match="unsafe entry"):
        layout.extract(evil, tmp_path / "out")
    assert not (tmp_path / "escape").exists()


def test_sums_parser_flags_malformed_lines() -> None:
    listed, problems = layout.parse_sums(f"{'a' * 64}  bin/worker\nnot a line\n"
                                         f"{'b' * 64}  ../etc/passwd\n")
    assert listed == {"bin/worker": "a" * 64}
    assert len(problems) == 2


def test_verify_names_lane_features_this_host_lacks() -> None:
    """The host half of verify's lane check, on an identity whose lane this host cannot have."""
    from patchctl.records import hostinfo
    from patchctl.release.check import _check_lane

    if hostinfo.cpu_features() is None:
        pytest.skip("this OS does not list CPU features")
    found: list[str] = []
    lane = {"name": "cpu-future", "arch": hostinfo.machine_arch(), "release": True,
            "cpu_features": ["no-such-feature"]}
    _check_lane({"lane": lane}, found)
    assert found == ["lane cpu-future needs CPU features no-such-feature, which this host lacks"]
    found.clear()
    _check_lane({"lane": dict(lane, arch="s390x-of-the-future")}, found)
    assert found == [f"lane cpu-future is for s390x-of-the-future, this host is "
                     f"{hostinfo.machine_arch()}"]


# --- verify: hostile packages, with a fake worker and no build -------------------

@pytest.fixture
def fake(tmp_path: Path) -> tuple[Path, Path]:
    """A package directory whose checks all pass, and its worker's run log (absent until
    the worker runs)."""
    marker = tmp_path / "worker-ran"
    return fake_release.make_package(tmp_path / "worker-0.1.0-cpu", marker), marker


@pytest.fixture
def tmpdir_of_verify(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The directory `release verify` makes its temp dirs in (checked empty afterwards)."""
    import tempfile

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


def verify_subprocess(target: Path, tmp: Path, timeout: float = 60,
                      ) -> subprocess.CompletedProcess[str]:
    """`patchctl release verify TARGET` in its own process, TMPDIR=tmp; a hang fails."""
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(REPO)}
    try:
        return subprocess.run([sys.executable, "-m", "patchctl", "release", "verify",
                               str(target)], env=env, capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"release verify {target} ran past {timeout} s")


def test_verify_accepts_a_fake_package_and_runs_its_worker(cli, fake, tmp_path: Path,
                                                          tmpdir_of_verify: Path) -> None:
    """The fake package passes every check, so the tests below change one thing each."""
    package, marker = fake
    r = cli("release", "verify", str(package))
    assert r.code == 0, r.out + r.err
    assert marker.read_text() == "--version --json\n--check --recipe " \
        f"{package / 'recipe.json'}\n"
    archive = tmp_path / "pkg.tar.gz"
    layout.write_archive(package, archive, mtime=0)
    r = cli("release", "verify", str(archive))
    assert r.code == 0 and "OK (6 files, lane cpu, stack ffffffffffffffff)" in r.out, r.out
    assert list(tmpdir_of_verify.iterdir()) == []


@pytest.mark.parametrize("tampered", ["bin/worker", "licenses/tiny/LICENSE", "manifest.json"])
def test_verify_never_runs_a_package_that_fails_its_checksums(cli, fake, tmp_path: Path,
                                                              tampered: str) -> None:
    """A package whose bin/worker fails SHA256SUMS was still executed
    (`worker --version --json`) before the finding. Every checksum is checked first, and
    nothing from a package with a failed check is run."""
    package, marker = fake
    pwned = tmp_path / "pwned"
    with open(package / tampered, "a") as f:
        f.write(f"\ntouch '{pwned}'\n" if tampered == "bin/worker" else "\n")
    archive = tmp_path / "pkg.tar.gz"
    layout.write_archive(package, archive, mtime=0)
    for target in (package, archive):
        r = cli("release", "verify", str(target))
        assert not marker.exists() and not pwned.exists(), "the tampered package was run"
        assert r.code == 1
        assert f"{tampered}: sha256" in r.out and "SHA256SUMS says" in r.out
        assert "1 finding(s); bin/worker was not run" in r.out


def test_verify_reads_no_special_file_of_a_package_directory(fake, tmp_path: Path) -> None:
    """`release verify DIR` blocked forever on a FIFO manifest.json. Any
    link or special file in the package is a finding; then nothing is read or run."""
    package, marker = fake
    for name in ("manifest.json", "SHA256SUMS", "bin/worker"):
        (package / name).rename(tmp_path / "aside")
        os.mkfifo(package / name)
        r = verify_subprocess(package, tmp_path, timeout=30)
        assert r.returncode == 1, r.stderr
        assert f"{name} in {package} is not a regular file" in r.stdout
        assert "1 finding(s); bin/worker was not run" in r.stdout
        (package / name).unlink()
        (tmp_path / "aside").rename(package / name)
    assert not marker.exists()


@pytest.mark.parametrize(("document", "broken", "finding"), [
    ("manifest.json", "[" * 200_000 + "]" * 200_000,
     "manifest.json: nested deeper than 64 levels"),
    ("manifest.json", lambda m: m.update(stack=[1]),
     "manifest.json: at stack: [1] is not of type 'object'"),
    ("manifest.json", lambda m: m["worker"].update(protocol_version="2"),
     "manifest.json: at worker/protocol_version: '2' is not of type 'integer'"),
    ("manifest.json", lambda m: m.update(schema="patchctl.release/9"),
     "manifest.json: at schema: 'patchctl.release/1' was expected"),
    ("manifest.json", "{", "manifest.json: not JSON"),
    ("recipe.json", lambda r: r.update(lane=["cpu"]),
     "recipe.json: at lane: ['cpu'] is not of type 'string'"),
    ("sbom.spdx.json", lambda s: s.update(packages=[1]),
     "sbom.spdx.json: at packages/0: 1 is not of type 'object'"),
    ("sbom.spdx.json", lambda s: s["files"][0].update(checksums={"SHA256": "x"}),
     "sbom.spdx.json: at files/0/checksums: {'SHA256': 'x'} is not of type 'array'"),
])
def test_verify_reports_a_malformed_document_as_one_finding(cli, fake, document: str, broken,
                                                            finding: str) -> None:
    """A manifest.json nested 200,000 deep (RecursionError) or with
    `"stack": [1]` (AttributeError) ended in a traceback. Each document is checked against
    its schema first; a problem is one finding, and the worker is not run."""
    package, marker = fake
    path = package / document
    if isinstance(broken, str):
        path.write_text(broken)
    else:
        data = json.loads(path.read_text())
        broken(data)
        path.write_text(json.dumps(data))
    fake_release.resum(package)
    r = cli("release", "verify", str(package))
    assert r.code == 1, r.out + r.err
    assert r.out.splitlines()[0].startswith(f"{package}: {finding}")
    assert r.out.splitlines()[1] == f"{package}: 1 finding(s); bin/worker was not run"
    assert not marker.exists()


@pytest.mark.parametrize(("output", "finding"), [
    ('{"stack": [1]}', "at the top level: 'build_type' is a required property"),
    (json.dumps({**fake_release.identity(), "stack": [1]}),
     "at stack: [1] is not of type 'object'"),
    ("[" * 200_000 + "]" * 200_000, "nested deeper than 64 levels"),
    ("worker 0.1.0", "not JSON"),
])
def test_verify_checks_the_workers_identity_against_its_schema(cli, tmp_path: Path,
                                                               output: str, finding: str) -> None:
    """The worker's own `--version --json` is untrusted too: `{"stack": [1]}`
    passed the old `"stack" in identity` test and reached `.get` on 1."""
    package = fake_release.make_package(tmp_path / "pkg", tmp_path / "ran", version_output=output)
    r = cli("release", "verify", str(package))
    assert r.code == 1, r.out + r.err
    assert f"bin/worker does not report a worker identity (`worker --version --json`: " \
        f"{finding}" in r.out
    assert r.out.splitlines()[-1] == f"{package}: 1 finding(s)"


def sparse_package(fake: tuple[Path, Path], tmp_path: Path, how: str) -> Path:
    """The fake package with bin/worker a 100 GiB sparse member that SHA256SUMS lists,
    in a tar.gz of a few hundred bytes."""
    package, _ = fake
    members = [m for m in fake_release.package_entries(package)
               if m[0].name != f"{package.name}/bin/worker"]
    name = f"{package.name}/bin/worker"
    if how == "pax":
        return fake_release.archive_of(tmp_path / "sparse.tar.gz",
                                       [*members, fake_release.pax_sparse(name, 100 << 30)])
    return fake_release.archive_of(tmp_path / "sparse.tar.gz", members, fmt=tarfile.GNU_FORMAT,
                                   raw=fake_release.gnu_sparse_header(name, 100 << 30))


@pytest.mark.parametrize("how", ["pax", "gnu"])
def test_verify_refuses_a_sparse_member_before_extracting(fake, tmp_path: Path, how: str) -> None:
    """A 1,298-byte tar.gz with a 100 GiB sparse member ran until killed
    (hashing 100 GiB of holes) and left its temp folder. Refused from its header."""
    archive = sparse_package(fake, tmp_path, how)
    assert archive.stat().st_size < 4000
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    r = verify_subprocess(archive, tmp, timeout=30)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr == (f"patchctl: error: {archive}: '{fake[0].name}/bin/worker' is a sparse "
                        "file; a worker package holds none\n")
    assert list(tmp.iterdir()) == []
    dest = tmp_path / "dest"
    with pytest.raises(InputError, match="sparse"):
        layout.extract(archive, dest)
    assert not dest.exists()
    assert not fake[1].exists()


def test_verify_refuses_a_gzip_bomb_before_extracting(cli, tmp_path: Path,
                                                      tmpdir_of_verify: Path) -> None:
    """A 200 KB gzip bomb was extracted to 200 MB before it was refused.
    The stream is counted while decompressed to nowhere; nothing is written."""
    bomb = tmp_path / "bomb.tar.gz"
    info = tarfile.TarInfo("pkg/bin/worker")
    info.size = 200 << 20
    with open(bomb, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w|") as tar:
        tar.addfile(info, ZeroReader(info.size))
    assert bomb.stat().st_size < 250_000
    r = cli("release", "verify", str(bomb))
    assert r.code == 2
    assert r.err.startswith(f"patchctl: error: {bomb}: unpacks to more than "
                            f"{layout.unpacked_limit(bomb.stat().st_size)} bytes")
    assert list(tmpdir_of_verify.iterdir()) == []
    dest = tmp_path / "dest"
    with pytest.raises(InputError, match="unpacks to more than"):
        layout.extract(bomb, dest)
    assert not dest.exists()


class ZeroReader:
    """``size`` zero bytes as a file object, without holding them."""

    def __init__(self, size: int) -> None:
        self.left = size

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        self.left -= n
        return bytes(n)


def test_verify_removes_its_temp_folder_when_interrupted(tmp_path: Path) -> None:
    """The temp folder goes on every way out; here Ctrl-C while the
    packaged worker runs (exit 130, nothing left in TMPDIR)."""
    import signal

    started = tmp_path / "started"
    package = fake_release.make_package(tmp_path / "pkg", tmp_path / "ran",
                                        before=f"touch '{started}'; exec sleep 60\n")
    archive = tmp_path / "pkg.tar.gz"
    layout.write_archive(package, archive, mtime=0)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(REPO)}
    # As Ctrl-C reaches a foreground process: SIGINT not ignored, even where this run was
    # started in the background (which passes it on ignored).
    proc = subprocess.Popen([sys.executable, "-m", "patchctl", "release", "verify",
                             str(archive)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 30
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists() and len(list(tmp.iterdir())) == 1
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert err.strip() == "patchctl: interrupted"
    assert list(tmp.iterdir()) == []


def test_package_documents_are_of_their_schemas(fake) -> None:
    """The schemas verify applies are defined once, beside the writers;
    what the writers make (manifest, SBOM) and the worker's identity are of them."""
    from patchctl.records.identity import IDENTITY_SCHEMA
    from patchctl.release import documents
    from patchctl.untrusted import validate

    package, _ = fake
    validate(fake_release.manifest(package.name), documents.MANIFEST_SCHEMA)
    validate(fake_release.identity(), IDENTITY_SCHEMA)
    for name, schema in ((layout.MANIFEST, documents.MANIFEST_SCHEMA),
                         (layout.RECIPE, documents.RECIPE_SCHEMA),
                         (layout.SBOM, documents.SBOM_SCHEMA)):
        validate(json.loads((package / name).read_text()), schema)
