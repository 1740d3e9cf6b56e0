"""The stack's evidence records as facts about one patch: which records run it, at which
prefix of the stack they were made, and what their logs say (test lines, totals, ctest per
prefix, llama-bench and perplexity). No git here."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchctl.model.patchfile import Patch
from patchctl.outreach import ctest, perf
from patchctl.outreach.data import OutreachData
from patchctl.records.evidence import READABLE_SCHEMAS
from patchctl.textout import count


@dataclass
class EvidenceRun:
    name: str
    file: str  # relative to the project
    command: list[str]
    exit_code: int
    expect: str
    as_expected: bool
    seconds: float
    started: str
    pin: str | None
    fingerprint: str | None
    current: bool  # recorded with this patch as it is now (its digest), see ``match``
    outcome: str | None = None  # reproduce: fails-before/passes-after, ...
    steps: list[str] = field(default_factory=list)  # reproduce: each side's result, timings
    checks: list[str] = field(default_factory=list)  # test lines from the log
    totals: list[str] = field(default_factory=list)  # the log's own result totals lines
    backend: str | None = None  # the record's backend name (cpu, cuda, ...)
    match: str = ""  # how the record was matched to this patch's digest, in words
    cwd: str = ""  # where the command ran, as recorded
    # upstream's ctest at the pin and at each prefix, compared (ctest.py), if the log has it
    compare: ctest.Comparison | None = None
    perf: list[str] = field(default_factory=list)  # llama-bench/perplexity per prefix (perf.py)
    at: str = ""  # the stack the record was made at, when it is not this patch's own prefix


_NUMBER = re.compile(r"^\d{4}-")  # a patch file's series number
_CHECK_LINE = re.compile(r"^(?:\d+: )?((?:ok|not ok|FAIL|PASS|PASSED|FAILED)\b.*)$")
# a test's own totals: "layer ranges: 127 supported, 5 rejected, 0 failed, 14 not synthesized"
_TOTALS = re.compile(r"^(?:\d+: )?([A-Za-z][\w ./()-]{0,40}: \d+ [A-Za-z][\w -]*"
                     r"(?:, \d+ [A-Za-z][\w -]*)+)$")
# a runner's summary: ctest's "100% tests passed, 0 tests failed out of 2", pytest's
# "==== 31 passed, 1 deselected in 74.75s ===="
_SUMMARY = re.compile(r"^(?:\d+: )?(\d+% tests passed(?:, \d+ tests? failed)? out of \d+)$|"
                      r"^=+ (\d+ [a-z]+(?:, \d+ [a-z]+)*) in [\d.]+s")


@dataclass(frozen=True)
class StackAt:
    """What a record is matched against: the pin, and the fingerprint of each prefix of the
    stack that holds the patch as it is now (``prefixes``: fingerprint -> patch count)."""
    pin: str
    position: int  # the patch's place in the series, 1-based
    size: int  # patches in the series
    prefixes: dict[str, int]
    cmake: str = ""  # upstream's tests/CMakeLists.txt at the pin: what a ctest log's tests need


def stack_at(pin: str, patches: Sequence[Patch], index: int, cmake: str = "") -> StackAt:
    """``StackAt`` for patch ``index`` (1-based) of ``patches``."""
    from patchctl.model.fingerprint import fingerprint

    return StackAt(pin, index, len(patches), {
        fingerprint(pin, patches[:k]): k for k in range(index, len(patches) + 1)}, cmake)


def record_match(stack: dict[str, Any], patch: Patch, at: StackAt) -> tuple[bool, str]:
    """Whether a record's ``stack`` identity covers ``patch`` as it is now, and how it was
    decided: by the per-patch digests the record lists (records that list them), else by
    its fingerprint being that of the stack's first k >= position patches (a record made
    before a later patch existed still covers the earlier ones). A record whose
    fingerprint is of no such prefix cannot be matched to this patch's digest."""
    listed = stack.get("patches")
    if isinstance(listed, list) and listed:
        if stack.get("pin") != at.pin:  # the digests do not cover the pin; a fingerprint does
            return False, f"no: recorded at pin {str(stack.get('pin'))[:12]}"
        digests = {str(p.get("digest")) for p in listed if isinstance(p, dict)}
        if patch.digest in digests:
            return True, "yes: the record lists this patch's digest"
        return False, "no: the record lists other digests for the stack's patches"
    k = at.prefixes.get(str(stack.get("fingerprint")))
    if k is None:
        return False, (f"no: fingerprint {str(stack.get('fingerprint'))[:16]} is of no stack "
                       "holding this patch as it is now")
    if k == at.size:
        return True, "yes: this stack"
    return True, (f"yes: the stack's first {k} of {at.size} patches (recorded before "
                  f"patch {k + 1} existed or changed; it holds this patch as it is now)")


def place_in(stack: dict[str, Any], name: str) -> int | None:
    """The 1-based place of the patch file ``name`` in the stack a record lists, found by
    its name without the series number (a split or a reorder renumbers the files, and
    another patch may hold its old number); None when that stack lacks it or lists none."""
    listed = stack.get("patches")
    files = [str(p.get("file", "")) for p in listed if isinstance(p, dict)] \
        if isinstance(listed, list) else []
    slug = _NUMBER.sub("", name)
    return next((i for i, file in enumerate(files, 1) if _NUMBER.sub("", file) == slug), None)


