"""Worker packages without a build: a shell-script ``bin/worker`` and the documents
patchctl's own writers make, so `release verify` can be tested in milliseconds.

The script logs every run (its arguments, one line) to a marker file outside the
package: a test proves a worker was never run by that file's absence. Hostile
archives for the archive-reader tests are crafted here too, header by header.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import tarfile
from pathlib import Path
from typing import Any

from patchctl.records import hostinfo
from patchctl.release import documents, layout
from patchctl.release.sbom import SbomInputs, document

PATCH = "0001-tiny-fix.patch"
LICENSE = "licenses/tiny/LICENSE"
MIT = ("MIT License\n\nPermission is hereby granted, free of charge, to any person "
       "obtaining a copy of this software\n")


LIBRARIES = [{"name": "nlohmann_json", "version": "3.11.2", "license": "MIT",
              "linkage": "STATIC_LINK"},
             {"name": "OpenSSL", "version": "3.0.22", "license": "Apache-2.0",
              "linkage": "DYNAMIC_LINK"}]


def identity() -> dict[str, Any]:
    """What a release worker of this host's cpu lane says to ``--version --json``."""
    fingerprint = "f" * 64
    return {
        "protocol_version": 4, "engine_version": "0.1.0",
        "stack": {"algorithm": "pcfp2", "name": "tiny", "pin": "a" * 40,
                  "fingerprint": fingerprint, "short": fingerprint[:16],
                  "patches": [{"file": PATCH, "strip": 1, "digest": "d" * 64}]},
        "compiler": {"id": "GNU", "version": "12.2.0"}, "cmake_version": "3.30.0",
        "build_type": "Release", "certification": "uncertified",
        "upstream_build": {"dir": "/src/tree", "target": "tiny", "tree": "b" * 40},
        "lane": {"name": "cpu", "arch": hostinfo.machine_arch(), "cpu_features": [],
                 "release": True},
        "libraries": LIBRARIES,
    }


def worker_script(marker: Path, *, version_output: str | None = None,
                  before: str = "") -> str:
    """A ``bin/worker`` that logs its arguments to ``marker``, prints ``version_output``
    (default: ``identity()``) for ``--version`` and passes ``--check``."""
    output = json.dumps(identity()) if version_output is None else version_output
    return (f"#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{marker}'\n{before}"
            f"case \"$1\" in\n  --version) cat <<'EOF'\n{output}\nEOF\n  ;;\n"
            "  --check) echo 'package: ok' ;;\nesac\n")


def make_package(root: Path, marker: Path, **script: Any) -> Path:
    """A complete package directory at ``root`` whose checks all pass."""
    ident = identity()
    (root / "bin").mkdir(parents=True)
    worker = root / layout.WORKER
    worker.write_text(worker_script(marker, **script))
    worker.chmod(0o755)
    (root / LICENSE).parent.mkdir(parents=True)
    (root / LICENSE).write_text(MIT)
    write_json(root / layout.MANIFEST, manifest(root.name))
    write_json(root / layout.RECIPE, {
        "schema": layout.RECIPE_SCHEMA, "protocol_version": 4, "pin": ident["stack"]["pin"],
        "stack_fingerprint": ident["stack"]["fingerprint"], "lane": "cpu", "artifacts": []})
    (root / layout.BUILDINFO).write_text("# BUILDINFO for a fake package\n")
    write_json(root / layout.SBOM, document(SbomInputs(
        package=root.name, engine_version=ident["engine_version"], lane="cpu",
        fingerprint=ident["stack"]["fingerprint"], upstream_name="tiny",
        upstream_url="https://example.invalid/tiny.git", pin=ident["stack"]["pin"],
        license_text=MIT, license_file=LICENSE, patches=[(PATCH, "d" * 64)],
        toolchain={"GNU C++ compiler": "12.2.0", "cmake": "3.30.0"},
        files={rel: root / rel for rel in (layout.WORKER, LICENSE)}, libraries=LIBRARIES,
        source_date_epoch=0)))
    resum(root)
    return root


def manifest(package: str) -> dict[str, Any]:
    """What ``release build`` writes for ``identity()`` (documents.manifest, its writer)."""
    ident = identity()
    return documents.manifest(
        package=package, binary=layout.WORKER, identity=ident,
        upstream={"name": "tiny", "url": "https://example.invalid/tiny.git",
                  "pin": ident["stack"]["pin"], "tree": ident["upstream_build"]["tree"],
                  "target": "tiny", "license": {"file": LICENSE, "from": "LICENSE",
                                                "spdx": "MIT"}},
        commit="c" * 40, source_date_epoch=0,
        toolchain={"GNU C++ compiler": "12.2.0", "cmake": "3.30.0", "patchctl": "0"},
        configure=["-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"])


def write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def resum(root: Path) -> None:
    """SHA256SUMS re-written, as a tamperer who covers his tracks would."""
    (root / layout.SUMS).write_text(layout.render_sums(root))


# --- hostile archives ---------------------------------------------------------------------

def archive_of(path: Path, members: list[tuple[tarfile.TarInfo, bytes]], *,
               raw: bytes = b"", fmt: int = tarfile.PAX_FORMAT) -> Path:
    """A tar.gz of ``members`` (header, data), then ``raw`` (crafted blocks) before
    the end-of-archive marker."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=fmt) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data else None)
        if raw:
            tar.fileobj.write(raw)
            tar.offset += len(raw)
    path.write_bytes(gzip.compress(buffer.getvalue(), mtime=0))
    return path


def entry(name: str, kind: bytes = tarfile.REGTYPE, data: bytes = b"", *, size: int | None = None,
          mode: int = 0o644, **attrs: Any) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = len(data) if size is None else size
    info.mode = 0o755 if kind == tarfile.DIRTYPE else mode
    for key, value in attrs.items():
        setattr(info, key, value)
    return info, data


def package_entries(root: Path) -> list[tuple[tarfile.TarInfo, bytes]]:
    """``root`` (a package directory) as archive members, its name on top."""
    out = [entry(root.name, tarfile.DIRTYPE)]
    for dirpath, dirnames, filenames in sorted(os.walk(root)):
        for name in sorted(dirnames):
            rel = (Path(dirpath) / name).relative_to(root.parent).as_posix()
            out.append(entry(rel, tarfile.DIRTYPE))
        for name in sorted(filenames):
            path = Path(dirpath) / name
            out.append(entry(path.relative_to(root.parent).as_posix(), data=path.read_bytes(),
                             mode=0o755 if os.access(path, os.X_OK) else 0o644))
    return out


def gnu_sparse_header(name: str, realsize: int) -> bytes:
    """An old-GNU sparse member's header (type ``S``, as ``tar --sparse`` writes): no
    data blocks, a real size of ``realsize`` bytes, written as base-256."""
    info = tarfile.TarInfo(name)
    info.type = tarfile.GNUTYPE_SPARSE
    info.mode = 0o755
    buf = bytearray(info.tobuf(tarfile.GNU_FORMAT))
    buf[483:495] = b"\x80" + realsize.to_bytes(11, "big")  # realsize, base-256
    buf[148:156] = b" " * 8
    buf[148:156] = b"%06o\0 " % sum(buf[:512])
    return bytes(buf)


def pax_sparse(name: str, realsize: int) -> tuple[tarfile.TarInfo, bytes]:
    """A PAX (GNU 0.1) sparse member: one empty data region, then a hole to ``realsize``."""
    return entry(name, mode=0o755, pax_headers={"GNU.sparse.size": str(realsize),
                                                 "GNU.sparse.map": "0,0"})
