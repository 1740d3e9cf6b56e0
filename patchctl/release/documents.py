"""A worker package's JSON documents: the manifest's writer and the shape of each one.

``release verify`` reads four documents that come from the package, so from whoever
made it: manifest.json (written by ``manifest`` below), recipe.json (the worker's own
format), sbom.spdx.json (SPDX 2.3) and what the packaged ``worker --version --json``
prints (native/src/core/identity.cpp; its schema is ``records.identity``'s, since a
record names the worker it ran too). Each goes through ``patchctl.untrusted``
against its schema before any field is used; a document that is not of its
shape is one finding. The schemas constrain what verify reads and leave room for
fields a later writer adds.
"""

from __future__ import annotations

from typing import Any

from patchctl.model import schemas
from patchctl.records.identity import INT, LANE_SCHEMA, STACK_SCHEMA, STR, STRINGS, json_object

# What `worker --devices --json` prints in a Vulkan build (src/backend/vulkan_device.cpp).
_PHYSICAL = json_object({"name": STR, "type": STR, "api_version": STR, "driver": STR,
                         "driver_info": STR})
DEVICES_SCHEMA = json_object({
    "backend": STR,
}, loader=STR, devices={"type": "array", "items": json_object(
    {"name": STR, "description": STR},
    physical={"anyOf": [{"type": "null"}, _PHYSICAL]})})

# manifest.json, patchctl.release/1: what ``manifest`` writes.
MANIFEST_SCHEMA = json_object({
    "schema": {"const": schemas.RELEASE},
    "package": STR,
    "worker": json_object({"binary": STR, "engine_version": STR, "protocol_version": INT,
                           "build_type": STR, "certification": STR}),
    "lane": LANE_SCHEMA,
    "stack": STACK_SCHEMA,
    "upstream": json_object({
        "name": STR, "url": STR, "pin": STR, "tree": STR, "target": STR,
        "license": json_object({"file": STR, "from": STR,
                                "spdx": {"type": ["string", "null"]}}),
    }),
    "source": json_object({"commit": STR, "source_date_epoch": INT}),
    "toolchain": {"type": "object", "additionalProperties": STR},
    "configure": STRINGS,
}, backend=json_object({"name": STR}, loader=STR, headers=STR,
                       tested_on=json_object({"loader": STR, "devices": {"type": "array"}})))

# recipe.json, worker.recipe/1 (the worker's --check refuses more than this does).
RECIPE_SCHEMA = json_object({
    "schema": {"const": schemas.RECIPE},
    "protocol_version": INT, "pin": STR, "stack_fingerprint": STR, "lane": STR,
    "artifacts": {"type": "array", "items": json_object({"path": STR, "sha256": STR})},
})

# sbom.spdx.json: SPDX 2.3, the fields verify compares (patchctl.release.sbom writes it).
_CHECKSUM = json_object({"algorithm": STR, "checksumValue": STR})
SBOM_SCHEMA = json_object({
    "spdxVersion": {"const": "SPDX-2.3"},
    "packages": {"type": "array", "items": json_object({"SPDXID": STR, "name": STR},
                                                        versionInfo=STR)},
    "files": {"type": "array", "items": json_object({
        "fileName": STR, "checksums": {"type": "array", "items": _CHECKSUM}})},
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
