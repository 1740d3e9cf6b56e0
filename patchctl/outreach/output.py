"""Writing a brief directory, and its manifest: what went in, so staleness shows offline.

``MANIFEST.json`` records the sha256 of every input patchctl can re-read
without the upstream (the stack's files, the outreach data, the evidence the
briefs cite, the templates, the code that renders them) and of every file
written. ``check`` recomputes them: a brief directory whose inputs changed,
or whose files were edited by hand, is stale, and the manifest's ``command``
says how to regenerate it.

The manifest is also what makes a directory patchctl's to replace: ``--out``
must be empty, absent, or a brief directory with such a manifest, and a
``--handoff`` file must be new or one that manifest lists (never overwrite a person's file).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchctl import fsutil, untrusted
from patchctl.errors import InputError
from patchctl.model import schemas
from patchctl.model.stack import Stack

MANIFEST = "MANIFEST.json"
SCHEMA = schemas.OUTREACH_MANIFEST
_OWNED_SUFFIXES = (".md", ".diff")
CODE = Path(__file__).resolve().parent
# what a MANIFEST.json must hold for its directory to count as briefs patchctl wrote
_MANIFEST_SHAPE: dict[str, Any] = {
    "type": "object",
    "required": ["schema", "inputs", "outputs"],
    "properties": {
        "schema": {"const": SCHEMA},
        "command": {"type": "string"},
        "fingerprint": {"type": "string"},
        "patches": {"type": "array", "items": {"type": "string"}},
        "architectures": {"type": "array", "items": {"type": "string"}},
        "inputs": {"type": "object", "additionalProperties": {"type": "string"}},
        "outputs": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}


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
    # so do the churn facts (burden/, and the blame it runs)
    for path in [*sorted((CODE.parent / "burden").glob("*.py")),
                 CODE.parent / "gitrepo" / "blame.py"]:
        code.update(f"{path.parent.name}/{path.name}\0".encode() + path.read_bytes())
    out["code/patchctl/outreach"] = code.hexdigest()
    return out


def evidence_files(project: Path, stack: Stack, names: list[str]) -> list[str]:
    """The evidence records the briefs of the patches ``names`` cite, as they are now (a
    new record about a patch makes its brief stale too), and the project's scripts they run."""
    from patchctl.outreach.facts import load_outreach
    from patchctl.outreach.firstscreen import scripts
    from patchctl.outreach.recorded import cited_records, evidence_for, stack_at

    patches = stack.patches()
    pin = stack.pin().commit
    runs = [e for i, p in enumerate(patches, start=1) if p.name in names
            for e in evidence_for(project, p, stack_at(pin, patches, i),
                                  cited_records(load_outreach(stack.root, p.concern)))]
    # the project's scripts a record runs decide what the brief says it covers (a wrapper
    # that runs llama-bench): a change to one makes the briefs stale
    top = project.resolve()
    ran = {path.relative_to(top).as_posix() for e in runs
           for path in scripts(e.command, project, e.cwd)}
    return sorted({e.file for e in runs} | ran)


_INSTEAD = "pass an empty or new directory, or one it wrote before"


def _manifest(out: Path, instead: str = _INSTEAD) -> dict[str, Any]:
    """``out``'s manifest, refused (one line, ending in ``instead``) unless draft-outreach
    wrote it."""
    path = out / MANIFEST
    if not os.path.lexists(path):
        raise InputError(f"--out {out} holds files draft-outreach did not write (it has no "
                         f"{MANIFEST}): {instead}")
    try:
        doc: dict[str, Any] = untrusted.read_json(path, _MANIFEST_SHAPE)
    except untrusted.BadDocument as e:
        raise InputError(f"--out {out}: {MANIFEST} is not one draft-outreach wrote ({e}): "
                         f"{instead}") from e
    return doc


