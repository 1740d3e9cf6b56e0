"""A wheelhouse of patchctl's runtime dependencies, packed from the running environment.

The packaging tests install the built wheel into a fresh virtual environment without a
network: pip resolves patchctl's ``Requires-Dist`` from ``--no-index --find-links`` of the
wheel and of this folder. Its wheels are the distributions installed here, written back
from their RECORD (the files pip installed, with a new RECORD), so the fresh environment
gets exactly what the wheel declares and nothing the test environment happens to hold: a
dependency patchctl imports but does not declare fails there.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

_SKIP = {"INSTALLER", "REQUESTED", "RECORD", "direct_url.json"}


def closure(names: list[str], extras: tuple[str, ...] = ()) -> dict[str, metadata.Distribution]:
    """Every installed distribution ``names`` need at run time, by canonical name."""
    found: dict[str, metadata.Distribution] = {}
    todo = [(n, extras) for n in names]
    while todo:
        name, wanted = todo.pop()
        key = canonicalize_name(name)
        if key in found:
            continue
        dist = metadata.distribution(name)
        found[key] = dist
        for text in dist.requires or []:
            req = Requirement(text)
            envs = [{**default_environment(), "extra": e} for e in ("", *wanted)]
            if req.marker is None or any(req.marker.evaluate(env) for env in envs):
                todo.append((req.name, tuple(req.extras)))
    return found


def _digest(data: bytes) -> str:
    raw = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def pack(dist: metadata.Distribution, out: Path) -> Path:
    """``dist`` as a wheel in ``out``, from the files its RECORD lists under site-packages."""
    root = Path(str(dist.locate_file(""))).resolve()
    info = next(
        f for f in dist.files or [] if f.name == "WHEEL" and f.parent.name.endswith(".dist-info")
    )
    tag = next(
        line.split(":", 1)[1].strip()
        for line in dist.read_text("WHEEL").splitlines()
        if line.startswith("Tag:")
    )
    name = canonicalize_name(dist.metadata["Name"]).replace("-", "_")
    wheel = out / f"{name}-{dist.version}-{tag}.whl"
    record = []
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for f in dist.files or []:
            path = (root / f).resolve()
            rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else None
            if (
                rel is None
                or "__pycache__" in path.parts
                or path.suffix == ".pyc"
                or (path.parent.name == info.parent.name and path.name in _SKIP)
                or not path.is_file()
            ):
                continue
            data = path.read_bytes()
            z.writestr(rel, data)
            record.append(f"{rel},{_digest(data)},{len(data)}")
        record.append(f"{info.parent.as_posix()}/RECORD,,")
        z.writestr(f"{info.parent.as_posix()}/RECORD", "\n".join(record) + "\n")
    return wheel


def wheelhouse(out: Path, names: list[str]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    return [pack(d, out) for d in closure(names).values()]
