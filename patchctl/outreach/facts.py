"""Facts about one patch, read from the patch itself and the stack's files. No git here.

Public API from the diff, the diffstat, machine-assistance trailers, policy
lint of the lines as they would be submitted, evidence records and the
concern's outreach data. Text from patches is kept verbatim as data.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from patchctl.globs import glob_match, valid_globs
from patchctl.model.patchfile import FileDiff, Patch
from patchctl.outreach import ctest, perf, policy

# re-exported: callers name them from here
from patchctl.outreach.data import Objection as Objection
from patchctl.outreach.data import OutreachData as OutreachData
from patchctl.outreach.data import PriorArt as PriorArt
from patchctl.outreach.data import Question as Question
from patchctl.outreach.data import UpstreamCheck as UpstreamCheck
from patchctl.outreach.data import load_outreach as load_outreach
from patchctl.records.evidence import READABLE_SCHEMAS

if TYPE_CHECKING:
    from patchctl.burden.engine import BurdenReport

# -- what carrying it costs ---------------------------------------------------------------


@dataclass(frozen=True)
class Churn:
    """``patchctl burden`` for one patch: the upstream commits of the ``days`` before the pin
    that changed the lines it stands on. The patch upstream churn hits most is the one that
    saves the most carrying once it is upstream."""

    days: int
    commits: list[dict[str, str]]  # {"id", "subject"}, newest first
    files: int
    library: int  # changed lines outside the upstream's test paths
    tests: int
    stack_total: int  # distinct commits over the whole stack


def churn(report: BurdenReport, index: int) -> Churn:
    """Patch ``index`` (1-based, series order) of a burden report."""
    p = report.patches[index - 1]
    subjects = {c.id: c.subject for c in report.commits}
    return Churn(report.days, [{"id": c, "subject": subjects.get(c, "")} for c in p.commits],
                 p.files, p.library, p.tests, report.total)


# -- the diff ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FileStat:
    path: str
    added: int
    removed: int
    status: str  # added | modified | deleted


def diffstat(patch: Patch) -> list[FileStat]:
    """Per-file counts from the patch's parsed diff (patchfile reads it with unidiff)."""
    stats = []
    for f in patch.files:
        lines = [ln[:1] for h in f.hunks for ln in h.lines]
        status = "added" if f.source is None else "deleted" if f.target is None else "modified"
        stats.append(FileStat(f.path if f.target else (f.source or f.path), lines.count("+"),
                              lines.count("-"), status))
    return stats


@dataclass(frozen=True)
class AddedLine:
    path: str
    line: int  # line number in the new file
    text: str  # without the leading "+"


def added_lines(f: FileDiff) -> list[AddedLine]:
    out = []
    for h in f.hunks:
        number = h.target_start
        for ln in h.lines:
            if ln[:1] == "+":
                out.append(AddedLine(f.path, number, ln[1:]))
                number += 1
            elif ln[:1] == " ":
                number += 1
    return out


def is_public_header(path: str) -> bool:
    """A header under an ``include/`` directory: the convention for a C/C++ public API."""
    p = PurePosixPath(path)
    return p.suffix in (".h", ".hpp", ".hh", ".hxx") and "include" in p.parts[:-1]


def is_test_path(path: str) -> bool:
    p = PurePosixPath(path)
    return any(part in ("test", "tests", "testing") for part in p.parts[:-1]) or \
        p.name.startswith("test") or "_test." in p.name or "-test." in p.name


@dataclass(frozen=True)
class ApiItem:
    kind: str  # function | field | macro | type | enum-value
    name: str
    signature: str  # the declaration as the diff adds it
    file: str
    line: int
    container: str | None = None  # the struct/enum a field or value is added to


_COMMENT = re.compile(r"//.*$|/\*.*?\*/")
def strip_comments(code: str) -> str:
    """A C/C++ line without its ``//`` and one-line ``/* */`` comments."""
    return _COMMENT.sub("", code)


_FUNC = re.compile(r"^(?!return\b)[A-Za-z_][\w\s\*&:<>,]*?\b(\w+)\s*\((.*)\)\s*(const\s*)?;$")
_FIELD = re.compile(r"^(?!return\b)[A-Za-z_][\w\s\*&:<>,]*?\b(\w+)\s*(\[[^\]]*\])?\s*"
                    r"(=[^;]*)?;$")
_MACRO = re.compile(r"^#\s*define\s+(\w+)")
_TYPE = re.compile(r"^(?:typedef\b.*\b(\w+)\s*;|(?:struct|enum|class)\s+(\w+)\s*[{;])")
_ENUM_VALUE = re.compile(r"^([A-Z][A-Z0-9_]+)\s*(=\s*[^,]+)?,?$")
_CONTAINER = re.compile(r"^\s*(?:typedef\s+)?(struct|enum|class|union)\s+(\w+)[^;]*$")


