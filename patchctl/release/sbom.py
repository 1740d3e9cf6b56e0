"""The package's SPDX 2.3 JSON SBOM.

It names the worker, the upstream at its pin with the license found in the
pinned tree, each patch of the stack with its sha256, the libraries the
worker was built with (nlohmann/json, OpenSSL, and for the vulkan lane the
Vulkan loader, linked dynamically, and headers: name, version as configure
found it, license, linkage; from the binary's identity), the toolchain that
built the binary and patchctl itself, and the files that ship with their
SHA-1 and SHA-256 (SPDX 2.3 requires SHA-1 for files). Everything in it comes
from the build's inputs, and its one timestamp is SOURCE_DATE_EPOCH, so a
rebuild writes the same bytes.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchctl import __version__

# Text that identifies a license well enough to name its SPDX id; anything
# else ships as a LicenseRef with its full text.
_KNOWN_LICENSES = (
    ("MIT", re.compile(r"Permission is hereby granted, free of charge, to any person")),
    ("Apache-2.0", re.compile(r"Apache License\s+Version 2\.0")),
    ("BSD-3-Clause", re.compile(r"Neither the name of .* nor the\s+names of its contributors")),
)


# Where a library the worker is built with lives (native/cmake/Libraries.cmake).
_LIBRARY_HOMEPAGES = {"nlohmann_json": "https://github.com/nlohmann/json",
                      "OpenSSL": "https://www.openssl.org",
                      "Vulkan-Loader": "https://github.com/KhronosGroup/Vulkan-Loader",
                      "Vulkan-Headers": "https://github.com/KhronosGroup/Vulkan-Headers"}
# An SPDX license id, or ids joined by OR / AND (Vulkan-Headers: "Apache-2.0 OR MIT").
_SPDX_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+-]*(?: (?:OR|AND) [A-Za-z0-9][A-Za-z0-9.+-]*)*")


def license_id(text: str) -> str | None:
    return next((spdx for spdx, pattern in _KNOWN_LICENSES if pattern.search(text)), None)


def _ref(text: str) -> str:
    """An SPDX id fragment: letters, digits, '.' and '-' only."""
    return re.sub(r"[^A-Za-z0-9.-]+", "-", text).strip("-") or "x"


@dataclass(frozen=True)
class SbomInputs:
    package: str                    # the package (archive) name
    engine_version: str
    lane: str
    fingerprint: str
    upstream_name: str
    upstream_url: str
    pin: str
    license_text: str
    license_file: str               # where the text sits in the package
    patches: list[tuple[str, str]]  # (file name, sha256 of the patch file)
    toolchain: dict[str, str]       # tool -> version
    libraries: list[dict[str, str]]  # the identity's: name, version, license, linkage
    files: dict[str, Path]          # package path -> file, for checksums
    source_date_epoch: int


def document(inp: SbomInputs) -> dict[str, Any]:
    spdx_license = license_id(inp.license_text)
    extracted = []
    if spdx_license is None:
        spdx_license = f"LicenseRef-{_ref(inp.upstream_name)}"
        extracted.append({"licenseId": spdx_license, "name": f"{inp.upstream_name} license",
                          "extractedText": inp.license_text})
    worker_id = "SPDXRef-Package-worker"
    upstream_id = f"SPDXRef-Package-upstream-{_ref(inp.upstream_name)}"
    created = dt.datetime.fromtimestamp(inp.source_date_epoch, dt.UTC)

    def package(spdx_id: str, name: str, version: str, *, comment: str,
                license_declared: str = "NOASSERTION", download: str = "NOASSERTION",
                checksums: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        p = {"SPDXID": spdx_id, "name": name, "versionInfo": version,
             "downloadLocation": download, "filesAnalyzed": False,
             "licenseConcluded": "NOASSERTION", "licenseDeclared": license_declared,
             "copyrightText": "NOASSERTION", "comment": comment}
        if checksums:
            p["checksums"] = checksums
        return p

    download = inp.upstream_url if re.match(r"^[a-z]+://", inp.upstream_url) else "NOASSERTION"
    if download != "NOASSERTION":
        download = f"git+{download}@{inp.pin}"
    packages = [
        package(worker_id, "worker", f"{inp.engine_version}+{inp.fingerprint[:16]}",
                comment=f"patchctl's native worker, lane {inp.lane}, built against "
                f"{inp.upstream_name} {inp.pin} with the stack of fingerprint {inp.fingerprint}"),
        package(upstream_id, inp.upstream_name, inp.pin, license_declared=spdx_license,
                download=download,
                comment=f"the pinned upstream; license text from {inp.license_file} in this "
                "package, taken from the pinned tree. Its sources are not in the package."),
    ]
    relationships = [
        {"spdxElementId": "SPDXRef-DOCUMENT", "relationshipType": "DESCRIBES",
         "relatedSpdxElement": worker_id},
        {"spdxElementId": upstream_id, "relationshipType": "STATIC_LINK",
         "relatedSpdxElement": worker_id},
    ]
    for name, digest in inp.patches:
        pid = f"SPDXRef-Patch-{_ref(name)}"
        packages.append(package(pid, name, digest[:16], comment="a patch of the stack",
                                checksums=[{"algorithm": "SHA256", "checksumValue": digest}]))
        relationships.append({"spdxElementId": pid, "relationshipType": "PATCH_APPLIED",
                              "relatedSpdxElement": upstream_id})
    for lib in inp.libraries:
        name = str(lib.get("name") or "library")
        lid = f"SPDXRef-Library-{_ref(name)}"
        linkage = lib.get("linkage", "")
        declared = lib.get("license", "")
        p = package(lid, name, lib.get("version") or "NOASSERTION",
                    license_declared=declared if _SPDX_ID.fullmatch(declared) else "NOASSERTION",
                    comment=f"a library the worker is built with ({linkage}), the build "
                    "machine's installation at the version configure found"
                    + ("; the host's libvulkan.so.1 is loaded at run time" if linkage == "shared"
                       and name == "Vulkan-Loader" else ""))
        if name in _LIBRARY_HOMEPAGES:
            p["homepage"] = _LIBRARY_HOMEPAGES[name]
        packages.append(p)
        relationships.append({"spdxElementId": lid,
                              "relationshipType": "DYNAMIC_LINK" if linkage == "shared"
                              else "STATIC_LINK", "relatedSpdxElement": worker_id})
    tools = dict(inp.toolchain, patchctl=__version__)
    for tool, version in sorted(tools.items()):
        tid = f"SPDXRef-Tool-{_ref(tool)}"
        packages.append(package(tid, tool, version, comment="a build tool"))
        relationships.append({"spdxElementId": tid, "relationshipType": "BUILD_TOOL_OF",
                              "relatedSpdxElement": worker_id})
    files = []
    sha1s = []
    for rel, path in sorted(inp.files.items()):
        data = path.read_bytes()
        sha1s.append(hashlib.sha1(data).hexdigest())
        fid = f"SPDXRef-File-{_ref(rel)}"
        files.append({"SPDXID": fid, "fileName": f"./{rel}",
                      "checksums": [
                          {"algorithm": "SHA1", "checksumValue": hashlib.sha1(data).hexdigest()},
                          {"algorithm": "SHA256",
                           "checksumValue": hashlib.sha256(data).hexdigest()}],
                      "licenseConcluded": "NOASSERTION", "copyrightText": "NOASSERTION"})
        relationships.append({"spdxElementId": worker_id, "relationshipType": "CONTAINS",
                              "relatedSpdxElement": fid})
    # The worker package holds the files that ship: SPDX's verification code
    # is the SHA-1 over their sorted SHA-1s.
    packages[0]["filesAnalyzed"] = True
    packages[0]["packageVerificationCode"] = {
        "packageVerificationCodeValue": hashlib.sha1("".join(sorted(sha1s)).encode()).hexdigest()}
    doc = {
        "spdxVersion": "SPDX-2.3",
        "dataLicense": "CC0-1.0",
        "SPDXID": "SPDXRef-DOCUMENT",
        "name": inp.package,
        # Unique per content, and the same for every rebuild of it.
        "documentNamespace": f"https://patchctl.invalid/spdx/{inp.package}-{inp.fingerprint}",
        "creationInfo": {"created": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
                         "creators": [f"Tool: patchctl-{__version__}"]},
        "packages": packages,
        "files": files,
        "relationships": relationships,
    }
    if extracted:
        doc["hasExtractedLicensingInfos"] = extracted
    return doc