def cited_records(outreach: OutreachData | None) -> set[str]:
    """The records under evidence/ that the concern's reviewer questions cite (an entry's
    first word, ``evidence/….json``, or a log standing for the record beside it)."""
    cited: set[str] = set()
    for q in outreach.questions if outreach else []:
        for entry in q.evidence:
            word = entry.split(maxsplit=1)[0] if entry.strip() else ""
            if word.startswith("evidence/") and word.endswith((".json", ".log")):
                cited.add(word.removesuffix(".log") + ".json" if word.endswith(".log") else word)
    return cited


def evidence_for(project: Path, patch: Patch, at: StackAt,
                 cited: Collection[str] = ()) -> list[EvidenceRun]:
    """Records under evidence/ about this patch: in evidence/<concern>/, named after the
    concern, a reproduce record with an entry for the patch, or one of ``cited`` (what its
    reviewer questions cite, ``cited_records``); each matched to the patch's own digest
    (``record_match``)."""
    root = project / "evidence"
    concern = patch.concern or ""
    runs: list[EvidenceRun] = []
    if not root.is_dir():
        return runs
    for path in sorted(root.rglob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or data.get("schema") not in READABLE_SCHEMAS:
            continue
        rel = path.relative_to(project).as_posix()
        entry = None
        for p in (data.get("extra") or {}).get("reproduce", {}).get("patches", []) or []:
            if p.get("name") == patch.name or (concern and p.get("concern") == concern):
                entry = p
        related = entry is not None or rel in cited or (concern and (
            path.parent.name == concern or str(data.get("name", "")).startswith(concern)))
        if not related:
            continue
        stack: dict[str, Any] = data["stack"] if isinstance(data.get("stack"), dict) else {}
        current, match = record_match(stack, patch, at)
        run = EvidenceRun(
            name=str(data.get("name")), file=rel, command=[str(a) for a in data.get("argv", [])],
            exit_code=int(data.get("exit_code", -1)), expect=str(data.get("expect", "")),
            as_expected=bool(data.get("as_expected")), seconds=float(data.get("seconds", 0)),
            started=str(data.get("started", "")), pin=stack.get("pin"),
            fingerprint=stack.get("fingerprint"), current=current,
            outcome=entry.get("outcome") if entry else None,
            steps=_reproduce_steps(entry) if entry else [], match=match,
            cwd=str(data.get("cwd") or ""))
        log = path.parent / str(data.get("output_file", ""))
        if data.get("output_file") and log.is_file():
            text = log.read_text(encoding="utf-8", errors="replace")
            run.compare = ctest.compare(text, at.pin, patch.subject, at.cmake)
            run.checks = _once([m.group(1).strip() for ln in text.splitlines()
                                if (m := _CHECK_LINE.match(ln.strip()))],
                               len(ctest.sections(text)) if run.compare else 0)[:60]
            run.totals = log_totals(text)
        if isinstance(data.get("metrics"), dict):
            # a record of another stack keeps its figures too, labelled by the stack it
            # was made at wherever they are shown: those of this patch's place there
            place = at.position if current else place_in(stack, patch.name)
            run.perf = perf.lines(data["metrics"], place) if place else []
        run.at = _made_at(stack, at) if current else ""
        backend = data.get("backend")
        if isinstance(backend, dict) and isinstance(backend.get("name"), str):
            run.backend = backend["name"]
        runs.append(run)
    return runs


def _once(lines: list[str], builds: int) -> list[str]:
    """Each distinct test line once, in order, with how often the log has it: a log of
    ``builds`` trees (the pin and each prefix) repeats a failing build target once per tree."""
    seen: dict[str, int] = {}
    for ln in lines:
        seen[ln] = seen.get(ln, 0) + 1
    every = f", once per tree: the pin and {count(builds - 1, 'prefix')}" if builds > 1 else ""
    return [ln if n == 1 else f"{ln} ({n} times{every if n == builds else ''})"
            for ln, n in seen.items()]


def _made_at(stack: dict[str, Any], at: StackAt) -> str:
    """Where a record of this patch was made, when that is more than the patch's own prefix
    (its results are then the larger stack's, not the patch's alone): the patch count and
    the fingerprint."""
    listed = stack.get("patches")
    k = len(listed) if isinstance(listed, list) and listed else \
        at.prefixes.get(str(stack.get("fingerprint")), at.position)
    if k <= at.position:
        return ""
    whole = ", all" if k == at.size else ""
    return f"patches 1-{k}{whole}, {str(stack.get('fingerprint'))[:12]}: not this one alone"


def log_totals(text: str) -> list[str]:
    """The result totals a log states: each distinct labelled totals line that counts
    failures; else the test runner's last summary line; none when it states neither."""
    labelled: list[str] = []
    summary = None
    for ln in text.splitlines():
        ln = ln.strip()
        if (m := _TOTALS.match(ln)) and re.search(r"\bfail", ln):
            if m.group(1) not in labelled:
                labelled.append(m.group(1))
        elif m := _SUMMARY.match(ln):
            summary = m.group(1) or m.group(2)
    return labelled[:6] if labelled else [summary] if summary else []


def _reproduce_steps(entry: dict[str, Any]) -> list[str]:
    """One line per side of a reproduce record: its result, where a build failed, timings."""
    out = []
    for role in ("before", "after"):
        side = entry.get(role) or {}
        if not side:
            continue
        result = str(side.get("result"))
        if result in ("configure", "build", "test"):
            result = f"failed at the {result} step"
        where = f" ({side['failed_target']})" if side.get("failed_target") else ""
        times = ", ".join(f"{k} {v}s" for k, v in sorted((side.get("seconds") or {}).items()))
        out.append(f"{role} (pin + {side.get('prefix', '?')} patches): {result}"
                   f"{where}; {side.get('compiled', '?')} objects compiled; {times}")
    return out
