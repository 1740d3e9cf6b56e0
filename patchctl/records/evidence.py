"""Evidence records: what ran, with which tools, at which pin, and what came out.

Every file under evidence/ is written here, by a command, from a real run.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from patchctl import __version__, fsutil, procs
from patchctl.errors import PatchctlError, redact, redact_bytes
from patchctl.model import schemas

# /2 adds what every run record needs (DGR-068): the host (CPU model, cores,
# memory, GPUs, network), backend and driver, the worker's embedded identity
# (runtime pin), artifact and split hashes, the commands and raw metrics.
SCHEMA = schemas.EVIDENCE
# What readers accept: /2 only adds keys to /1.
READABLE_SCHEMAS = (*schemas.OLDER_EVIDENCE, SCHEMA)


def tool_versions() -> dict[str, str]:
    """First line of `--version` for the tools a record may depend on."""
    tools = {"cmake": ["cmake", "--version"],
             "ninja": ["ninja", "--version"], "cc": ["cc", "--version"],
             "c++": ["c++", "--version"], "ccache": ["ccache", "--version"],
             "quilt": ["quilt", "--version"]}
    out = {"python": sys.version.split()[0], "patchctl": __version__,
           "platform": platform.platform()}
    if shutil.which("git") is not None:
        from patchctl import gitrepo  # the one place that runs git

        with contextlib.suppress(PatchctlError):
            out["git"] = gitrepo.version()
    for name, argv in tools.items():
        if shutil.which(argv[0]) is None:
            continue
        try:
            proc = procs.capture(argv, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            continue
        first = (proc.stdout or proc.stderr).strip().splitlines()
        if first:
            out[name] = first[0]
    return out


def stack_identity(project: Path) -> dict[str, Any] | None:
    """The stack a record was made with: pin, fingerprint and each patch's own digest (so a
    record can be matched to a patch that did not change when a later one did)."""
    from patchctl.errors import PatchctlError
    from patchctl.model.fingerprint import fingerprint
    from patchctl.model.stack import find_stack

    try:
        stack = find_stack(project)
        pin = stack.pin()
        patches = stack.patches()
        return {"name": pin.name, "pin": pin.commit,
                "fingerprint": fingerprint(pin.commit, patches),
                "patches": [{"file": p.name, "digest": p.digest} for p in patches]}
    except PatchctlError:
        return None


@dataclass
class Record:
    name: str
    argv: list[str]
    cwd: str
    started: str
    seconds: float
    exit_code: int
    expect: str  # pass | fail
    tools: dict[str, str]
    stack: dict[str, Any] | None
    output_file: str
    output_sha256: str
    extra: dict[str, Any] = field(default_factory=dict)
    commands: list[list[str]] = field(default_factory=list)
    host: dict[str, Any] = field(default_factory=dict)
    backend: dict[str, Any] = field(default_factory=dict)
    runtime: dict[str, Any] | None = None
    artifacts: list[dict[str, Any]] = field(default_factory=list)
    metrics: object = None

    @property
    def as_expected(self) -> bool:
        return (self.exit_code == 0) == (self.expect == "pass")


def write_record(evidence_dir: Path, record: Record) -> Path:
    path = evidence_dir / f"{record.name}.json"
    data = {"schema": schemas.EVIDENCE, **asdict(record), "as_expected": record.as_expected}
    fsutil.atomic_write(path, json.dumps(data, indent=2, sort_keys=True) + "\n")
    return path


def artifact_entry(role: str, path: Path) -> dict[str, Any]:
    """A model, split or other input by its content: role, path, size and sha256."""
    from patchctl.errors import InputError

    try:
        with open(path, "rb") as f:
            digest = hashlib.file_digest(f, "sha256").hexdigest()
    except OSError as e:
        raise InputError(f"--{role} {path}: {e.strerror}") from e
    return {"role": role, "path": str(path), "bytes": path.stat().st_size, "sha256": digest}


def worker_identity(worker: Path) -> dict[str, Any]:
    """``worker --version --json``: the runtime's pin, fingerprint, lane and toolchain."""
    from patchctl.errors import EnvironmentFailure
    from patchctl.records.identity import IDENTITY_SCHEMA
    from patchctl.toolout import reason
    from patchctl.untrusted import BadDocument, parse_json, shorten

    try:
        proc = procs.run([str(worker), "--version", "--json"], timeout=60)
        if proc.returncode == 0:
            identity: dict[str, Any] = parse_json(proc.stdout or b"", IDENTITY_SCHEMA)
            return identity
        why = f"exit {proc.returncode}: {shorten(reason(proc.stderr), 300)}"
    except (OSError, subprocess.TimeoutExpired, BadDocument) as e:
        why = str(e)
    raise EnvironmentFailure(f"--worker {worker}: `worker --version --json` failed ({why})")


