"""The TOML files patchctl writes: the pin file, the lock and the apply stamp.

Every value is written by ``tomli_w``, a real TOML writer: a string is escaped
as TOML wants (quotes, backslashes, newlines and other control characters), so
whatever text a value holds, the file parses back to it. The layout is
patchctl's own and line-oriented, as docs/FORMATS.md promises so that CMake can
read a file with a regex: a leading comment, one ``key = value`` line per
top-level key (an array on one line), then ``[[table]]`` sections.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from patchctl.errors import InputError
from patchctl.untrusted import shorten

Value = str | int | Sequence[str]
_UNSEEN = re.compile("[\x80-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
# printable ASCII but '"' and '\\': a string tomli_w writes as it is, between quotes
_PLAIN = re.compile(r'[ !#-\[\]-~]*')


def render(comment: str, top: Mapping[str, Value],
           tables: Sequence[tuple[str, Mapping[str, Value]]] = ()) -> str:
    """``# comment``, the ``top`` keys in order, then one ``[[name]]`` section per table
    entry, each after a blank line."""
    lines = [f"# {comment}", *_lines(top)]
    for name, entry in tables:
        lines += ["", f"[[{name}]]", *_lines(entry)]
    return "\n".join(lines) + "\n"


def _lines(table: Mapping[str, Value]) -> list[str]:
    out = []
    for key, value in table.items():
        if isinstance(value, str | int):
            out.append(f"{key} = {_value(key, value)}")
        else:
            out.append(f"{key} = [{', '.join(_value(key, v) for v in value)}]")
    return out


def _value(key: str, value: str | int) -> str:
    # What ``_written`` gives, without tomli_w's per-call setup, for what a lock is made of
    # (ints, hex digests, plain file names): verify renders a lock on every run, and one
    # of 2,000 patches took ~30 ms that way, ~2 ms this way (tests/test_tomlwrite.py).
    if type(value) is int:  # not a bool
        return str(value)
    if isinstance(value, str) and _PLAIN.fullmatch(value):
        return f'"{value}"'
    return _written(key, value)


def _written(key: str, value: str | int) -> str:
    import tomli_w

    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:  # a lone surrogate: bytes from argv, not text
            raise InputError(f"{key} {shorten(repr(value))} is not UTF-8 text; a TOML file "
                             "holds only that") from e
    text = tomli_w.dumps({"v": value}).removeprefix("v = ").removesuffix("\n")
    # tomli_w escapes C0 controls and DEL; line separators, C1 controls and bidi overrides
    # it writes as they are. Escaped too, a file is one line per key for any reader and
    # shows no hidden text.
    return _UNSEEN.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
