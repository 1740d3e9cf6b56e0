"""The worker's identity: what ``worker --version --json`` prints
(native/src/core/identity.cpp, identity_json), and the schema it is read against.

A record of a run names the worker that ran (``evidence.worker_identity``), and a worker
package embeds and checks the same document (``release``): the schema lives here, below
both. The small vocabulary the schemas are written in (``STR``, ``INT``, ``STRINGS``,
``json_object``) is ``release.documents``' too.
"""

from __future__ import annotations

from typing import Any

STR: dict[str, Any] = {"type": "string"}
INT: dict[str, Any] = {"type": "integer"}
STRINGS: dict[str, Any] = {"type": "array", "items": STR}


def json_object(required: dict[str, Any], **optional: Any) -> dict[str, Any]:
    """An object that must have ``required``'s properties and may have ``optional``'s."""
    return {"type": "object", "required": sorted(required), "properties": {**required, **optional}}


# `patchctl fingerprint --json`'s object, as the worker embeds it.
STACK_SCHEMA = json_object(
    {
        "algorithm": STR,
        "name": STR,
        "pin": STR,
        "fingerprint": STR,
        "short": STR,
        "patches": {
            "type": "array",
            "items": json_object({"file": STR, "strip": INT, "digest": STR}),
        },
    }
)
LANE_SCHEMA = json_object(
    {"name": STR, "arch": STR, "cpu_features": STRINGS, "release": {"type": "boolean"}}
)
# The compute backend the worker links: cpu, or vulkan with the loader and headers
# versions its configure found (a worker from before backends has none: cpu).
BACKEND_SCHEMA = json_object({"name": STR}, loader=STR, headers=STR)
# `worker --version --json` (native/src/core/identity.cpp, identity_json).
IDENTITY_SCHEMA = json_object(
    {
        "protocol_version": INT,
        "engine_version": STR,
        "stack": STACK_SCHEMA,
        "compiler": json_object({"id": STR, "version": STR}),
        "cmake_version": STR,
        "build_type": STR,
        "certification": STR,
        "upstream_build": {
            "anyOf": [{"type": "null"}, json_object({"dir": STR, "target": STR, "tree": STR})]
        },
        "lane": LANE_SCHEMA,
    },
    libraries={
        "type": "array",
        "items": json_object({"name": STR, "version": STR, "license": STR, "linkage": STR}),
    },
    backend=BACKEND_SCHEMA,
)
