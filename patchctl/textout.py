"""Plain-text output shared by the commands: counted nouns and aligned columns."""

from __future__ import annotations

from collections.abc import Sequence


def plural(n: int, noun: str, many: str | None = None) -> str:
    """``noun`` as ``n`` of it takes it: itself for exactly 1, else ``many`` (default:
    ``noun`` + ``es`` after s, x, z, ch, sh; ``ies`` for a consonant and ``y``; else ``s``)."""
    if n == 1:
        return noun
    if many is not None:
        return many
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "i", "o", "u", ""):
        return noun[:-1] + "ies"
    return noun + "s"


def count(n: int, noun: str, many: str | None = None) -> str:
    """``n`` and ``noun`` agreeing: ``count(1, "day")`` is "1 day", ``count(3, "patch")``
    "3 patches"."""
    return f"{n} {plural(n, noun, many)}"


def table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> list[str]:
    """``header`` and ``rows`` as lines of left-aligned columns two spaces apart, each as
    wide as its widest cell, no trailing blanks (verify, series, rebase-pin)."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*r).rstrip() for r in [header, *rows]]
