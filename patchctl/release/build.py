"""``patchctl release build``: a reproducible worker package for one lane.

From a clean checkout (at a commit: SOURCE_DATE_EPOCH is its committer time)
and a stamp-verified ``patchctl apply --into`` tree, configure native/ out of
tree with the lane and the reproducibility settings (native/cmake/Lanes.cmake
remaps every build path), build and install the worker, write the manifest,
recipe, BUILDINFO, SBOM, license and SHA256SUMS, pack the archive, then unpack
it and run the packaged ``worker --self-test`` before the archive is kept.
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchctl import __version__, fsutil, gitrepo, procs
from patchctl.errors import EXIT_FINDINGS, EnvironmentFailure, InputError, PatchctlError, StackError
from patchctl.model import schemas
from patchctl.model.fingerprint import make_lock, short
from patchctl.model.stack import Stack, render_lock
from patchctl.records.evidence import worker_identity
from patchctl.release import devices, documents, layout
from patchctl.release.sbom import SbomInputs, document, license_id
from patchctl.reproducers.materialize import STAMP, manifest, read_stamp
from patchctl.toolout import reason

LANES = ("cpu", "cpu-avx2", "vulkan")
LICENSE_NAMES = ("LICENSE", "LICENSE.md", "LICENSE.txt", "COPYING")
# Variables that would change what the compiler does behind the recipe's back.
_DROPPED_ENV = ("CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "SOURCE_DATE_EPOCH")


class SelfTestFailed(PatchctlError):
    """The packaged worker refused to start or failed its self-test: no archive is kept."""

    exit_code = EXIT_FINDINGS


@dataclass
class ReleaseResult:
    archive: Path
    package: str
    lane: str
    fingerprint: str
    commit: str
    source_date_epoch: int
    size: int
    sha256: str
    seconds: float
    self_test: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"schema": schemas.RELEASE_BUILD, "archive": str(self.archive),
                "package": self.package, "lane": self.lane, "fingerprint": self.fingerprint,
                "commit": self.commit, "source_date_epoch": self.source_date_epoch,
                "bytes": self.size, "sha256": self.sha256, "seconds": round(self.seconds, 3),
                "self_test": self.self_test}


def default_tree(stack: Stack) -> Path:
    """Where the README's consumer path puts the tree: <project>/build/<upstream name>."""
    return stack.root.parent / "build" / stack.pin().name


def default_target(stack: Stack) -> str:
    """The library the worker links: `llama` for llama.cpp, else the upstream's name."""
    name = stack.pin().name
    return "llama" if name == "llama.cpp" else name


