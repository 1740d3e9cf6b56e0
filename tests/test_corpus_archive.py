"""The archive reader: hostile worker-package archives for `release verify`.

Each case is a tar.gz crafted header by header (tests/fake_release.py): sparse and
oversized members, gzip bombs, links and devices, escaping and overlong names,
broken streams. Every one is refused with one error line (exit 2) before a byte is
extracted: ``layout.extract`` leaves its destination untouched, and `release verify`
leaves no temp folder behind. Nothing in the package is ever run.
"""

from __future__ import annotations

import gzip
import io
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from patchctl.errors import InputError
from patchctl.release import layout
from tests import fake_release
from tests.corpus import USAGE, Case, check, params
from tests.fake_release import archive_of, entry, package_entries

Build = Callable[[Path, Path], Path]  # (package dir, archive path) -> the archive
BOMB = 64 << 20  # beyond what a few-KB archive may unpack to (layout.unpacked_limit)


def _with(*extra: tuple[tarfile.TarInfo, bytes], raw: bytes = b"",
          fmt: int = tarfile.PAX_FORMAT) -> Build:
    """The real package's members, then ``extra`` ones (and ``raw`` header blocks)."""
    return lambda pkg, out: archive_of(out, [*package_entries(pkg), *extra], raw=raw, fmt=fmt)


def _sized(name: str, size: int) -> bytes:
    """A header claiming ``size`` bytes of data that never follow."""
    info = tarfile.TarInfo(name)
    info.size = size
    return info.tobuf(tarfile.PAX_FORMAT)


def _gzip_of(tar_bytes: Callable[[Path], bytes]) -> Build:
    def build(pkg: Path, out: Path) -> Path:
        out.write_bytes(gzip.compress(tar_bytes(pkg), mtime=0))
        return out
    return build


def _tar_then_zeros(pkg: Path) -> bytes:
    """A good package's tar stream, then BOMB zero bytes after its end-of-archive."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in package_entries(pkg):
            tar.addfile(info, io.BytesIO(data) if data else None)
    return buffer.getvalue() + bytes(BOMB)


def _raw(data: bytes) -> Build:
    def build(_pkg: Path, out: Path) -> Path:
        out.write_bytes(data)
        return out
    return build


def _plain_tar(pkg: Path, out: Path) -> Path:
    archive_of(out, package_entries(pkg))
    out.write_bytes(gzip.decompress(out.read_bytes()))
    return out


def _truncated(pkg: Path, out: Path) -> Path:
    archive_of(out, package_entries(pkg))
    out.write_bytes(out.read_bytes()[:200])
    return out


W = "worker-0.1.0-cpu"  # the package's top-level directory (the `fake` fixture)
HUGE = 100 << 30
CASES = [
    Case("sparse-pax-100g", _with(fake_release.pax_sparse(f"{W}/bin/big", HUGE)), USAGE,
         "is a sparse file"),
    Case("sparse-gnu-100g", _with(raw=fake_release.gnu_sparse_header(f"{W}/bin/big", HUGE),
                                  fmt=tarfile.GNU_FORMAT), USAGE, "is a sparse file"),
    Case("size-header-100g", _with(raw=_sized(f"{W}/bin/big", HUGE)), USAGE,
         f"is {HUGE} bytes, more than"),
    Case("gzip-bomb-one-file", _with(entry(f"{W}/bin/big", data=bytes(BOMB))), USAGE,
         "unpacks to more than"),
    Case("gzip-bomb-many-files", _with(*[entry(f"{W}/z{i}", data=bytes(1 << 20))
                                         for i in range(BOMB >> 20)]), USAGE,
         "unpacks to more than"),
    Case("gzip-bomb-after-the-end", _gzip_of(_tar_then_zeros), USAGE, "unpacks to more than"),
    Case("pax-header-bomb", _with(entry(f"{W}/x", pax_headers={"comment": "a" * BOMB})),
         USAGE, "unpacks to more than"),
    Case("too-many-entries", _with(*[entry(f"{W}/e{i}") for i in range(layout.MAX_MEMBERS)]),
         USAGE, f"more than {layout.MAX_MEMBERS} entries"),
    Case("symlink-out", _with(entry(f"{W}/bin/tool", tarfile.SYMTYPE, linkname="/etc/passwd")),
         USAGE, "unsafe entry"),
    Case("hardlink-out", _with(entry(f"{W}/bin/tool", tarfile.LNKTYPE, linkname="/etc/passwd")),
         USAGE, "unsafe entry"),
    Case("fifo-manifest", lambda pkg, out: archive_of(out, [
        entry(f"{W}/manifest.json", tarfile.FIFOTYPE) if i.name == f"{W}/manifest.json"
        else (i, d) for i, d in package_entries(pkg)]), USAGE, "unsafe entry"),
    Case("char-device", _with(entry(f"{W}/dev", tarfile.CHRTYPE, devmajor=1, devminor=3)),
         USAGE, "unsafe entry"),
    Case("absolute-path", _with(entry("/tmp/planted")), USAGE, "unsafe entry"),
    Case("dot-dot", _with(entry(f"{W}/../../planted")), USAGE, "unsafe entry"),
    Case("name-100k-bytes", _with(entry(f"{W}/" + "a/" * 50_000 + "x")), USAGE, "unsafe entry"),
    Case("name-with-escapes", _with(entry(f"{W}/\x1b]0;owned\x07\nfake line",
                                          tarfile.SYMTYPE, linkname="x")),
         USAGE, "unsafe entry"),
    Case("two-top-level-dirs", _with(entry("other/x")), USAGE, "2 top-level entries"),
    Case("no-entries", lambda _pkg, out: archive_of(out, []), USAGE, "0 top-level entries"),
    Case("top-level-file", lambda _pkg, out: archive_of(out, [entry(W, data=b"x")]), USAGE,
         "top-level entry is not a directory"),
    Case("not-gzip", _plain_tar, USAGE, "not a readable tar.gz"),
    Case("truncated-gzip", _truncated, USAGE, "not a readable tar.gz"),
    Case("empty-file", _raw(b""), USAGE, "not a readable tar.gz"),
    Case("gzip-of-garbage", _raw(b"\x1f\x8b\x08\x00" + bytes(range(256)) * 4), USAGE,
         "not a readable tar.gz"),
]


@pytest.fixture
def package(tmp_path: Path) -> tuple[Path, Path]:
    return fake_release.make_package(tmp_path / W, tmp_path / "worker-ran"), tmp_path / "worker-ran"


@params(CASES)
def test_hostile_archive_is_refused_before_extraction(cli, case: Case, package,
                                                      tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    pkg, ran = package
    build: Build = case.data
    archive = build(pkg, tmp_path / "hostile.tar.gz")
    assert archive.stat().st_size < 300_000  # small: the danger is what it unpacks to
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    r = cli("release", "verify", str(archive))
    check(r, case)
    assert list(tmp.iterdir()) == [], "release verify left its temp folder"
    assert not ran.exists(), "a worker from a refused archive ran"
    dest = tmp_path / "dest"
    with pytest.raises(InputError):
        layout.extract(archive, dest)
    assert not dest.exists(), "extract wrote before refusing"
    assert not (tmp_path / "planted").exists()


def test_the_good_archive_passes(cli, package, tmp_path: Path) -> None:
    """The corpus's base: the same members, unchanged, verify clean."""
    pkg, ran = package
    archive = archive_of(tmp_path / "good.tar.gz", package_entries(pkg))
    check(cli("release", "verify", str(archive)), 0, "OK (6 files")
    assert ran.exists()
