"""The burden report as text (``--json`` is ``report.to_dict()``), and the JSON Schema of
that document, which the canary's summary reads back (untrusted: from a file a user names)."""

from __future__ import annotations

import re
from typing import Any

from patchctl import gitrepo
from patchctl.burden.engine import BurdenReport, HunkBurden
from patchctl.model import schemas
from patchctl.textout import count, table
from patchctl.untrusted import printable

_CONTROL = {"pattern": "[\\x00-\\x1f\\x7f]"}
_SHA = {"type": "string", "pattern": "^[0-9a-f]{40}(?:[0-9a-f]{24})?$"}
_COUNT = {"type": "integer", "minimum": 0}
_LINE = {"type": "string", "minLength": 1, "not": _CONTROL}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["schema", "days", "total", "patches", "commits", "pin"],
    "properties": {
        "schema": {"type": "string", "pattern": "^" + re.escape(schemas.family(schemas.BURDEN))},
        "days": _COUNT, "total": _COUNT, "files": _COUNT, "pin_date": {"type": "string"},
        "since": {"type": "string"},
        "pin": {"type": "object", "required": ["commit"], "properties": {"commit": _SHA}},
        "test_paths": {"type": "array", "items": {"type": "string"}},
        "patches": {"type": "array", "items": {
            "type": "object",
            "required": ["index", "name", "files", "library", "tests", "commits"],
            "properties": {
                "index": _COUNT, "name": _LINE, "files": _COUNT, "lines": _COUNT,
                "library": _COUNT, "tests": _COUNT,
                "library_added": _COUNT, "library_removed": _COUNT,
                "test_added": _COUNT, "test_removed": _COUNT,
                "commits": {"type": "array", "items": _SHA},
                "skipped": {"type": "string", "not": _CONTROL}}}},
        "commits": {"type": "array", "items": {
            "type": "object", "required": ["id", "subject", "time"],
            "properties": {"id": _SHA, "subject": {"type": "string", "not": _CONTROL},
                           "time": {"type": "integer"}}}}}}


def burden_text(report: BurdenReport, *, commits: bool = False) -> str:
    pin = report.pin
    out = [f"burden {printable(pin.name)} @ {pin.commit[:12]} ({report.pin_date[:10]}): "
           f"upstream commits of the {count(report.days, 'day')} before the pin on the lines "
           f"each patch stands on; {count(report.git_calls, 'git call')}, "
           f"{report.seconds:.3f} s"
           + (f", {report.cached} of {len(report.patches)} from the cache"
              if report.cached else "")]
    rows = [[str(p.index), p.name, str(p.files), f"{p.library} (+{p.library_added} "
             f"-{p.library_removed})", f"{p.tests} (+{p.test_added} -{p.test_removed})",
             "not counted" if p.skipped else str(len(p.commits))] for p in report.patches]
    grid = table(rows, ["#", "patch", "files", "library ±", "tests ±",
                        f"commits ({report.days} d)"])
    out.append(grid[0])
    for p, line in zip(report.patches, grid[1:], strict=True):
        out.append(line)
        if commits:
            for c in p.commits:
                found = report.commit(c)
                out.append(f"     {c[:12]} {printable(found.subject) if found else ''}".rstrip())
    skipped = [p for p in report.patches if p.skipped]
    for p in skipped:
        out.append(f"{p.name}: not counted: {printable(p.skipped)}")
    library = sum(p.library for p in report.patches)
    tests = sum(p.tests for p in report.patches)
    counted = f"{len(report.patches) - len(skipped)} of " if skipped else ""
    out.append(f"stack: {count(report.total, 'distinct upstream commit')} in "
               f"{count(report.days, 'day')} (since {report.since[:10]}) on the lines of "
               f"{counted}{count(len(report.patches), 'patch')}; "
               f"{count(report.files, 'distinct file')}, "
               f"library ±{library}, tests ±{tests} (tests: "
               f"{', '.join(printable(t) for t in report.test_paths) or 'none'})")
    return "\n".join(out) + "\n"


def hunks_text(hunks: list[HunkBurden], commits: dict[str, gitrepo.BlamedCommit]) -> str:
    """One line per hunk that stands on a commit of the window: where a patch's burden sits
    (patch, file, the hunk's first pre-image line, its `@@` line in the patch file)."""
    out = []
    for h in hunks:
        if h.commits:
            named = ", ".join(f"{c[:12]} {printable(commits[c].subject)[:48]}"
                              for c in h.commits)
            out.append(f"  {h.patch}  {printable(h.path)}:{h.source_start} "
                       f"(patch line {h.line}): {len(h.commits)}: {named}")
    quiet = sum(1 for h in hunks if not h.commits)
    out.append(f"{count(len(hunks) - quiet, 'hunk')} of {len(hunks)} stand on commits of the "
               f"window; {quiet} on older lines")
    return "\n".join(out) + "\n"
