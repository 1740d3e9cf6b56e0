"""The stack's files: series, pin, lock; no git needed."""

from __future__ import annotations

import pytest

from patchctl.errors import StackError
from patchctl.stack import Lock, LockedPatch, Pin, parse_lock, parse_pin, parse_series, render_lock


def test_series_comments_blanks_and_strip() -> None:
    entries = parse_series("# head\n\n0001-a.patch\n  0002-b.patch -p0  # why\n#0003-c.patch\n")
    assert [(e.name, e.strip, e.line) for e in entries] == [("0001-a.patch", 1, 3),
                                                            ("0002-b.patch", 0, 4)]


@pytest.mark.parametrize(("text", "fragment"), [
    ("a.patch\na.patch\n", "listed twice"),
    ("a.patch -R\n", "unknown option '-R'"),
    ("a.patch --fuzz=3\n", "unknown option"),
    ("../a.patch\n", "leaves patches/"),
    ("/etc/a.patch\n", "leaves patches/"),
])
def test_series_errors(text: str, fragment: str) -> None:
    with pytest.raises(StackError, match=fragment.replace("(", r"\(")):
        parse_series(text)


def test_pin_round_trip_and_tag_is_not_a_pin() -> None:
    pin = Pin(name="llama.cpp", url="https://github.com/ggml-org/llama.cpp",
              commit="45155597aa23243c5f6d10064bd9bca3eaddee16", tag="b9000")
    assert parse_pin(pin.to_toml()) == pin
    with pytest.raises(StackError, match="40-hex"):
        parse_pin('name = "x"\nurl = "u"\ncommit = "b9000"\n')
    with pytest.raises(StackError, match="missing commit"):
        parse_pin('name = "x"\nurl = "u"\ntag = "b9000"\n')


def test_lock_round_trip_is_byte_stable() -> None:
    lock = Lock(algorithm="pcfp1", name="n", pin="a" * 40, fingerprint="f" * 64,
                patches=(LockedPatch("0001-x.patch", 1, "d" * 64),))
    text = render_lock(lock)
    assert parse_lock(text) == lock
    assert render_lock(parse_lock(text)) == text


def test_malformed_lock() -> None:
    with pytest.raises(StackError, match="malformed lock"):
        parse_lock('format = 1\nname = "x"\n')


def test_atomic_write_keeps_normal_permissions(tmp_path) -> None:
    """Regression: files written through mkstemp were left 0600 (unreadable to others)."""
    import os

    from patchctl.fsutil import atomic_write

    old = os.umask(0o022)
    try:
        atomic_write(tmp_path / "new.txt", "x")
        assert (tmp_path / "new.txt").stat().st_mode & 0o777 == 0o644
        (tmp_path / "exec.sh").write_text("old")
        (tmp_path / "exec.sh").chmod(0o755)
        atomic_write(tmp_path / "exec.sh", "new")
        assert (tmp_path / "exec.sh").stat().st_mode & 0o777 == 0o755
    finally:
        os.umask(old)


def test_series_refuses_two_strip_options() -> None:
    """Regression: `-p1 -p0` in a series line silently took the last."""
    with pytest.raises(StackError, match="has -p1 -p0: give one -pN"):
        parse_series("a.patch -p1 -p0\n")


@pytest.mark.parametrize("name", ["0001-../../x.patch", "/abs.patch", "a//b.patch", ".hidden",
                                  "sub/.hidden", "a\\b.patch", "a\x01.patch"])
def test_patch_names_that_leave_patches_or_break_the_series(name: str) -> None:
    from patchctl.stack import check_patch_name

    with pytest.raises(StackError, match="patch name"):
        check_patch_name(name)


def test_patch_names_quilt_uses_are_kept() -> None:
    from patchctl.stack import check_patch_name

    for name in ("0001-fix.patch", "debian/fix~1+b.diff", "CVE-2024_1.patch"):
        assert check_patch_name(name) == name
    with pytest.raises(StackError, match="a name, not a path"):
        check_patch_name("debian/fix.diff", subdirs=False)
