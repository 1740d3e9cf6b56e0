"""The stack fingerprint (algorithm pcfp1, docs/FORMATS.md).

It covers the pin and each patch's normalized diff in order, so header-only
edits (a new Upstream-Status, a reworded body) leave it unchanged.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from patchctl.patchfile import Patch
from patchctl.stack import Lock, LockedPatch, Pin

ALGORITHM = "pcfp1"
SHORT = 16


def fingerprint(pin_commit: str, patches: Sequence[Patch]) -> str:
    text = f"{ALGORITHM}\npin {pin_commit}\n" + "".join(
        f"patch {p.strip} {p.digest}\n" for p in patches
    )
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def make_lock(pin: Pin, patches: Sequence[Patch]) -> Lock:
    return Lock(
        algorithm=ALGORITHM,
        name=pin.name,
        pin=pin.commit,
        fingerprint=fingerprint(pin.commit, patches),
        patches=tuple(LockedPatch(file=p.name, strip=p.strip, digest=p.digest) for p in patches),
    )


def short(value: str) -> str:
    return value[:SHORT]
