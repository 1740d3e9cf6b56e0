"""The stack fingerprint (algorithm pcfp2, docs/FORMATS.md), and whether a lock is current.

It covers the pin and, per patch, every line of its diff that git applies
(mode lines and binary payloads included), so header-only edits (a new
Upstream-Status, a reworded body) leave it unchanged and nothing else does.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Protocol

from patchctl.model.stack import LOCK_FORMAT, Lock, LockedPatch, Pin, Stack, parse_lock, render_lock
from patchctl.textout import count

ALGORITHM = "pcfp2"
# Why a lock written with an older algorithm is stale (shown to the user).
_RETIRED = {"pcfp1": "pcfp1 ignored binary payloads and mode changes"}
SHORT = 16


class Digested(Protocol):
    """What the fingerprint reads of a patch: a ``Patch`` or verify's ``Summary``."""

    @property
    def name(self) -> str: ...
    @property
    def strip(self) -> int: ...
    @property
    def digest(self) -> str: ...


def fingerprint(pin_commit: str, patches: Sequence[Digested]) -> str:
    text = f"{ALGORITHM}\npin {pin_commit}\n" + "".join(
        f"patch {p.strip} {p.digest}\n" for p in patches
    )
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def make_lock(pin: Pin, patches: Sequence[Digested]) -> Lock:
    return Lock(
        algorithm=ALGORITHM,
        name=pin.name,
        pin=pin.commit,
        fingerprint=fingerprint(pin.commit, patches),
        patches=tuple(LockedPatch(file=p.name, strip=p.strip, digest=p.digest) for p in patches),
    )


def staleness(old: Lock | None, new: Lock) -> str | None:
    """Why the lock ``old`` is not what ``patchctl lock`` would write now (``new``);
    None when it is current. The one test: `verify` and `lock --check` both ask it."""
    if old is None:
        return "missing"
    if old.format != LOCK_FORMAT:
        return f"lock format {old.format}; this patchctl writes format {LOCK_FORMAT}"
    if old.algorithm != new.algorithm:
        why = _RETIRED.get(old.algorithm, "an algorithm this patchctl does not know")
        return f"written with fingerprint algorithm {old.algorithm} ({why}); " \
            f"this patchctl uses {new.algorithm}"
    if old.pin != new.pin:
        return "the pin changed"
    if len(old.patches) != len(new.patches):
        return f"the series has {count(len(new.patches), 'patch')}, the lock {len(old.patches)}"
    changed = [n.file for o, n in zip(old.patches, new.patches, strict=True)
               if (o.file, o.digest) != (n.file, n.digest)]
    if changed:
        return "changed: " + ", ".join(changed)
    if [o.strip for o in old.patches] != [n.strip for n in new.patches]:
        return "a strip level changed"
    if old.fingerprint != new.fingerprint:
        return "the patch order changed" if old.patches != new.patches else \
            "its fingerprint does not match its patches"
    if render_lock(old) != render_lock(new):
        return "it differs from what `patchctl lock` writes (edited by hand?)"
    return None


def lock_state(stack: Stack, new: Lock) -> tuple[str, str | None]:
    """The stack's lock against ``new``: ("current", None), ("missing", why) or ("stale",
    why). The one verdict `verify` and `lock --check` give (and rebase-pin asks): one read
    of the file (a regular file only) and one parse; a lock that is not TOML, or not a
    lock, raises ``StackError`` (exit 2) wherever it is asked.

    Text equal to ``render_lock(new)`` is current without a parse: patchctl writes TOML
    with a real writer, so that text parses back to ``new`` (tests/test_model_stack.py)."""
    text = stack.lock_text()
    if text is None:
        return "missing", "missing"
    if text == render_lock(new):
        return "current", None
    why = staleness(parse_lock(text, source=stack.lock_path), new)
    return ("current", None) if why is None else ("stale", why)


def short(value: str) -> str:
    return value[:SHORT]