def build_release(stack: Stack, tree: Path | None = None, *, lane: str = "cpu",
                  out: Path | None = None, upstream_target: str | None = None,
                  build_dir: Path | None = None,
                  progress: Callable[[str], None] | None = None) -> ReleaseResult:
    t0 = time.perf_counter()
    say = progress or (lambda _m: None)
    tree = tree or default_tree(stack)
    upstream_target = upstream_target or default_target(stack)
    project = stack.root.parent.resolve()
    native = project / "native"
    if not (native / "CMakeLists.txt").is_file():
        raise InputError(f"{project} has no native/CMakeLists.txt: build releases from a "
                         "patchctl checkout (or name it with -C)")
    if lane not in LANES:
        raise InputError(f"--lane {lane}: known lanes are {', '.join(LANES)}")
    lock = make_lock(stack.pin(), stack.patches())
    on_disk = stack.lock()
    if on_disk is None or render_lock(on_disk) != render_lock(lock):
        raise StackError(f"{stack.lock_path} is missing or stale: run `patchctl lock` and commit")
    commit, epoch = _clean_commit(project)
    tree = tree.resolve()
    stamp_tree = _check_tree(tree, lock.fingerprint)
    license_rel, license_text = _upstream_license(tree, stack)

    from patchctl.reproducers.toolchain import find_toolchain, run_tool

    tools = find_toolchain()
    env = {k: v for k, v in os.environ.items()
           if k not in _DROPPED_ENV and not k.startswith("CMAKE_")}
    env.update(SOURCE_DATE_EPOCH=str(epoch), LC_ALL="C", TZ="UTC")
    out = (out or project / "build" / "release").absolute()
    with tempfile.TemporaryDirectory(prefix="patchctl-release-") as tmp:
        build = _fresh_build_dir(build_dir) if build_dir else Path(tmp) / "build"
        configure_args = ["-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                          f"-DWORKER_UPSTREAM_TARGET={upstream_target}",
                          f"-DWORKER_RELEASE_LANE={lane}"]
        steps = [
            ("configure", [tools.cmake, "-S", str(native), "-B", str(build), *configure_args,
                           f"-DWORKER_STACK_LOCK={stack.lock_path.resolve()}",
                           f"-DWORKER_UPSTREAM_DIR={tree}"]),
            ("build", [tools.cmake, "--build", str(build), "--target", "worker"]),
        ]
        for what, argv in steps:
            say(f"release: {what}")
            code, log, _ = run_tool(argv, say, env=env)
            if code != 0:
                raise EnvironmentFailure(f"release {what} failed (exit {code}): {reason(log)}")
        identity = worker_identity(build / "bin" / "worker")
        tested_on = devices.tested_on(build, env) if lane == "vulkan" else None
        package = _package_name(identity, lane)
        root = Path(tmp) / "stage" / package
        code, log, _ = run_tool([tools.cmake, "--install", str(build), "--component", "worker",
                                 "--strip", "--prefix", str(root)], env=env)
        if code != 0 or not (root / layout.WORKER).is_file():
            raise EnvironmentFailure(f"release install failed (exit {code}): {reason(log)}")

        say("release: writing the manifest, SBOM and checksums")
        (root / "licenses" / stack.pin().name).mkdir(parents=True)
        license_file = f"licenses/{stack.pin().name}/{Path(license_rel).name}"
        (root / license_file).write_text(license_text, encoding="utf-8")
        toolchain = {f"{identity['compiler']['id']} C++ compiler": identity["compiler"]["version"],
                     "cmake": tools.cmake_version, "ninja": tools.ninja_version,
                     **devices.shader_compiler(build, env)}
        man = documents.manifest(
            package=package, binary=layout.WORKER, identity=identity,
            upstream={"name": stack.pin().name, "url": stack.pin().url, "pin": lock.pin,
                      "tree": stamp_tree, "target": upstream_target,
                      "license": {"file": license_file, "from": license_rel,
                                  "spdx": license_id(license_text)}},
            commit=commit, source_date_epoch=epoch,
            toolchain={**toolchain, "patchctl": __version__},
            configure=[*configure_args, "-DWORKER_STACK_LOCK=SRC/stack/stack.lock",
                       "-DWORKER_UPSTREAM_DIR=TREE"], tested_on=tested_on)
        _write_json(root / layout.MANIFEST, man)
        _write_json(root / layout.RECIPE, {
            "schema": layout.RECIPE_SCHEMA, "protocol_version": identity["protocol_version"],
            "pin": lock.pin, "stack_fingerprint": lock.fingerprint,
            "lane": identity["lane"]["name"], "artifacts": []})
        libraries = [lib for lib in identity.get("libraries", []) if isinstance(lib, dict)]
        (root / layout.BUILDINFO).write_text(_buildinfo(man, stack, lane, upstream_target,
                                                        libraries))
        sbom_files = {rel: root / rel for rel in (layout.WORKER, license_file)}
        _write_json(root / layout.SBOM, document(SbomInputs(
            package=package, engine_version=identity["engine_version"], lane=lane,
            fingerprint=lock.fingerprint, upstream_name=stack.pin().name,
            upstream_url=stack.pin().url, pin=lock.pin, license_text=license_text,
            license_file=license_file,
            patches=[(p.name, layout.file_sha256(p.path)) for p in stack.patches()],
            toolchain=toolchain, libraries=libraries, files=sbom_files,
            source_date_epoch=epoch)))
        (root / layout.SUMS).write_text(layout.render_sums(root))

        out.mkdir(parents=True, exist_ok=True)
        staged = Path(tmp) / f"{package}{layout.SUFFIX}"
        layout.write_archive(root, staged, mtime=epoch)
        say("release: self-test of the packaged worker")
        report = self_test(staged, Path(tmp) / "unpacked")
        archive = out / staged.name
        fsutil.atomic_write(archive, staged.read_bytes())
    return ReleaseResult(archive=archive, package=package, lane=lane,
                         fingerprint=lock.fingerprint, commit=commit, source_date_epoch=epoch,
                         size=archive.stat().st_size, sha256=layout.file_sha256(archive),
                         seconds=time.perf_counter() - t0, self_test=report)


