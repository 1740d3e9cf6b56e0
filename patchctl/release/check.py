"""``patchctl release verify PACKAGE``: is this package what it says it is, for this host?

Each problem is one finding: a link or special file in the package (then nothing
else is read), a file that fails SHA256SUMS (or is missing or unlisted), a
manifest, recipe or SBOM that is not of its schema (patchctl.release.documents),
and, only once all of those pass, since nothing from a package that fails a
check is run: an identity the binary does not report (``worker --version
--json``, of its schema too) or that the manifest, recipe or SBOM disagrees with,
a lane this host cannot run, and finally whatever the packaged worker's own
start-up check refuses (for the vulkan lane: a host where ggml-vulkan has no
Vulkan device to run on, the worker's exit 14). An archive is unpacked into a temp dir that goes on
every way out, after ``layout.extract`` has checked its size and headers.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchctl import fsutil, procs
from patchctl.errors import InputError
from patchctl.model import schemas
from patchctl.records import hostinfo
from patchctl.records.identity import IDENTITY_SCHEMA
from patchctl.release import documents, layout
from patchctl.toolout import reason
from patchctl.untrusted import BadDocument, parse_json, printable, read_json, shorten

MAX_SUMS_BYTES = 1 << 20
EXIT_NO_DEVICE = 14  # the worker's kExitDevice (native/include/worker/startup.hpp)
MAX_DOCUMENT_BYTES = 4 << 20


@dataclass
class VerifyReport:
    package: Path
    findings: list[str] = field(default_factory=list)
    files: int = 0
    identity: dict[str, Any] | None = None
    lane: str | None = None
    worker_run: bool = False  # False: a check failed before bin/worker could be run

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_dict(self) -> dict[str, Any]:
        stack = (self.identity or {}).get("stack", {})
        return {"schema": schemas.RELEASE_VERIFY, "package": str(self.package),
                "ok": self.ok, "findings": self.findings, "files": self.files,
                "lane": self.lane, "fingerprint": stack.get("fingerprint")}


def verify_package(package: Path) -> VerifyReport:
    """Check an archive (unpacked into a temp dir) or an unpacked package directory.

    The temp dir goes on every way out: a finding, a refusal, an error, an interrupt."""
    if package.is_dir():
        return _verify_root(package, VerifyReport(package))
    if not package.exists():
        raise InputError(f"{package} does not exist: give a worker package (.tar.gz) or its "
                         "unpacked directory")
    if not package.is_file():
        raise InputError(f"{package} is not a regular file: give a worker package (.tar.gz) "
                         "or its unpacked directory")
    with tempfile.TemporaryDirectory(prefix="patchctl-verify-") as tmp:
        return _verify_root(layout.extract(package, Path(tmp)), VerifyReport(package))


def _verify_root(root: Path, report: VerifyReport) -> VerifyReport:
    """Every check that reads the package first; then, only when all of them pass, the
    checks that run its worker (nothing from a package that fails one runs)."""
    found = report.findings
    listed = _check_sums(root, report)
    if listed is None:  # a link or special file: nothing in the package is read or run
        return report
    man = _load_json(root / layout.MANIFEST, documents.MANIFEST_SCHEMA, found)
    recipe = _load_json(root / layout.RECIPE, documents.RECIPE_SCHEMA, found)
    sbom = _load_json(root / layout.SBOM, documents.SBOM_SCHEMA, found)
    if found or man is None or recipe is None or sbom is None:  # (None: a finding too)
        return report
    report.worker_run = True
    identity = _worker_identity(root / layout.WORKER, found)
    if identity is None:
        return report
    report.identity = identity
    report.lane = identity["lane"]["name"]
    _compare_manifest(man, identity, found)
    _compare_recipe(recipe, identity, found)
    _compare_sbom(sbom, listed, identity, found)
    _check_lane(identity, found)
    if not found:  # the worker's own gate: it must agree with everything above
        _worker_gate(root, found)
    return report


def _worker_gate(root: Path, found: list[str]) -> None:
    try:
        proc = procs.capture([str(root / layout.WORKER), "--check", "--recipe",
                               str(root / layout.RECIPE)], timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        found.append(f"the packaged worker's start-up check did not run ({shorten(str(e))})")
        return
    if proc.returncode != 0:
        what = ("this host has no Vulkan device the package runs on"
                if proc.returncode == EXIT_NO_DEVICE else "the packaged worker refuses to start")
        found.append(f"{what} (exit {proc.returncode}): {shorten(reason(proc.stderr), 300)}")


def _check_sums(root: Path, report: VerifyReport) -> dict[str, str] | None:
    """Findings for files that fail SHA256SUMS; returns what it lists, or None (and the
    finding) when the package holds a link or a special file, which is never opened."""
    found = report.findings
    try:
        present = set(layout.package_files(root))
    except InputError as e:
        found.append(printable(str(e)))
        return None
    report.files = len(present)
    sums = root / layout.SUMS
    if not sums.is_file():
        found.append(f"{layout.SUMS} is missing")
        return {}
    if sums.stat().st_size > MAX_SUMS_BYTES:
        found.append(f"{layout.SUMS} is larger than {MAX_SUMS_BYTES} bytes")
        return {}
    text = fsutil.read_regular(sums).decode("utf-8", errors="replace")
    listed, problems = layout.parse_sums(text)
    found.extend(problems)
    for rel in sorted(present - set(listed)):
        found.append(f"{printable(rel)} is not listed in {layout.SUMS}")
    for rel, digest in sorted(listed.items()):
        if rel not in present:
            found.append(f"{printable(rel)} is listed in {layout.SUMS} but missing")
        elif (actual := layout.file_sha256(root / rel)) != digest:
            found.append(f"{printable(rel)}: sha256 {actual[:16]}..., {layout.SUMS} says "
                         f"{digest[:16]}...")
    return listed


def _load_json(path: Path, schema: dict[str, Any], found: list[str]) -> dict[str, Any] | None:
    """The document at ``path`` if it is of ``schema``; else None and one finding."""
    if not path.exists():
        found.append(f"{path.name} is missing")
        return None
    try:
        doc: dict[str, Any] = read_json(path, schema, max_bytes=MAX_DOCUMENT_BYTES)
    except BadDocument as e:
        found.append(f"{path.name}: {e}")
        return None
    return doc


def _worker_identity(worker: Path, found: list[str]) -> dict[str, Any] | None:
    """``worker --version --json``, of its schema; else None and one finding."""
    if not worker.is_file():
        found.append(f"{layout.WORKER} is missing")
        return None
    why = "not a worker binary, or not for this host"
    try:
        proc = procs.run([str(worker), "--version", "--json"], timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        proc = None
        why = shorten(str(e))
    if proc is not None and proc.returncode == 0:
        try:
            identity: dict[str, Any] = parse_json(proc.stdout or b"", IDENTITY_SCHEMA,
                                                  max_bytes=MAX_DOCUMENT_BYTES)
            return identity
        except BadDocument as e:
            why = str(e)
    elif proc is not None:
        why = f"exit {proc.returncode}; {why}"
    found.append(f"{layout.WORKER} does not report a worker identity "
                 f"(`worker --version --json`: {why})")
    return None


def _differ(found: list[str], where: str, what: str, theirs: object, mine: object) -> None:
    if theirs != mine:
        found.append(f"{where} names {what} {_show(theirs)}, the binary embeds {_show(mine)}")


def _show(value: object) -> str:
    return shorten(json.dumps(value, sort_keys=True) if not isinstance(value, str) else value,
                   80)


def _compare_manifest(man: dict[str, Any], identity: dict[str, Any], found: list[str]) -> None:
    where = layout.MANIFEST
    stack, mine = man.get("stack") or {}, identity["stack"]
    for key in ("fingerprint", "pin", "algorithm", "name", "patches"):
        _differ(found, where, f"stack {key}", stack.get(key), mine.get(key))
    worker = man.get("worker") or {}
    for key in ("engine_version", "protocol_version", "certification", "build_type"):
        _differ(found, where, key, worker.get(key), identity.get(key))
    _differ(found, where, "lane", man.get("lane"), identity.get("lane"))
    backend = {k: v for k, v in (man.get("backend") or {}).items() if k != "tested_on"}
    _differ(found, where, "backend", backend, identity.get("backend") or {"name": "cpu"})
    upstream_tree = (identity.get("upstream_build") or {}).get("tree")
    _differ(found, where, "upstream tree", (man.get("upstream") or {}).get("tree"), upstream_tree)


def _compare_recipe(recipe: dict[str, Any], identity: dict[str, Any], found: list[str]) -> None:
    where = layout.RECIPE
    _differ(found, where, "protocol", recipe.get("protocol_version"),
            identity.get("protocol_version"))
    _differ(found, where, "pin", recipe.get("pin"), identity["stack"]["pin"])
    _differ(found, where, "stack fingerprint", recipe.get("stack_fingerprint"),
            identity["stack"]["fingerprint"])
    _differ(found, where, "lane", recipe.get("lane"), identity["lane"]["name"])


def _compare_sbom(sbom: dict[str, Any], listed: dict[str, str], identity: dict[str, Any],
                  found: list[str]) -> None:
    """The SBOM against the identity, and its file checksums against SHA256SUMS (a file
    that fails SHA256SUMS is already a finding of its own)."""
    where = layout.SBOM
    packages = {p.get("SPDXID"): p for p in sbom.get("packages", [])}
    worker = packages.get("SPDXRef-Package-worker") or {}
    stack = identity["stack"]
    _differ(found, where, "worker version", worker.get("versionInfo"),
            f"{identity['engine_version']}+{stack['short']}")
    upstream = [p for i, p in packages.items() if i and i.startswith("SPDXRef-Package-upstream-")]
    _differ(found, where, "upstream version", upstream[0].get("versionInfo") if upstream else None,
            stack["pin"])
    patches = sorted(p.get("name") for i, p in packages.items()
                     if i and i.startswith("SPDXRef-Patch-"))
    _differ(found, where, "patches", patches, sorted(p["file"] for p in stack["patches"]))
    libraries = sorted(f"{p.get('name')} {p.get('versionInfo')}" for i, p in packages.items()
                       if i and i.startswith("SPDXRef-Library-"))
    embedded = sorted(f"{lib.get('name')} {lib.get('version')}"
                      for lib in identity.get("libraries") or [] if isinstance(lib, dict))
    _differ(found, where, "libraries", libraries, embedded)
    for f in sbom.get("files", []):
        rel = str(f.get("fileName", "")).removeprefix("./")
        sha = next((c.get("checksumValue") for c in f.get("checksums", [])
                    if c.get("algorithm") == "SHA256"), None)
        if rel not in listed:
            found.append(f"{where} lists {printable(rel)}, which {layout.SUMS} does not")
        elif sha != listed[rel]:
            found.append(f"{where} gives {printable(rel)} sha256 {str(sha)[:16]}..., {layout.SUMS} "
                         f"says {listed[rel][:16]}...")


def _check_lane(identity: dict[str, Any], found: list[str]) -> None:
    lane = identity.get("lane") or {}
    if not lane.get("release"):
        found.append(f"{layout.WORKER} is not a release build (lane {lane.get('name')!r})")
    arch = hostinfo.machine_arch()
    if lane.get("arch") and lane["arch"] != arch:
        found.append(f"lane {lane.get('name')} is for {lane['arch']}, this host is {arch}")
        return
    have = hostinfo.cpu_features()
    missing = [f for f in lane.get("cpu_features", []) if have is not None and f not in have]
    if missing:
        found.append(f"lane {lane.get('name')} needs CPU features {', '.join(missing)}, "
                     "which this host lacks")
