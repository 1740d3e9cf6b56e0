"""Shared checks for the hardening corpus (tests/test_corpus_*.py).

Every corpus case states its outcome: the exit code, and for 2 and 3 a one-line
error (``patchctl: error: ...``) that contains a fragment. A traceback anywhere
fails the case: in-process, an uncaught exception propagates out of ``cli``.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

OK, FINDINGS, USAGE, ENVIRONMENT = 0, 1, 2, 3


@dataclass(frozen=True)
class Case:
    """One bad input: ``id`` names it, ``code`` is the documented exit code expected,
    ``fragment`` a piece of the one-line error (codes 2 and 3) or of the output."""

    id: str
    data: object
    code: int | tuple[int, ...]
    fragment: str = ""


def params(cases: list[Case]):
    import pytest

    ids = [c.id for c in cases]
    assert len(set(ids)) == len(ids), "duplicate case ids"
    return pytest.mark.parametrize("case", cases, ids=ids)


def check(r, case: Case | int | tuple[int, ...], fragment: str = "") -> None:
    """``r`` (a CliResult) ended as ``case`` says: its code, one line for an error."""
    if isinstance(case, Case):
        codes, fragment = case.code, case.fragment
    else:
        codes = case
    codes = codes if isinstance(codes, tuple) else (codes,)
    text = r.out + r.err
    assert "Traceback" not in text, text
    assert r.code in codes, (r.code, r.out[-2000:], r.err[-2000:])
    if r.code in (USAGE, ENVIRONMENT):
        lines = r.err.strip().splitlines()
        if r.err.startswith("Usage: "):  # click's own usage error: usage, hint, one Error line
            assert lines[-1].startswith("Error: ") or "Commands:" in r.err, r.err
        else:
            assert len(lines) == 1, r.err
            assert lines[0].startswith("patchctl: error: "), r.err
        assert len(lines[-1]) < 2000, "an error line must stay readable"
    if fragment:
        assert fragment in text, (fragment, text[-2000:])


def tree_digest(root: Path, *, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """Every entry under ``root`` (files by sha256, links by target, dirs, modes):
    two equal digests mean nothing was written. ``skip``: top-level names left out."""
    out: dict[str, str] = {}
    if not root.exists() and not root.is_symlink():
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root)
        if rel_dir == Path(".") and skip:
            dirnames[:] = [d for d in dirnames if d not in skip]
            filenames = [f for f in filenames if f not in skip]
        for d in dirnames:
            p = Path(dirpath) / d
            out[(rel_dir / d).as_posix() + "/"] = "link:" + os.readlink(p) if p.is_symlink() \
                else oct(p.stat().st_mode)
        for name in filenames:
            p = Path(dirpath) / name
            rel = (rel_dir / name).as_posix()
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_file():
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest() + oct(p.stat().st_mode)
            else:
                out[rel] = "special"
    return out


# -- a time bound per case ------------------------------------------------------------------

BOUND_S = 5.0  # what a case may take: generous for any linear work, short of a hang
_pool: Any = None


def bounded(fn: Callable[..., Any], *args: Any, limit: float = BOUND_S) -> Any:
    """``fn(*args)`` in a forked worker process, failing the case if it runs past ``limit``
    seconds (a thread cannot bound a regex: `re` holds the GIL while it backtracks). The
    worker is reused across calls and replaced after a timeout. ``fn`` must be importable
    by name (a module-level function)."""
    global _pool
    if _pool is None:
        _pool = multiprocessing.get_context("fork").Pool(1)
    try:
        return _pool.apply_async(fn, args).get(timeout=limit)
    except multiprocessing.TimeoutError:
        _pool.terminate()
        _pool = None
        raise AssertionError(f"{getattr(fn, '__name__', fn)}{args!r:.300} ran past "
                             f"{limit} s") from None
