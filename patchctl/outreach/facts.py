"""Facts about one patch, read from the patch itself and the stack's files. No git here.

Public API from the diff, the diffstat, machine-assistance trailers, policy
lint of the lines as they would be submitted, evidence records and the
concern's outreach data. Text from patches is kept verbatim as data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from patchctl.globs import glob_match, valid_globs
from patchctl.model.patchfile import FileDiff, Patch
from patchctl.outreach import policy

# re-exported: callers name them from here
from patchctl.outreach.data import Objection as Objection
from patchctl.outreach.data import OutreachData as OutreachData
from patchctl.outreach.data import PriorArt as PriorArt
from patchctl.outreach.data import Question as Question
from patchctl.outreach.data import UpstreamCheck as UpstreamCheck
from patchctl.outreach.data import left_out as left_out
from patchctl.outreach.data import load_outreach as load_outreach

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