def targets(project: Path, stack: Stack, out: Path, handoff: Path | None = None
            ) -> tuple[Path, Path | None, dict[str, str]]:
    """``out`` and ``handoff`` resolved, and the outputs ``out``'s manifest lists now.

    Refused (``InputError``) unless draft-outreach may write them: ``out`` must be
    absent, empty or a brief directory it wrote (a ``patchctl.outreach-manifest/1``
    MANIFEST.json), never the project or the stack; ``handoff`` must be new or a file
    that manifest lists; neither may lie in ``stack/``, ``.git`` or ``.patchctl``.
    """
    from patchctl.model.stackwrite import output_areas

    protect, inside = output_areas(project, stack)
    out = fsutil.replaceable(out, "--out", protect, inside=inside)
    listed: dict[str, str] = {}
    if out.is_dir() and any(out.iterdir()):
        listed = _manifest(out)["outputs"]
    if handoff is None:
        return out, None, listed
    handoff = fsutil.replaceable_file(handoff, "--handoff", protect, inside=inside)
    rel = os.path.relpath(handoff, out)
    if rel == MANIFEST:
        raise InputError(f"--handoff {handoff} is the briefs' own {MANIFEST}: "
                         "name another file")
    if os.path.lexists(handoff) and rel not in listed:
        raise InputError(f"--handoff {handoff} exists and draft-outreach did not write it "
                         f"(the {MANIFEST} in {out} does not list it): name a new file, or "
                         "the one it wrote before")
    return out, handoff, listed


def write(project: Path, stack: Stack, out: Path, files: dict[str, str], *,
          meta: dict[str, Any], evidence_files: list[str],
          handoff: tuple[Path, str] | None = None) -> WriteResult:
    """Replace the briefs in ``out`` with ``files`` (name -> text) and a manifest, at once.

    ``handoff`` is a file written beside them (the handoff README) and its text; the
    manifest records it by its path relative to ``out`` so ``check`` covers it too.
    ``out`` and the handoff are checked (``targets``) again while ``out`` is locked.
    """
    from patchctl.model import stackwrite

    out, target, _ = targets(project, stack, out, handoff[0] if handoff else None)
    with fsutil.path_lock(out, f"draft-outreach --out {out}"):
        fsutil.recover(out)  # an interrupted run's old briefs are back before the check
        out, target, _ = targets(project, stack, out, target)
        out.mkdir(parents=True, exist_ok=True)
        payload = {name: text.encode("utf-8") for name, text in sorted(files.items())}
        others: dict[str, bytes] = {}
        if handoff and target:
            rel = os.path.relpath(target, out)
            if rel in payload:
                raise InputError(f"--handoff {target} would overwrite the brief {rel}: "
                                 "name another file")
            # one inside ``out`` is swapped in with the briefs, else it is written first
            into = payload if not rel.startswith(os.pardir + os.sep) else others
            into[rel] = handoff[1].encode("utf-8")
        manifest = {
            "schema": SCHEMA, **meta,
            "inputs": inputs(project, stack, evidence_files),
            "outputs": {name: _sha(data) for name, data in {**payload, **others}.items()},
        }
        for rel, data in sorted(others.items()):
            fsutil.atomic_write(out / rel, data)
        briefs = set(payload)
        payload[MANIFEST] = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
        removed = sorted(p.name for p in out.iterdir()
                         if p.is_file() and p.suffix in _OWNED_SUFFIXES and p.name not in payload)
        changes: dict[str, bytes | None] = {**payload, **dict.fromkeys(removed)}
        stackwrite.replace_stack(Stack(out), changes)
    return WriteResult(str(out), sorted([*briefs, *others, MANIFEST]), removed)


def check(project: Path, stack: Stack, out: Path) -> CheckResult:
    """Whether ``out``'s briefs still match their offline inputs and were not hand-edited."""
    path = out / MANIFEST
    if not os.path.lexists(path):
        raise InputError(f"{path} does not exist; write the briefs with "
                         "`patchctl draft-outreach --out DIR` first")
    manifest = _manifest(out, "write the briefs again with the command that made them")
    result = CheckResult(str(out), command=str(manifest.get("command", "")))
    from patchctl.model.fingerprint import fingerprint

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
    # a claim of the outreach data that the patches contradict is stale however recent the
    # briefs are: it would be shown as a fact
    from patchctl.outreach.claims import stack_claims

    known = manifest.get("architectures")
    for x in stack_claims(stack, set(known) if isinstance(known, list) else set()):
        result.stale.append(f"claim {x.message}")
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
