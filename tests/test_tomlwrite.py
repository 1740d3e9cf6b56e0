"""The TOML patchctl writes: the quick path for plain values writes what tomli_w writes."""

from __future__ import annotations

import string
import tomllib

from hypothesis import given
from hypothesis import strategies as st

from patchctl import tomlwrite

PLAIN = "".join(c for c in string.printable if c not in "\"\\\t\n\r\x0b\x0c")


@given(value=st.one_of(st.text(), st.text(alphabet=PLAIN), st.text(alphabet=PLAIN + '"\\\x7f'),
                       st.integers(min_value=-(2**63), max_value=2**63 - 1)))
def test_property_a_value_is_written_as_tomli_w_writes_it(value: str | int) -> None:
    """verify renders a lock on every run; tomli_w per value cost ~30 ms for 2,000
    patches, so plain strings and ints skip it. The quick path must not change a byte."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return  # refused either way (test_model_stack.py)
    written = tomlwrite._value("k", value)
    assert written == tomlwrite._written("k", value)
    assert tomllib.loads(f"k = {written}\n") == {"k": value}


def test_the_quick_path_takes_exactly_the_plain_values() -> None:
    assert tomlwrite._PLAIN.fullmatch("0001-fix_a.b+c~d patch [x] {y} #1 'q'")
    for unplain in ('a"b', "a\\b", "tab\there", "a\x7f", "é", "\u202e", "a\nb"):
        assert not tomlwrite._PLAIN.fullmatch(unplain), repr(unplain)
    assert tomlwrite._value("k", True) == "true"  # a bool is an int, not written as one
