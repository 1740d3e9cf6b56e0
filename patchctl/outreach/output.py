"""Writing a brief directory, and its manifest: what went in, so staleness shows offline.

``MANIFEST.json`` records the sha256 of every input patchctl can re-read
without the upstream (the stack's files, the outreach data, the evidence the
briefs cite, the templates, the code that renders them) and of every file
written. ``check`` recomputes them: a brief directory whose inputs changed,
or whose files were edited by hand, is stale, and the manifest's ``command``
says how to regenerate it.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchctl import schemas
from patchctl.stack import Stack

MANIFEST = "MANIFEST.json"
SCHEMA = schemas.OUTREACH_MANIFEST
_OWNED_SUFFIXES = (".md", ".diff")
CODE = Path(__file__).resolve().parent


@dataclass
class WriteResult:
    out: str
    files: list[str]
    removed: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"schema": schemas.OUTREACH_OUT, "out": self.out, "files": self.files,
                "removed": self.removed}


@dataclass
class CheckResult:
    out: str
    stale: list[str] = field(default_factory=list)  # one reason per changed input or output
    command: str = ""

    @property
    def ok(self) -> bool:
        return not self.stale

    def to_dict(self) -> dict[str, Any]:
        return {"schema": schemas.OUTREACH_CHECK, "out": self.out, "ok": self.ok,
                "stale": self.stale, "command": self.command}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def inputs(project: Path, stack: Stack, evidence_files: list[str]) -> dict[str, str]:
    """sha256 of each offline input, keyed by a stable name."""
    from patchctl.outreach.render import TEMPLATES

    out: dict[str, str] = {}
    root = stack.root
    for path in sorted([root / "series", root / "upstream.toml",
                        *root.glob("patches/*.patch"), *root.glob("outreach/*.toml")]):
        if path.is_file():
            out[f"stack/{path.relative_to(root).as_posix()}"] = _sha(path.read_bytes())
    for rel in sorted(set(evidence_files)):
        path = project / rel
        out[rel] = _sha(path.read_bytes()) if path.is_file() else "missing"
    for path in sorted(TEMPLATES.glob("outreach-*.j2")):
        out[f"templates/{path.name}"] = _sha(path.read_bytes())
    code = hashlib.sha256()
    for path in sorted(CODE.glob("*.py")):
        code.update(path.name.encode() + b"\0" + path.read_bytes())
    # the matcher CODEOWNERS, .editorconfig and Scope are read with lives outside outreach/
    code.update(b"globs.py\0" + (CODE.parent / "globs.py").read_bytes())
    out["code/patchctl/outreach"] = code.hexdigest()
    return out


def evidence_files(project: Path, stack: Stack, names: list[str]) -> list[str]:
    """The evidence records the briefs of the patches ``names`` cite, as they are now: a
    new record about a patch makes its brief stale too."""
    from patchctl.fingerprint import fingerprint
    from patchctl.outreach.facts import evidence_for

    patches = stack.patches()
    fp = fingerprint(stack.pin().commit, patches)
    return sorted({e.file for p in patches if p.name in names
                   for e in evidence_for(project, p, fp)})


def write(project: Path, stack: Stack, out: Path, files: dict[str, str], *,
          meta: dict[str, Any], evidence_files: list[str],
          beside: dict[Path, str] | None = None) -> WriteResult:
    """Replace the briefs in ``out`` with ``files`` (name -> text) and a manifest, at once.

    ``beside`` are files written elsewhere (the handoff README); the manifest records
    them by their path relative to ``out`` so ``check`` covers them too.
    """
    from patchctl import fsutil, stackwrite

    # the briefs are swapped in as a whole: never over the stack or the project
    out = fsutil.replaceable(out, "--out", {"the stack": stack.root, "the project": project})
    out.mkdir(parents=True, exist_ok=True)
    payload = {name: text.encode("utf-8") for name, text in sorted(files.items())}
    others = {os.path.relpath(path.absolute(), out): text.encode("utf-8")
              for path, text in (beside or {}).items()}
    manifest = {
        "schema": SCHEMA, **meta,
        "inputs": inputs(project, stack, evidence_files),
        "outputs": {name: _sha(data) for name, data in {**payload, **others}.items()},
    }
    for rel, data in sorted(others.items()):
        fsutil.atomic_write(out / rel, data)
    payload[MANIFEST] = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
    removed = sorted(p.name for p in out.iterdir()
                     if p.is_file() and p.suffix in _OWNED_SUFFIXES and p.name not in payload)
    changes: dict[str, bytes | None] = {**payload, **dict.fromkeys(removed)}
    stackwrite.replace_stack(Stack(out), changes)
    return WriteResult(str(out), sorted([*payload, *others]), removed)


def check(project: Path, stack: Stack, out: Path) -> CheckResult:
    """Whether ``out``'s briefs still match their offline inputs and were not hand-edited."""
    from patchctl.errors import InputError

    path = out / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise InputError(f"{path} does not exist; write the briefs with "
                         "`patchctl draft-outreach --out DIR` first") from e
    except ValueError as e:
        raise InputError(f"{path}: not valid JSON ({e})") from e
    result = CheckResult(str(out), command=str(manifest.get("command", "")))
    from patchctl.fingerprint import fingerprint

    # the briefs show the fingerprint, which also moves with its algorithm (pcfp1 -> pcfp2)
    now_fp = fingerprint(stack.pin().commit, stack.patches())
    if manifest.get("fingerprint") != now_fp:
        result.stale.append(f"the stack fingerprint is {now_fp[:16]}, the briefs show "
                            f"{str(manifest.get('fingerprint'))[:16]}")
    recorded: dict[str, str] = manifest.get("inputs", {})
    now = inputs(project, stack, evidence_files(project, stack, manifest.get("patches", [])))
    for key in sorted(set(recorded) | set(now)):
        if recorded.get(key) != now.get(key):
            what = "added" if key not in recorded else "removed" if key not in now else "changed"
            result.stale.append(f"input {key} {what}")
    for name, digest in sorted(manifest.get("outputs", {}).items()):
        file = out / name
        if not file.is_file():
            result.stale.append(f"output {name} is missing")
        elif _sha(file.read_bytes()) != digest:
            result.stale.append(f"output {name} was edited after it was written")
    for file in sorted(out.iterdir()):
        if file.suffix in _OWNED_SUFFIXES and file.name not in manifest.get("outputs", {}):
            result.stale.append(f"output {file.name} is not in the manifest")
    return result
