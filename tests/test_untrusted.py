"""untrusted.py: the one home for JSON and text that patchctl does not control."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from patchctl.untrusted import (
    BadDocument,
    control_character,
    parse_json,
    printable,
    read_json,
)

SCHEMA = {"type": "object", "required": ["kind"],
          "properties": {"kind": {"type": "string"}, "stack": {"type": "array",
                                                             "items": {"type": "object"}}}}


def test_deep_nesting_is_refused_before_parsing() -> None:
    """200,000 nested arrays raised RecursionError in json.loads."""
    with pytest.raises(BadDocument, match="nested deeper than 64"):
        parse_json("[" * 200_000 + "]" * 200_000)
    with pytest.raises(BadDocument, match="nested deeper"):
        parse_json('{"a":' * 100_000 + "1" + "}" * 100_000)


def test_brackets_inside_strings_do_not_count() -> None:
    assert parse_json('{"kind": "' + "[" * 500 + '\\"]"}', SCHEMA)["kind"].startswith("[[")


def test_a_document_of_the_wrong_shape_is_one_line() -> None:
    """``"stack": [1]`` reached code that called ``.get`` on 1."""
    with pytest.raises(BadDocument, match=r"^at stack/0: 1 is not of type 'object'$"):
        parse_json('{"kind": "x", "stack": [1]}', SCHEMA)
    with pytest.raises(BadDocument, match="'kind' is a required property"):
        parse_json("{}", SCHEMA)
    with pytest.raises(BadDocument, match="not JSON"):
        parse_json("{", SCHEMA)


def test_size_cap() -> None:
    with pytest.raises(BadDocument, match="larger than 10 bytes"):
        parse_json('"' + "x" * 20 + '"', max_bytes=10)


def test_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    """A FIFO manifest.json blocked `release verify` forever."""
    fifo = tmp_path / "manifest.json"
    os.mkfifo(fifo)
    with pytest.raises(BadDocument, match="FIFO"):
        read_json(fifo)


def test_printable_escapes_what_drives_a_terminal_or_forges_a_row() -> None:
    """A server's ``state`` with a newline and an OSC escape."""
    assert printable("open\nmerged \x1b]0;owned\x07") == "open\\nmerged \\x1b]0;owned\\x07"
    assert printable("a\r\tb\u202ec\x9b") == "a\\x0d\tb\\u202ec\\x9b"
    assert printable("one\ntwo", newlines=True) == "one\ntwo"
    assert printable("plain ascii, ünïcode") == "plain ascii, ünïcode"


def test_control_character_names_what_printable_would_escape() -> None:
    """The one test of "a value holds a control character" (a trailer, a
    subject, a body) is the set ``printable`` escapes, a newline too unless allowed."""
    assert control_character("Pending [a\tb] ünïcode") is None
    assert control_character("b\nScope: **") == "\\n"
    assert control_character("b\nScope: **", newlines=True) is None
    assert control_character("x\ry") == "\\x0d"
    assert control_character("x\u202e", newlines=True) == "\\u202e"
