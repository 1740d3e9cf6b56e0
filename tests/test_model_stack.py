"""The stack's files: series, pin, lock; no git needed."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from patchctl.errors import StackError
from patchctl.model.stack import (
    Lock,
    LockedPatch,
    PatchNameError,
    Pin,
    _plain_toml,
    edit_series,
    parse_lock,
    parse_pin,
    parse_series,
    render_lock,
    resolve_name,
    select_names,
)


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


# -- naming a patch: one resolver (docs/FORMATS.md) ---------------------------------------

NAMES = ["0001-util-add-tiny_square.patch", "0002-tiny-bump-op-02.patch",
         "0003-tiny-declare-square.patch"]


@pytest.mark.parametrize(("query", "index"), [
    ("0002-tiny-bump-op-02.patch", 1),  # file name
    ("0002-tiny-bump-op-02", 1),  # without .patch
    ("2", 1), ("0002", 1), ("02", 1),  # number
    ("tiny-bump-op-02", 1),  # without number and .patch
    ("bump", 1),  # a unique part
    ("util-add", 0),
])
def test_resolve_name_accepts_each_form(query: str, index: int) -> None:
    assert resolve_name(NAMES, query) == index


def test_resolve_name_ambiguous_and_unknown_list_candidates() -> None:
    with pytest.raises(PatchNameError, match="names 2 patches") as e:
        resolve_name(NAMES, "square")
    assert e.value.candidates == [NAMES[0], NAMES[2]]
    assert e.value.exit_code == 2 and "\n" not in str(e.value)
    with pytest.raises(PatchNameError, match="no patch named 'tiny-bump-op-03'") as e:
        resolve_name(NAMES, "tiny-bump-op-03")
    assert NAMES[1] in e.value.candidates and NAMES[1] in str(e.value)
    with pytest.raises(PatchNameError, match="no patch file in series carries the number 9"):
        resolve_name(NAMES, "9")


def test_resolve_name_a_number_is_the_files_number_never_a_position() -> None:
    """After `delete 0008` in a 29-patch stack, `rename 0009` failed with
    "'0009' names 2 patches": 0009-... was at position 8 and position 9 was 0010-...
    A number is the file's own number; a position is only ever `@N`."""
    deleted = [NAMES[0], NAMES[2]]  # 0002 deleted: 0003-... is at position 2
    assert resolve_name(deleted, "3") == 1 and resolve_name(deleted, "0003") == 1
    assert resolve_name(deleted, "@2") == 1 and resolve_name(deleted, "@1") == 0
    with pytest.raises(PatchNameError, match=re.escape(
            "carries the number 2; `@2` is the patch at position 2 "
            "(0003-tiny-declare-square.patch)")) as e:
        resolve_name(deleted, "2")
    assert e.value.candidates == [NAMES[2]]
    moved = [NAMES[1], NAMES[0], NAMES[2]]
    assert resolve_name(moved, "2") == 0 and resolve_name(moved, "@2") == 1
    for bad in ("@0", "@4", "@" + "9" * 5000):
        with pytest.raises(PatchNameError, match="has positions 1 to 3"):
            resolve_name(NAMES, bad)
    with pytest.raises(PatchNameError, match="carries the number"):
        resolve_name(NAMES, "9" * 5000)  # no int() of an unbounded string
    with pytest.raises(PatchNameError, match="carries the number 2"):
        resolve_name(["0001-x2.patch", "0003-y.patch"], "2")  # digits never match a part


def test_edit_series_keeps_comments_options_and_inline_comments() -> None:
    text = "# head\n0001-a.patch\n\n# middle\n0002-b.patch -p0  # why\n0003-c.patch\n"
    assert edit_series(text, ["0002-b.patch", "0001-a.patch", "0003-c.patch"]) == \
        "# head\n0002-b.patch -p0  # why\n\n# middle\n0001-a.patch\n0003-c.patch\n"
    assert edit_series(text, ["0001-a.patch", "0003-c.patch"]) == \
        "# head\n0001-a.patch\n\n# middle\n0003-c.patch\n"
    assert edit_series(text, ["0001-a.patch", "0002-x.patch", "0003-c.patch"],
                       renamed={"0002-b.patch": "0002-x.patch"}) == \
        "# head\n0001-a.patch\n\n# middle\n0002-x.patch -p0  # why\n0003-c.patch\n"
    assert edit_series(text, ["0001-a.patch", "0002-b.patch", "0004-d.patch", "0003-c.patch"],
                       regenerated=["0002-b.patch"]) == \
        "# head\n0001-a.patch\n\n# middle\n0002-b.patch  # why\n0004-d.patch\n0003-c.patch\n"
    assert parse_series(edit_series("# only a comment\n", ["0001-a.patch"]))[0].name == \
        "0001-a.patch"


def test_select_names_takes_several_and_concerns() -> None:
    concerns = ["square", "bump", "square"]
    assert select_names(NAMES, ["3", "bump", "0001"]) == [0, 1, 2]
    assert select_names(NAMES, ["square"], concerns=concerns) == [0, 2]  # a concern
    assert select_names(NAMES, ["declare", "square"], concerns=concerns) == [0, 2]
    with pytest.raises(PatchNameError, match="names 2 patches"):
        select_names(NAMES, ["square"])  # without concerns: ambiguous
    with pytest.raises(PatchNameError, match="no patch named 'cube'"):
        select_names(NAMES, ["cube"], concerns=concerns)
