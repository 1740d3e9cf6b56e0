"""Rendering typed results as text, JUnit XML and GitHub annotations.

JSON is ``result.to_dict()``; everything a human reads is built here.
"""

from __future__ import annotations

from patchctl.model.finding import ERROR
from patchctl.model.fingerprint import short
from patchctl.model.grades import EXACT, OFFSET
from patchctl.textout import count, table
from patchctl.untrusted import printable
from patchctl.verify.engine import VerifyReport


def verify_text(report: VerifyReport) -> str:
    pin = report.pin
    parts = f" in {report.parts} parts at once" if report.parts > 1 else ""
    out = [
        f"verify {printable(pin.name)} @ {pin.commit[:12]} (tree {report.pin_tree[:12]}): "
        f"{count(len(report.patches), 'patch')}, {report.mode}{parts}, "
        f"{count(report.git_calls, 'git call')}, "
        f"{report.seconds:.3f} s"
    ]
    rows = []
    details: dict[int, list[str]] = {}
    for p in report.patches:
        status = (p.upstream_status or "-").split(" ", 1)[0]
        rows.append([str(p.index), p.name, p.grade, p.concern or "-", status,
                     f"+{p.added} -{p.removed}"])
        lines = details.setdefault(p.index, [])
        if p.offsets:
            lines.append("offsets: " + ", ".join(
                f"{o.file} hunk #{o.hunk} {o.offset:+d}" for o in p.offsets))
        if p.failure:
            where = f" ({p.name}:{p.failure.line})" if p.failure.line else ""
            lines.append(f"{p.grade}: {p.failure.reason}{where}")
        for f in p.findings:
            where = f" ({p.name}:{f.line})" if f.line else ""
            lines.append(f"{f.severity}: {f.message}{where}")
    grid = table(rows, ["#", "patch", "grade", "concern", "status", "size"])
    out.append(grid[0])
    for p, line in zip(report.patches, grid[1:], strict=True):
        out.append(line)
        out += [f"     {d}" for d in details[p.index]]
    if report.fingerprint:
        out.append(f"lock: {report.lock} (fingerprint {short(report.fingerprint)})")
    if report.reversed_tree == report.pin_tree:
        out.append("reverse: the reversed stack restores the pin's tree exactly")
    for f in report.findings:
        out.append(f"{f.severity}: {f.message}")
    if report.ok:
        out.append("result: OK")
    else:
        problems = sum(not p.ok(report.strict) for p in report.patches) + sum(
            f.severity == ERROR or report.strict for f in report.findings)
        out.append(f"result: FAILED ({count(problems, 'problem')}"
                   f"{', strict' if report.strict else ''})")
    return "\n".join(out) + "\n"


def verify_github(report: VerifyReport) -> str:
    """GitHub Actions workflow commands: one ::error/::warning per finding."""
    out = []
    for p in report.patches:
        rel = _relpath(p.path, report.stack)
        if p.failure:
            line = f",line={p.failure.line}" if p.failure.line else ""
            out.append(f"::error file={rel}{line},title={p.grade}::{_esc(p.failure.reason)}")
        if p.grade == OFFSET and report.strict:
            out.append(f"::error file={rel},title=offset::applies only with offsets (--strict)")
        for f in p.findings:
            level = "error" if f.severity == ERROR or report.strict else "warning"
            line = f",line={f.line}" if f.line else ""
            out.append(f"::{level} file={rel}{line},title={f.code}::{_esc(f.message)}")
    for f in report.findings:
        out.append(f"::error title={f.code}::{_esc(f.message)}")
    out.append(verify_text(report).rstrip("\n").splitlines()[-1])
    return "\n".join(out) + "\n"


def verify_junit(report: VerifyReport) -> str:
    from xml.etree import ElementTree as ET

    suite = ET.Element("testsuite", name="patchctl.verify", tests=str(len(report.patches) + 1),
                       time=f"{report.seconds:.4f}")
    failures = 0
    for p in report.patches:
        case = ET.SubElement(suite, "testcase", classname="stack", name=p.name)
        if not p.ok(report.strict):
            failures += 1
            reasons = [p.failure.reason] if p.failure else []
            reasons += [f"{f.severity}: {f.message}" for f in p.findings]
            if p.grade not in (EXACT,) and report.strict and not reasons:
                reasons.append(f"grade {p.grade} under --strict")
            el = ET.SubElement(case, "failure", message=reasons[0] if reasons else p.grade,
                               type=p.grade)
            el.text = "\n".join(reasons)
        elif p.findings:
            ET.SubElement(case, "system-out").text = "\n".join(f.message for f in p.findings)
    stack_case = ET.SubElement(suite, "testcase", classname="stack", name="lock-and-reverse")
    errs = [f.message for f in report.findings if f.severity == ERROR or report.strict]
    if errs:
        failures += 1
        ET.SubElement(stack_case, "failure", message=errs[0], type="stack").text = "\n".join(errs)
    suite.set("failures", str(failures))
    ET.indent(suite)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suite, "unicode") + "\n"


def _relpath(path: str, stack_root: str) -> str:
    from pathlib import Path

    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(Path(path).relative_to(Path(stack_root).parent)) if stack_root else path


def _esc(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