def _backend(name: str, host: dict[str, Any]) -> dict[str, Any]:
    """The backend a run used and its driver: for vulkan, the first device the
    loader lists (the one ggml-vulkan takes first)."""
    if name == "cpu":
        return {"name": name, "driver": None}
    if name == "vulkan":
        devices = (host.get("vulkan") or {}).get("devices") or [{}]
        dev = devices[0]
        driver = " ".join(v for v in (dev.get("driver"), dev.get("driver_info")) if v) or None
        return {"name": name, "driver": driver, "device": dev.get("name"), "api": dev.get("api")}
    return {"name": name, "driver": host.get("driver")}


def _read_metrics(path: Path | None) -> object:
    if path is None:
        return None
    from patchctl.untrusted import BadDocument, read_json

    try:
        return read_json(path)
    except BadDocument as e:
        return {"error": f"{path}: {e}"}


def run_and_record(name: str, argv: list[str], *, evidence_dir: Path, project: Path,
                   expect: str = "pass", echo: Callable[[bytes], object] | None = None,
                   backend: str = "cpu", worker: Path | None = None,
                   artifacts: list[dict[str, Any]] | None = None,
                   metrics: Path | None = None) -> Record:
    """Run ``argv`` (no shell), stream and keep its output, and write the record.

    ``artifacts`` are :func:`artifact_entry` dicts (hashed before the run);
    ``metrics`` a JSON file the command writes, stored raw in the record.
    """
    from patchctl.records import hostinfo

    runtime = worker_identity(worker) if worker is not None else None
    evidence_dir.mkdir(parents=True, exist_ok=True)
    log_path = evidence_dir / f"{name}.log"
    started = dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()
    t0 = time.perf_counter()
    chunks: list[bytes] = []

    def kept(line: bytes) -> None:  # a secret the command prints is neither kept nor shown
        chunks.append(redact_bytes(line))
        if echo:
            echo(chunks[-1])

    try:
        code = procs.stream(argv, kept, cwd=os.getcwd())
    except OSError as e:
        from patchctl.errors import EnvironmentFailure

        raise EnvironmentFailure(f"cannot run {argv[0]}: {e.strerror}") from e
    output = b"".join(chunks)
    fsutil.atomic_write(log_path, output)
    shown = [redact(a) for a in argv]  # a secret given on the command line is not kept
    record = Record(
        name=name, argv=shown, cwd=os.getcwd(), started=started,
        seconds=round(time.perf_counter() - t0, 3), exit_code=code, expect=expect,
        tools=tool_versions(), stack=stack_identity(project),
        output_file=log_path.name, output_sha256=hashlib.sha256(output).hexdigest(),
        commands=[shown], host=(host := hostinfo.describe()),
        backend=_backend(backend, host), runtime=runtime, artifacts=list(artifacts or []),
        metrics=_read_metrics(metrics),
    )
    write_record(evidence_dir, record)
    return record


def record_steps(name: str, *, evidence_dir: Path, argv: list[str], started: str,
                 seconds: float, ok: bool, stack: dict[str, Any] | None, log: bytes,
                 extra: dict[str, Any]) -> Path:
    """Write NAME.json and NAME.log for a command that ran its own steps (``reproduce``)
    rather than one child process: ``log`` is their transcript, ``extra`` the result."""
    from patchctl.records import hostinfo

    evidence_dir.mkdir(parents=True, exist_ok=True)
    log = redact_bytes(log)
    argv = [redact(a) for a in argv]
    fsutil.atomic_write(evidence_dir / f"{name}.log", log)
    record = Record(
        name=name, argv=argv, cwd=os.getcwd(), started=started, seconds=round(seconds, 3),
        exit_code=0 if ok else 1, expect="pass", tools=tool_versions(), stack=stack,
        output_file=f"{name}.log", output_sha256=hashlib.sha256(log).hexdigest(), extra=extra,
        commands=[list(argv)], host=(host := hostinfo.describe()), backend=_backend("cpu", host),
    )
    return write_record(evidence_dir, record)