def public_api(patch: Patch, base_files: dict[str, str | None]) -> list[ApiItem]:
    """Declarations the patch adds to public headers, with their exact text.

    A field or enum value is attributed to the struct/enum that encloses its
    hunk in the header at the base (``base_files``), found by scanning up from
    the hunk's first line.
    """
    items: list[ApiItem] = []
    for f in patch.files:
        if f.target is None or not is_public_header(f.path):
            continue
        base = (base_files.get(f.path) or "").splitlines()
        pending: list[AddedLine] = []
        for added in added_lines(f):
            code = strip_comments(added.text).strip()
            if not code:
                continue
            if pending or ("(" in code and not code.endswith((";", "{", "}"))):
                pending.append(AddedLine(added.path, added.line, code))
                if not code.endswith(";"):
                    continue
                code = " ".join(p.text for p in pending)
                added = pending[0]
                pending = []
            item = _classify(code, added, base)
            if item and not (item.kind == "macro" and _defined(base, item.name)):
                items.append(item)
    return items


def changed_macros(patch: Patch, base_files: dict[str, str | None]) -> list[ApiItem]:
    """Macros of public headers the base defines already and the patch redefines (a version
    bumped): changed, not added; ``signature`` is the new definition, then the old one."""
    out = []
    for f in patch.files:
        if f.target is None or not is_public_header(f.path):
            continue
        base = (base_files.get(f.path) or "").splitlines()
        for added in added_lines(f):
            code = strip_comments(added.text).strip()
            if (m := _MACRO.match(code)) and (old := _defined(base, m.group(1))):
                out.append(ApiItem("macro", m.group(1), f"{code} (was: {old})", added.path,
                                   added.line))
    return out


def _defined(base: list[str], name: str) -> str | None:
    """The base's ``#define NAME ...`` line, without its comment, or None."""
    for text in base:
        code = strip_comments(text).strip()
        if (m := _MACRO.match(code)) and m.group(1) == name:
            return " ".join(code.split())
    return None


def _classify(code: str, added: AddedLine, base: list[str]) -> ApiItem | None:
    if m := _MACRO.match(code):
        return ApiItem("macro", m.group(1), code, added.path, added.line)
    if m := _TYPE.match(code):
        return ApiItem("type", m.group(1) or m.group(2), code, added.path, added.line)
    if (m := _FUNC.match(code)) and not code.startswith(("if", "for", "while", "switch")):
        return ApiItem("function", m.group(1), code, added.path, added.line)
    container = container_at(base, added.line)
    if (m := _FIELD.match(code)) and container and container[0] in ("struct", "union", "class"):
        return ApiItem("field", m.group(1), code, added.path, added.line, container[1])
    if (m := _ENUM_VALUE.match(code)) and container and container[0] == "enum":
        return ApiItem("enum-value", m.group(1), code, added.path, added.line, container[1])
    return None


def container_at(base: list[str], line: int) -> tuple[str, str] | None:
    """The innermost struct/enum open at ``line`` in the base header (1-based, new-file line
    numbers are close enough: the scan only needs the enclosing block)."""
    depth = 0
    for text in reversed(base[: max(0, min(line - 1, len(base)))]):
        code = strip_comments(text)
        depth += code.count("}") - code.count("{")
        if depth < 0:
            m = _CONTAINER.match(code.split("{")[0])
            return (m.group(1), m.group(2)) if m else None
    return None


# -- machine assistance ------------------------------------------------------------------

@dataclass(frozen=True)
class Assistance:
    tool: str
    files: list[str]  # the patch's files the trailer covers
    trailer: str  # the trailer as written


def assistance(patch: Patch) -> tuple[list[Assistance], list[str]]:
    """``Assisted-by: TOOL [glob ...]`` trailers (no globs: every file), and the names in
    any ``Co-authored-by:`` (upstreams that use Assisted-by ask that a tool is never a
    co-author; the person judges)."""
    paths = [f.path for f in patch.files]
    out = []
    for value in patch.metadata.get("Assisted-by", []):
        tool, _, rest = value.partition("[")
        globs = rest.rstrip("]").split() if rest else []
        usable = valid_globs(globs)  # a broken glob matches nothing
        files = [p for p in paths if not globs or any(glob_match(p, g) for g in usable)]
        out.append(Assistance(tool.strip(), files, f"Assisted-by: {value}"))
    # names only: e-mail addresses stay out of briefs
    coauthors = [v.split("<", 1)[0].strip() or v for v in patch.metadata.get("Co-authored-by", [])]
    return out, coauthors