def self_test(archive: Path, dest: Path) -> dict[str, Any]:
    """Unpack ``archive`` and run its ``worker --self-test --recipe recipe.json --json``."""
    root = layout.extract(archive, dest)
    worker = root / layout.WORKER
    proc = procs.capture([str(worker), "--self-test", "--recipe", str(root / layout.RECIPE),
                           "--json"], timeout=300)
    if proc.returncode != 0:
        raise SelfTestFailed(f"the packaged worker failed its self-test (exit {proc.returncode}): "
                             f"{reason(proc.stderr)}; no archive written")
    from patchctl.untrusted import BadDocument, parse_json

    try:
        report: dict[str, Any] = parse_json(proc.stdout, {"type": "object"})
    except BadDocument as e:
        raise SelfTestFailed(f"the packaged worker's self-test report is not JSON ({e}); "
                             "no archive written") from e
    return report


BUILD_DIR_MARK = ".patchctl-release-build"


def _fresh_build_dir(path: Path) -> Path:
    """``--build-dir``: emptied for this build. Only a new or empty directory, or one a
    previous release build marked as its own, is ever emptied."""
    path = path.absolute()
    if path.exists() and not path.is_dir():
        raise InputError(f"--build-dir {path} is not a directory")
    if path.is_dir() and any(path.iterdir()):
        if not (path / BUILD_DIR_MARK).is_file():
            raise InputError(f"--build-dir {path} is not empty and no release build made it: "
                             "give a new or empty directory")
        fsutil.remove_tree(path)
    path.mkdir(parents=True, exist_ok=True)
    (path / BUILD_DIR_MARK).write_text("a `patchctl release build` directory; emptied by the "
                                       "next one\n")
    return path


def _clean_commit(project: Path) -> tuple[str, int]:
    head = gitrepo.head_commit(project)
    if head is None:
        raise InputError(f"{project} is not a git checkout with a commit: a release is built "
                         "from a commit (its time is SOURCE_DATE_EPOCH)")
    dirty = gitrepo.dirty_paths(project, project) or []
    if dirty:
        more = f" and {len(dirty) - 1} more" if len(dirty) > 1 else ""
        raise InputError(f"the checkout {project} has uncommitted changes ({dirty[0]}{more}): "
                         "a release is built from a commit; commit or stash them")
    return head


def _check_tree(tree: Path, fingerprint: str) -> str:
    """The stamp's tree id, after proving ``tree`` is pin + this stack, unedited."""
    fix = f"patchctl apply --into {tree} --force"
    stamp = read_stamp(tree) if tree.is_dir() else None
    if stamp is None:
        raise InputError(f"{tree} has no {STAMP}: make the tree with `patchctl apply --into "
                         f"{tree}`; a release never builds an unverified upstream")
    if stamp.fingerprint != fingerprint:
        raise InputError(f"{tree} was made for stack {short(stamp.fingerprint)}, the lock is "
                         f"{short(fingerprint)}: re-make it with `{fix}`")
    if manifest(tree) != stamp.manifest:
        raise InputError(f"{tree} was edited after `patchctl apply` stamped it: re-make it "
                         f"with `{fix}`")
    return stamp.tree


def _upstream_license(tree: Path, stack: Stack) -> tuple[str, str]:
    """The upstream's license text as the pinned tree has it (no patch may touch it)."""
    for name in LICENSE_NAMES:
        path = tree / name
        if path.is_file():
            touched = [p.name for p in stack.patches() for f in p.files if name in f.paths]
            if touched:
                raise StackError(f"{touched[0]} changes {name}; the release's license text must "
                                 "be the pinned upstream's")
            return name, path.read_text(encoding="utf-8", errors="replace")
    raise InputError(f"{tree} has no {' / '.join(LICENSE_NAMES)}: the package must carry the "
                     "upstream's license text from the pinned tree")


