"""A worker package's JSON documents: the manifest's writer and the shape of each one.

``release verify`` reads four documents that come from the package, so from whoever
made it: manifest.json (written by ``manifest`` below), recipe.json (the worker's own
format), sbom.spdx.json (SPDX 2.3) and what the packaged ``worker --version --json``
prints (native/src/core/identity.cpp). Each goes through ``patchctl.untrusted``
against its schema here before any field is used; a document that is not of its
shape is one finding. The schemas constrain what verify reads and leave room for
fields a later writer adds.
"""

from __future__ import annotations

from typing import Any

from patchctl.model import schemas

_STR: dict[str, Any] = {"type": "string"}
_INT: dict[str, Any] = {"type": "integer"}
_STRINGS: dict[str, Any] = {"type": "array", "items": _STR}


def _object(required: dict[str, Any], **optional: Any) -> dict[str, Any]:
    return {"type": "object", "required": sorted(required),
            "properties": {**required, **optional}}


# `patchctl fingerprint --json`'s object, as the worker embeds it.
STACK_SCHEMA = _object({
    "algorithm": _STR, "name": _STR, "pin": _STR, "fingerprint": _STR, "short": _STR,
    "patches": {"type": "array",
                "items": _object({"file": _STR, "strip": _INT, "digest": _STR})},
})
LANE_SCHEMA = _object({"name": _STR, "arch": _STR, "cpu_features": _STRINGS,
                       "release": {"type": "boolean"}})
# The compute backend the worker links: cpu, or vulkan with the loader and headers
# versions its configure found (a worker from before backends has none: cpu).
BACKEND_SCHEMA = _object({"name": _STR}, loader=_STR, headers=_STR)
# What `worker --devices --json` prints in a Vulkan build (src/backend/vulkan_device.cpp).
_PHYSICAL = _object({"name": _STR, "type": _STR, "api_version": _STR, "driver": _STR,
                     "driver_info": _STR})
DEVICES_SCHEMA = _object({
    "backend": _STR,
}, loader=_STR, devices={"type": "array", "items": _object(
    {"name": _STR, "description": _STR},
    physical={"anyOf": [{"type": "null"}, _PHYSICAL]})})

# `worker --version --json` (native/src/core/identity.cpp, identity_json).
IDENTITY_SCHEMA = _object({
    "protocol_version": _INT,
    "engine_version": _STR,
    "stack": STACK_SCHEMA,
    "compiler": _object({"id": _STR, "version": _STR}),
    "cmake_version": _STR,
    "build_type": _STR,
    "certification": _STR,
    "upstream_build": {"anyOf": [{"type": "null"},
                                 _object({"dir": _STR, "target": _STR, "tree": _STR})]},
    "lane": LANE_SCHEMA,
}, libraries={"type": "array",
              "items": _object({"name": _STR, "version": _STR, "license": _STR,
                                "linkage": _STR})},
    backend=BACKEND_SCHEMA)

# manifest.json, patchctl.release/1: what ``manifest`` writes.
MANIFEST_SCHEMA = _object({
    "schema": {"const": schemas.RELEASE},
    "package": _STR,
    "worker": _object({"binary": _STR, "engine_version": _STR, "protocol_version": _INT,
                       "build_type": _STR, "certification": _STR}),
    "lane": LANE_SCHEMA,
    "stack": STACK_SCHEMA,
    "upstream": _object({
        "name": _STR, "url": _STR, "pin": _STR, "tree": _STR, "target": _STR,
        "license": _object({"file": _STR, "from": _STR,
                            "spdx": {"type": ["string", "null"]}}),
    }),
    "source": _object({"commit": _STR, "source_date_epoch": _INT}),
    "toolchain": {"type": "object", "additionalProperties": _STR},
    "configure": _STRINGS,
}, backend=_object({"name": _STR}, loader=_STR, headers=_STR,
                   tested_on=_object({"loader": _STR, "devices": {"type": "array"}})))

# recipe.json, worker.recipe/1 (the worker's --check refuses more than this does).
RECIPE_SCHEMA = _object({
    "schema": {"const": schemas.RECIPE},
    "protocol_version": _INT, "pin": _STR, "stack_fingerprint": _STR, "lane": _STR,
    "artifacts": {"type": "array", "items": _object({"path": _STR, "sha256": _STR})},
})

# sbom.spdx.json: SPDX 2.3, the fields verify compares (patchctl.release.sbom writes it).
_CHECKSUM = _object({"algorithm": _STR, "checksumValue": _STR})
SBOM_SCHEMA = _object({
    "spdxVersion": {"const": "SPDX-2.3"},
    "packages": {"type": "array", "items": _object({"SPDXID": _STR, "name": _STR},
                                                    versionInfo=_STR)},
    "files": {"type": "array", "items": _object({
        "fileName": _STR, "checksums": {"type": "array", "items": _CHECKSUM}})},
})


def manifest(*, package: str, binary: str, identity: dict[str, Any], upstream: dict[str, Any],
             commit: str, source_date_epoch: int, toolchain: dict[str, str],
             configure: list[str], tested_on: dict[str, Any] | None = None) -> dict[str, Any]:
    """manifest.json of a package: the worker's identity (``worker --version --json``),
    its backend (and, for vulkan, ``tested_on``: the loader and devices the build
    machine's ``worker --devices`` reported), the upstream it links (name, url, pin,
    tree, target, license) and how it was built."""
    backend: dict[str, Any] = dict(identity.get("backend") or {"name": "cpu"})
    if tested_on is not None:
        backend["tested_on"] = tested_on
    return {
        "schema": schemas.RELEASE,
        "package": package,
        "worker": {"binary": binary, "engine_version": identity["engine_version"],
                   "protocol_version": identity["protocol_version"],
                   "build_type": identity["build_type"],
                   "certification": identity["certification"]},
        "lane": identity["lane"],
        "backend": backend,
        "stack": identity["stack"],
        "upstream": upstream,
        "source": {"commit": commit, "source_date_epoch": source_date_epoch},
        "toolchain": toolchain,
        "configure": configure,
    }