def test_series_refuses_two_strip_options() -> None:
    """Regression: `-p1 -p0` in a series line silently took the last."""
    with pytest.raises(StackError, match="has -p1 -p0: give one -pN"):
        parse_series("a.patch -p1 -p0\n")


@pytest.mark.parametrize("name", ["0001-../../x.patch", "/abs.patch", "a//b.patch", ".hidden",
                                  "sub/.hidden", "a\\b.patch", "a\x01.patch"])
def test_patch_names_that_leave_patches_or_break_the_series(name: str) -> None:
    from patchctl.model.stack import check_patch_name

    with pytest.raises(StackError, match="patch name"):
        check_patch_name(name)


def test_patch_names_quilt_uses_are_kept() -> None:
    from patchctl.model.stack import check_patch_name

    for name in ("0001-fix.patch", "debian/fix~1+b.diff", "CVE-2024_1.patch"):
        assert check_patch_name(name) == name
    with pytest.raises(StackError, match="a name, not a path"):
        check_patch_name("debian/fix.diff", subdirs=False)


# -- TOML written with a real writer --------------------------------------

HOSTILE_NAMES = ["ti\nny", 'a"b', "back\\slash\\", 'x"\nfingerprint = "0', "\x00\x01\x1b[2J\x7f",
                 "\u2028\u202e", "'''", "tab\there", ""]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_any_pin_name_round_trips_through_the_pin_file_and_the_lock(name: str) -> None:
    """A pin `name` with a newline (valid TOML) was copied into stack.lock
    unescaped: the lock was not TOML. Every value is now written by tomli_w."""
    pin = Pin(name=name, url=f"u{name}", commit="a" * 40, tag=f"t{name}")
    assert parse_pin(pin.to_toml()) == pin
    lock = Lock(algorithm="pcfp2", name=name, pin="a" * 40, fingerprint="f" * 64,
                patches=(LockedPatch("0001-x.patch", 1, "d" * 64),))
    text = render_lock(lock)
    assert parse_lock(text) == lock and render_lock(parse_lock(text)) == text
    top = text.split("\n\n")[0].splitlines()
    assert len(top) == 6, "one line per top-level key, as CMake reads it"


def test_the_files_patchctl_writes_keep_their_bytes() -> None:
    """The writer changed, today's files did not (the committed stacks'
    locks and pin files are what `render_lock` / `to_toml` write for them)."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    for stack in (root / "stack", root / "examples/tiny/stack"):
        lock_text = (stack / "stack.lock").read_text()
        assert render_lock(parse_lock(lock_text)) == lock_text
        pin_text = (stack / "upstream.toml").read_text()
        assert parse_pin(pin_text).to_toml() == pin_text


def test_a_name_that_is_not_text_is_refused_in_one_line() -> None:
    """Bytes from argv (a lone surrogate) cannot be written as TOML text."""
    from patchctl.errors import InputError

    with pytest.raises(InputError, match="not UTF-8 text") as e:
        Pin(name="x\udcff", url="u", commit="a" * 40).to_toml()
    assert "\n" not in str(e.value)


@given(name=st.text(), url=st.text(), tag=st.text(min_size=1), file=st.text(min_size=1))
def test_property_text_values_round_trip_through_pin_and_lock(name: str, url: str, tag: str,
                                                              file: str) -> None:
    """Any text (control characters, quotes, newlines, non-ASCII) in a
    value patchctl writes to TOML reads back as it was."""
    pin = Pin(name=name, url=url, commit="b" * 40, tag=tag)
    assert parse_pin(pin.to_toml()) == pin
    assert len(pin.to_toml().splitlines()) == 5  # comment and four keys, a line each
    lock = Lock(algorithm="pcfp2", name=name, pin="b" * 40, fingerprint=url,
                patches=(LockedPatch(file, 1, tag),))
    text = render_lock(lock)
    assert parse_lock(text) == lock and render_lock(parse_lock(text)) == text
    assert len(text.splitlines()) == 11


_TOML_BITS = st.sampled_from(['name = "llama.cpp"', 'url = "https://x/y.git"', "# a comment",
                              "", " ", "\t", 'name = "again"', 'a.b = "x"', 'k = "x" # c',
                              'k = "\\u0041"', "k = 'x'", 'k = ["tests/"]', "k = 1", "#\x01",
                              "\ufeff# bom", 'k  = "x"', 'k = "x"\r', 'k = "\x7f"'])


@given(lines=st.lists(st.one_of(_TOML_BITS, st.text(alphabet=' \t#=ab"\\\r\x00-_[]\'',
                                                     max_size=12)), max_size=8))
def test_property_a_pin_file_read_without_the_toml_parser_reads_as_toml(lines: list[str]) -> None:
    """verify reads the pin file before git starts; the TOML parser costs it ~3 ms there.
    A file of comments, blank lines and `key = "plain string"` lines (what patchctl writes)
    is read without it: what that gives must be what tomllib gives, and any other file,
    or one tomllib refuses, is left to tomllib."""
    import tomllib

    text = "\n".join(lines)
    try:
        expected = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        expected = None
    fast = _plain_toml(text)
    assert fast is None or fast == expected


def test_a_pin_file_as_patchctl_writes_it_is_read_without_the_toml_parser() -> None:
    pin = Pin(name="llama.cpp", url="https://github.com/ggml-org/llama.cpp", commit="a" * 40,
              tag="b1234")
    assert _plain_toml(pin.to_toml()) == {"name": pin.name, "url": pin.url,
                                          "commit": pin.commit, "tag": pin.tag}
    assert _plain_toml('name = "a"\nname = "b"\n') is None  # TOML's error, not a pick