def _package_name(identity: dict[str, Any], lane: str) -> str:
    system = platform.system().lower() or "unknown"
    arch = identity["lane"]["arch"] or "unknown"
    version, fp = identity["engine_version"], identity["stack"]["short"]
    return f"worker-{version}-{fp}-{lane}-{system}-{arch}"


def _write_json(path: Path, data: dict[str, Any]) -> None:
    fsutil.atomic_write(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def _buildinfo(man: dict[str, Any], stack: Stack, lane: str, target: str,
               libraries: list[dict[str, str]]) -> str:
    lane_info, backend = man["lane"], man.get("backend") or {"name": "cpu"}
    patches = "".join(f"  {p.name}  sha256 {layout.file_sha256(p.path)}\n"
                      for p in stack.patches())
    tools = "".join(f"  {k}: {v}\n" for k, v in sorted(man["toolchain"].items()))
    libs = "".join(f"  {lib.get('name')} {lib.get('version')} ({lib.get('license')}, "
                   f"{lib.get('linkage')})\n" for lib in libraries) or "  none\n"
    rel_lock = stack.lock_path.resolve().relative_to(stack.root.parent.resolve()).as_posix()
    patches = patches or "  none\n"
    return (
        f"# BUILDINFO for {man['package']}: what built it and how to rebuild it bit for bit.\n"
        f"package: {man['package']}\n"
        f"lane: {lane} ({lane_info['arch']}; CPU features: "
        f"{', '.join(lane_info['cpu_features']) or 'none'}; backend {backend['name']})\n"
        f"{devices.buildinfo_lines(backend)}"
        f"source commit: {man['source']['commit']}\n"
        f"SOURCE_DATE_EPOCH: {man['source']['source_date_epoch']}\n"
        f"upstream: {man['upstream']['name']} {man['upstream']['pin']} "
        f"(tree {man['upstream']['tree']}, library target {target})\n"
        f"stack: {man['stack']['algorithm']} {man['stack']['fingerprint']}\n"
        f"patches:\n{patches}"
        f"toolchain:\n{tools}"
        f"libraries (the same versions rebuild the same bytes):\n{libs}"
        "environment: SOURCE_DATE_EPOCH as above, LC_ALL=C, TZ=UTC; CFLAGS, CXXFLAGS, "
        "CPPFLAGS, LDFLAGS and CMAKE_* unset"
        f"{devices.buildinfo_environment(backend)}\n"
        "\n"
        "commands (SRC: the checkout at the source commit; TREE: the tree made by\n"
        "`patchctl apply --into TREE`; BUILD: an empty directory; STAGE: the package):\n"
        f"  cmake -S SRC/native -B BUILD {' '.join(man['configure'][:-2])} "
        f"-DWORKER_STACK_LOCK=SRC/{rel_lock} -DWORKER_UPSTREAM_DIR=TREE\n"
        "  cmake --build BUILD --target worker\n"
        "  cmake --install BUILD --component worker --strip --prefix STAGE\n"
        "  then manifest.json, recipe.json, BUILDINFO, sbom.spdx.json, licenses/ and\n"
        "  SHA256SUMS are written, and the archive packed with sorted entries, mtime\n"
        "  SOURCE_DATE_EPOCH, owner 0:0 without names, gzip without name or time\n"
        "\n"
        "rebuild (the archive must come out byte-identical):\n"
        f"  git -C SRC checkout {man['source']['commit']}    # SRC: a clone of the checkout\n"
        "  patchctl -C SRC apply --into TREE\n"
        f"  patchctl -C SRC release build --tree TREE --lane {lane} --upstream-target {target}\n"
        "check:\n"
        f"  patchctl release verify {man['package']}{layout.SUFFIX}\n"
        "  sha256sum -c SHA256SUMS    # inside the unpacked package\n"
    )
