"""``patchctl release verify PACKAGE``: is this package what it says it is, for this host?

Each problem is one finding: a file that fails SHA256SUMS (or is missing or
unlisted), a manifest, recipe or SBOM that disagrees with the identity the
binary embeds (``worker --version --json``), a lane this host cannot run, and
finally whatever the packaged worker's own start-up check refuses.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchctl import hostinfo, schemas
from patchctl.errors import InputError
from patchctl.release import layout


@dataclass
class VerifyReport:
    package: Path
    findings: list[str] = field(default_factory=list)
    files: int = 0
    identity: dict[str, Any] | None = None
    lane: str | None = None

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_dict(self) -> dict[str, Any]:
        stack = (self.identity or {}).get("stack", {})
        return {"schema": schemas.RELEASE_VERIFY, "package": str(self.package),
                "ok": self.ok, "findings": self.findings, "files": self.files,
                "lane": self.lane, "fingerprint": stack.get("fingerprint")}


def verify_package(package: Path) -> VerifyReport:
    """Check an archive (unpacked into a temp dir) or an unpacked package directory."""
    if package.is_dir():
        return _verify_root(package, VerifyReport(package))
    if not package.is_file():
        raise InputError(f"{package} does not exist: give a worker package (.tar.gz) or its "
                         "unpacked directory")
    with tempfile.TemporaryDirectory(prefix="patchctl-verify-") as tmp:
        return _verify_root(layout.extract(package, Path(tmp)), VerifyReport(package))


def _verify_root(root: Path, report: VerifyReport) -> VerifyReport:
    found = report.findings
    listed = _check_sums(root, report)
    man = _load_json(root / layout.MANIFEST, found)
    if man is not None and man.get("schema") != layout.SCHEMA:
        found.append(f"{layout.MANIFEST}: schema is {man.get('schema')!r}, not {layout.SCHEMA}")
        man = None
    identity = _worker_identity(root / layout.WORKER, found)
    report.identity = identity
    if man is not None and identity is not None:
        report.lane = identity.get("lane", {}).get("name")
        _compare_manifest(man, identity, found)
        _compare_recipe(_load_json(root / layout.RECIPE, found), identity, found)
        _compare_sbom(_load_json(root / layout.SBOM, found), listed, identity, found)
        _check_lane(identity, found)
    if not found:  # the worker's own gate: it must agree with everything above
        proc = subprocess.run([str(root / layout.WORKER), "--check", "--recipe",
                               str(root / layout.RECIPE)], capture_output=True, text=True,
                              timeout=300, check=False)
        if proc.returncode != 0:
            line = (proc.stderr.strip().splitlines() or [""])[-1]
            found.append(f"the packaged worker refuses to start (exit {proc.returncode}): {line}")
    return report


def _check_sums(root: Path, report: VerifyReport) -> dict[str, str]:
    """Findings for files that fail SHA256SUMS; returns what it lists."""
    found = report.findings
    sums = root / layout.SUMS
    if not sums.is_file():
        found.append(f"{layout.SUMS} is missing")
        return {}
    listed, problems = layout.parse_sums(sums.read_text(encoding="utf-8", errors="replace"))
    found.extend(problems)
    try:
        present = set(layout.package_files(root))
    except InputError as e:
        found.append(str(e))
        return listed
    report.files = len(present)
    for rel in sorted(present - set(listed)):
        found.append(f"{rel} is not listed in {layout.SUMS}")
    for rel, digest in sorted(listed.items()):
        if rel not in present:
            found.append(f"{rel} is listed in {layout.SUMS} but missing")
        elif (actual := layout.file_sha256(root / rel)) != digest:
            found.append(f"{rel}: sha256 {actual[:16]}..., {layout.SUMS} says {digest[:16]}...")
    return listed


def _load_json(path: Path, found: list[str]) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        found.append(f"{path.name} is missing")
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        found.append(f"{path.name} is not readable JSON ({e})")
        return None
    if not isinstance(data, dict):
        found.append(f"{path.name} is not a JSON object")
        return None
    return data


def _worker_identity(worker: Path, found: list[str]) -> dict[str, Any] | None:
    if not worker.is_file():
        found.append(f"{layout.WORKER} is missing")
        return None
    try:
        proc = subprocess.run([str(worker), "--version", "--json"], capture_output=True,
                              text=True, timeout=60, check=False)
        identity = json.loads(proc.stdout) if proc.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError):
        identity = None
    if not isinstance(identity, dict) or "stack" not in identity:
        found.append(f"{layout.WORKER} does not report a worker identity "
                     "(`worker --version --json`): not a worker binary, or not for this host")
        return None
    return identity


def _differ(found: list[str], where: str, what: str, theirs: object, mine: object) -> None:
    if theirs != mine:
        found.append(f"{where} names {what} {_show(theirs)}, the binary embeds {_show(mine)}")


def _show(value: object) -> str:
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else value
    return text if len(text) <= 80 else text[:77] + "..."


def _compare_manifest(man: dict[str, Any], identity: dict[str, Any], found: list[str]) -> None:
    where = layout.MANIFEST
    stack, mine = man.get("stack") or {}, identity["stack"]
    for key in ("fingerprint", "pin", "algorithm", "name", "patches"):
        _differ(found, where, f"stack {key}", stack.get(key), mine.get(key))
    worker = man.get("worker") or {}
    for key in ("engine_version", "protocol_version", "certification", "build_type"):
        _differ(found, where, key, worker.get(key), identity.get(key))
    _differ(found, where, "lane", man.get("lane"), identity.get("lane"))
    upstream_tree = (identity.get("upstream_build") or {}).get("tree")
    _differ(found, where, "upstream tree", (man.get("upstream") or {}).get("tree"), upstream_tree)


def _compare_recipe(recipe: dict[str, Any] | None, identity: dict[str, Any],
                    found: list[str]) -> None:
    if recipe is None:
        return
    where = layout.RECIPE
    _differ(found, where, "protocol", recipe.get("protocol_version"),
            identity.get("protocol_version"))
    _differ(found, where, "pin", recipe.get("pin"), identity["stack"]["pin"])
    _differ(found, where, "stack fingerprint", recipe.get("stack_fingerprint"),
            identity["stack"]["fingerprint"])
    _differ(found, where, "lane", recipe.get("lane"), identity["lane"]["name"])


def _compare_sbom(sbom: dict[str, Any] | None, listed: dict[str, str], identity: dict[str, Any],
                  found: list[str]) -> None:
    """The SBOM against the identity, and its file checksums against SHA256SUMS (a file
    that fails SHA256SUMS is already a finding of its own)."""
    if sbom is None:
        return
    where = layout.SBOM
    if sbom.get("spdxVersion") != "SPDX-2.3":
        found.append(f"{where}: spdxVersion is {sbom.get('spdxVersion')!r}, not SPDX-2.3")
        return
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
            found.append(f"{where} lists {rel}, which {layout.SUMS} does not")
        elif sha != listed[rel]:
            found.append(f"{where} gives {rel} sha256 {str(sha)[:16]}..., {layout.SUMS} "
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
