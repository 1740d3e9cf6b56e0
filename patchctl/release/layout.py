"""A worker package: its files, SHA256SUMS, and the reproducible tar.gz that carries it.

The archive holds one top-level directory named like the package. Entries are
sorted, every mtime is SOURCE_DATE_EPOCH, owners are 0/0 with no names,
modes are 0755 or 0644, and gzip stores no name and mtime 0: the same files
give the same bytes on any machine, in any directory, at any time.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile
import zlib
from pathlib import Path

from patchctl.errors import InputError
from patchctl.model import schemas
from patchctl.untrusted import shorten

SCHEMA = schemas.RELEASE
RECIPE_SCHEMA = schemas.RECIPE
MANIFEST = "manifest.json"
SUMS = "SHA256SUMS"
BUILDINFO = "BUILDINFO"
SBOM = "sbom.spdx.json"
RECIPE = "recipe.json"
WORKER = "bin/worker"
SUFFIX = ".tar.gz"


def file_sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def package_files(root: Path) -> list[str]:
    """Every regular file under ``root`` as a sorted ``/``-path, SHA256SUMS left out.

    Raises InputError for anything else (a link, a device): a package holds files.
    """
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if full.is_symlink() or not full.is_file():
                raise InputError(f"{rel} in {root} is not a regular file")
            if rel != SUMS:
                files.append(rel)
    return sorted(files, key=lambda p: p.encode())


def render_sums(root: Path) -> str:
    """SHA256SUMS as `sha256sum` writes it, so `sha256sum -c SHA256SUMS` checks it too."""
    return "".join(f"{file_sha256(root / rel)}  {rel}\n" for rel in package_files(root))


def parse_sums(text: str) -> tuple[dict[str, str], list[str]]:
    """``{path: sha256}`` and the malformed lines' complaints."""
    listed: dict[str, str] = {}
    problems = []
    for number, line in enumerate(text.splitlines(), 1):
        digest, sep, rel = line.partition("  ")
        if not sep or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest) \
                or not rel or rel.startswith("/") or ".." in rel.split("/") or rel in listed:
            problems.append(f"{SUMS} line {number} is malformed: {line[:80]!r}")
            continue
        listed[rel] = digest
    return listed, problems


def write_archive(root: Path, archive: Path, *, mtime: int) -> None:
    """``root`` (the package directory) as a reproducible tar.gz at ``archive``."""
    top = root.name
    entries = [top] + [f"{top}/{rel}" for rel in _all_paths(root)]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name in entries:
            path = root.parent / name
            info = tarfile.TarInfo(name)
            info.mtime = mtime
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if path.is_dir():
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tar.addfile(info)
            else:
                info.mode = 0o755 if os.access(path, os.X_OK) else 0o644
                info.size = path.stat().st_size
                with open(path, "rb") as f:
                    tar.addfile(info, f)
    tmp = archive.with_name(f".{archive.name}.tmp")
    with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0,
                                               compresslevel=9) as gz:
        gz.write(buffer.getvalue())
    os.replace(tmp, archive)


def _all_paths(root: Path) -> list[str]:
    """Directories and files under ``root``, sorted byte-wise, so parents come first."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            out.append((Path(dirpath) / name).relative_to(root).as_posix())
    return sorted(out, key=lambda p: p.encode())


# What an archive may unpack to, checked before a byte is written (SECURITY.md). A worker
# package is a stripped binary and a few small text files: tens of MB, compressing 2-4x.
MAX_MEMBERS = 10_000
MAX_NAME_BYTES = 1024
MAX_MEMBER_BYTES = 1 << 30  # one file
MAX_UNPACKED_BYTES = 2 << 30  # the whole tar stream, headers included
MAX_RATIO = 32  # unpacked bytes per archive byte, beyond a first RATIO_FREE
RATIO_FREE = 16 << 20


def extract(archive: Path, dest: Path) -> Path:
    """Unpack a package archive into ``dest``; returns the package directory.

    Refuses (InputError) before writing a byte: a tar stream that unpacks to more than
    ``unpacked_limit`` (a gzip bomb: counted while decompressing, nothing kept), then,
    from the member headers alone, anything but one top-level directory of plain files
    and directories with safe relative names (of at most MAX_NAME_BYTES), a sparse
    member, one over MAX_MEMBER_BYTES and more than MAX_MEMBERS of them. tarfile's
    ``data`` filter extracts what passed.
    """
    limit = unpacked_limit(archive.stat().st_size)
    try:
        _check_stream(archive, limit)
        with tarfile.open(archive, mode="r:gz") as tar:
            members = _checked_members(tar, archive, limit)
            tops = {m.name.split("/", 1)[0] for m in members}
            if len(tops) != 1:
                raise InputError(f"{archive}: {len(tops)} top-level entries; a worker package "
                                 "has exactly one directory")
            if any(m.name == next(iter(tops)) and not m.isdir() for m in members):
                raise InputError(f"{archive}: its top-level entry is not a directory")
            tar.extractall(dest, members=members, filter="data")
    except (tarfile.TarError, OSError, EOFError, zlib.error) as e:
        raise InputError(f"{archive}: not a readable tar.gz ({shorten(str(e))})") from e
    root = dest / tops.pop()
    if not root.is_dir():
        raise InputError(f"{archive}: its top-level entry is not a directory")
    return root


def unpacked_limit(archive_bytes: int) -> int:
    """The most an archive of ``archive_bytes`` may unpack to."""
    return min(MAX_UNPACKED_BYTES, RATIO_FREE + MAX_RATIO * archive_bytes)


def _check_stream(archive: Path, limit: int) -> None:
    """Decompress ``archive`` to nowhere, refusing it once it passes ``limit`` bytes."""
    total = 0
    with gzip.open(archive, "rb") as gz:
        while chunk := gz.read(1 << 20):
            total += len(chunk)
            if total > limit:
                raise InputError(f"{archive}: unpacks to more than {limit} bytes "
                                 f"({archive.stat().st_size} packed); not a worker package")


def _checked_members(tar: tarfile.TarFile, archive: Path, limit: int) -> list[tarfile.TarInfo]:
    """The members, from their headers (tarfile skips the data unread), each checked."""
    members: list[tarfile.TarInfo] = []
    total = 0
    for m in tar:
        if len(members) == MAX_MEMBERS:
            raise InputError(f"{archive}: more than {MAX_MEMBERS} entries; not a worker package")
        parts = m.name.split("/")
        what = f"'{shorten(m.name, 120)}'"
        if m.name.startswith("/") or ".." in parts or not (m.isfile() or m.isdir()) \
                or len(m.name.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
            raise InputError(f"{archive}: unsafe entry {what}; not a worker package")
        if m.issparse() or m.type == tarfile.GNUTYPE_SPARSE:
            raise InputError(f"{archive}: {what} is a sparse file; a worker package holds none")
        if m.size > MAX_MEMBER_BYTES:
            raise InputError(f"{archive}: {what} is {m.size} bytes, more than "
                             f"{MAX_MEMBER_BYTES}; not a worker package")
        total += m.size
        if total > limit:
            raise InputError(f"{archive}: its files add up to more than {limit} bytes; "
                             "not a worker package")
        members.append(m)
    return members