# -- policy lint ----------------------------------------------------------------------

@dataclass(frozen=True)
class LintFinding:
    code: str
    file: str
    line: int | None
    message: str
    rule: str  # what asks for it: "AGENTS.md:73", ".editorconfig:10", "Scope trailer"


def policy_lint(patch: Patch, rules: list[policy.Rule], editorconfig: str | None,
                api: list[ApiItem]) -> list[LintFinding]:
    """Checks that can be made mechanically on the lines the patch adds."""
    cite = {r.id: f"{r.citations[0].file}:{r.citations[0].line}" for r in rules}
    out: list[LintFinding] = []
    for f in patch.files:
        if f.target is None:
            continue
        props = policy.editorconfig_for(editorconfig, f.path) if editorconfig else {}
        trim = props.get("trim_trailing_whitespace")
        indent = props.get("indent_style")
        for added in added_lines(f):
            text = added.text
            if "ascii" in cite and not text.isascii():
                chars = "".join(dict.fromkeys(c for c in text if not c.isascii()))
                names = ", ".join(f"U+{ord(c):04X}" for c in chars)
                out.append(LintFinding("non-ascii", f.path, added.line,
                                       f"non-ASCII character(s) {names}", cite["ascii"]))
            if text != text.rstrip(" \t"):
                if trim and trim.value == "true":
                    out.append(LintFinding("trailing-whitespace", f.path, added.line,
                                           "trailing whitespace", f".editorconfig:{trim.line}"))
                elif "trailing-whitespace" in cite:
                    out.append(LintFinding("trailing-whitespace", f.path, added.line,
                                           "trailing whitespace", cite["trailing-whitespace"]))
            lead = text[: len(text) - len(text.lstrip(" \t"))]
            if indent and indent.value == "space" and "\t" in lead:
                out.append(LintFinding("indent", f.path, added.line,
                                       "tab in indentation (indent_style = space)",
                                       f".editorconfig:{indent.line}"))
            elif indent and indent.value == "tab" and lead.startswith(" "):
                out.append(LintFinding("indent", f.path, added.line,
                                       "spaces in indentation (indent_style = tab)",
                                       f".editorconfig:{indent.line}"))
        final = props.get("insert_final_newline")
        if final and final.value == "true" and f.hunks and \
                any(ln.startswith("\\") and i > 0 and h.lines[i - 1][:1] == "+"
                    for h in f.hunks for i, ln in enumerate(h.lines)):
            out.append(LintFinding("final-newline", f.path, None, "no newline at end of file",
                                   f".editorconfig:{final.line}"))
    scope = valid_globs(patch.scope)  # a broken glob matches nothing; verify names it
    for f in patch.files:
        for path in f.paths:
            if patch.scope and not any(glob_match(path, g) for g in scope):
                out.append(LintFinding("scope", path, None,
                                       f"outside the patch's Scope ({' '.join(patch.scope)})",
                                       "Scope trailer"))
    if api and not any(is_test_path(p) for f in patch.files for p in f.paths):
        names = ", ".join(sorted({a.name for a in api}))
        out.append(LintFinding("no-test", api[0].file, None,
                               f"adds public API ({names}) but touches no test file",
                               cite.get("api-bar", "patchctl")))
    return sorted(out, key=lambda x: (x.file, x.line or 0, x.code))


# -- evidence -----------------------------------------------------------------------

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


def stack_at(pin: str, patches: Sequence[Patch], index: int) -> StackAt:
    """``StackAt`` for patch ``index`` (1-based) of ``patches``."""
    from patchctl.model.fingerprint import fingerprint

    return StackAt(pin, index, len(patches), {
        fingerprint(pin, patches[:k]): k for k in range(index, len(patches) + 1)})


def record_match(stack: dict[str, Any], patch: Patch, at: StackAt) -> tuple[bool, str]:
    """Whether a record's ``stack`` identity covers ``patch`` as it is now, and how it was
    decided: by the per-patch digests the record lists (records since issue 24), else by
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
            run.checks = [m.group(1).strip() for ln in text.splitlines()
                          if (m := _CHECK_LINE.match(ln.strip()))][:60]
            run.totals = log_totals(text)
            run.compare = ctest.compare(text, at.pin, patch.subject)
        if current and isinstance(data.get("metrics"), dict):
            run.perf = perf.lines(data["metrics"], at.position)
        run.at = _made_at(stack, at) if current else ""
        backend = data.get("backend")
        if isinstance(backend, dict) and isinstance(backend.get("name"), str):
            run.backend = backend["name"]
        runs.append(run)
    return runs


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
