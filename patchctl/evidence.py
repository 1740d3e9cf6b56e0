"""Evidence records: what ran, with which tools, at which pin, and what came out.

Every file under evidence/ is written here, by a command, from a real run.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from patchctl import __version__, fsutil, schemas


def tool_versions() -> dict[str, str]:
    """First line of `--version` for the tools a record may depend on."""
    tools = {"git": ["git", "--version"], "cmake": ["cmake", "--version"],
             "ninja": ["ninja", "--version"], "cc": ["cc", "--version"],
             "c++": ["c++", "--version"], "ccache": ["ccache", "--version"],
             "quilt": ["quilt", "--version"]}
    out = {"python": sys.version.split()[0], "patchctl": __version__,
           "platform": platform.platform()}
    for name, argv in tools.items():
        if shutil.which(argv[0]) is None:
            continue
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        first = (proc.stdout or proc.stderr).strip().splitlines()
        if first:
            out[name] = first[0]
    return out


def stack_identity(project: Path) -> dict[str, str] | None:
    from patchctl.errors import PatchctlError
    from patchctl.fingerprint import fingerprint
    from patchctl.stack import find_stack

    try:
        stack = find_stack(project)
        pin = stack.pin()
        return {"name": pin.name, "pin": pin.commit,
                "fingerprint": fingerprint(pin.commit, stack.patches())}
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
    stack: dict[str, str] | None
    output_file: str
    output_sha256: str
    extra: dict = field(default_factory=dict)

    @property
    def as_expected(self) -> bool:
        return (self.exit_code == 0) == (self.expect == "pass")


def write_record(evidence_dir: Path, record: Record) -> Path:
    path = evidence_dir / f"{record.name}.json"
    data = {"schema": schemas.EVIDENCE, **asdict(record), "as_expected": record.as_expected}
    fsutil.atomic_write(path, json.dumps(data, indent=2, sort_keys=True) + "\n")
    return path


def run_and_record(name: str, argv: list[str], *, evidence_dir: Path, project: Path,
                   expect: str = "pass", echo=None) -> Record:
    """Run ``argv`` (no shell), stream and keep its output, and write the record."""
    evidence_dir.mkdir(parents=True, exist_ok=True)
    log_path = evidence_dir / f"{name}.log"
    started = dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()
    t0 = time.perf_counter()
    chunks: list[bytes] = []
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                cwd=os.getcwd())
    except OSError as e:
        from patchctl.errors import EnvironmentFailure

        raise EnvironmentFailure(f"cannot run {argv[0]}: {e.strerror}") from e
    assert proc.stdout is not None
    for line in proc.stdout:
        chunks.append(line)
        if echo:
            echo(line)
    code = proc.wait()
    output = b"".join(chunks)
    fsutil.atomic_write(log_path, output)
    record = Record(
        name=name, argv=argv, cwd=os.getcwd(), started=started,
        seconds=round(time.perf_counter() - t0, 3), exit_code=code, expect=expect,
        tools=tool_versions(), stack=stack_identity(project),
        output_file=log_path.name, output_sha256=hashlib.sha256(output).hexdigest(),
    )
    write_record(evidence_dir, record)
    return record


def record_steps(name: str, *, evidence_dir: Path, argv: list[str], started: str,
                 seconds: float, ok: bool, stack: dict[str, str] | None, log: bytes,
                 extra: dict) -> Path:
    """Write NAME.json and NAME.log for a command that ran its own steps (``reproduce``)
    rather than one child process: ``log`` is their transcript, ``extra`` the result."""
    evidence_dir.mkdir(parents=True, exist_ok=True)
    fsutil.atomic_write(evidence_dir / f"{name}.log", log)
    record = Record(
        name=name, argv=argv, cwd=os.getcwd(), started=started, seconds=round(seconds, 3),
        exit_code=0 if ok else 1, expect="pass", tools=tool_versions(), stack=stack,
        output_file=f"{name}.log", output_sha256=hashlib.sha256(log).hexdigest(), extra=extra,
    )
    return write_record(evidence_dir, record)
