"""The upstream's own code standards, checked on the lines a patch adds. No git here.

Only what a policy file states is checked, and each finding cites the line stating
it (``policy.find_rules`` finds them): comments longer than the stated number of
lines, a sentence split across comment lines, the size of the change (against a
number only when the file states one). A public struct whose fields a patch adds,
removes or reorders is an ABI change for every binding and is flagged whether or not
a rule says so. What cannot be checked mechanically (reuse existing infrastructure,
keep it simple) is listed as a manual check with its line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from patchctl.model.patchfile import Patch
from patchctl.outreach import policy
from patchctl.outreach.facts import (
    AddedLine,
    LintFinding,
    added_lines,
    container_at,
    is_public_header,
    strip_comments,
)

C_FILES = (".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx", ".cu", ".m", ".mm")
# a semicolon joins two clauses of one sentence: a line ending in one and going on in
# lowercase splits that sentence as much as a line ending in a word
_SENTENCE_END = (".", "!", "?", ":")
_OPENERS = "([{\"'`"
_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
_FIELD = re.compile(r"^(?!return\b|typedef\b|using\b|static\b|friend\b)[A-Za-z_][\w\s\*&:<>,]*?"
                    r"\b(\w+)\s*(\[[^\]]*\])?\s*(=[^;]*)?;$")
_CONTAINER = re.compile(r"^\s*(?:typedef\s+)?(struct|union)\s+(\w+)[^;]*$")


@dataclass(frozen=True)
class ManualCheck:
    rule: str  # file:line
    text: str  # the rule as the file states it
    fact: str  # what patchctl can say about the patch for it


def _cite(rule: policy.Rule, prefer: str = "") -> str:
    """The rule's first line, or its first line matching ``prefer``."""
    c = next((c for c in rule.citations if prefer and re.search(prefer, c.text, re.I)),
             rule.citations[0])
    return f"{c.file}:{c.line}"


def comment_limit(rule: policy.Rule) -> int | None:
    """The most lines a comment may have, as the rule's own line states it (``1-2 lines``)."""
    for c in rule.citations:
        if m := re.search(r"\b(\d+)\s*-\s*(\d+) lines?\b", c.text):
            return int(m.group(2))
        if m := re.search(r"\b(one|two|three|\d+)(?: or (two|three|\d+))? lines?\b", c.text,
                          re.I):
            last = (m.group(2) or m.group(1)).lower()
            return int(last) if last.isdigit() else _WORDS.get(last)
    return None


def size_limit(rule: policy.Rule) -> int | None:
    """A number of lines the rule's line states as the limit of a change, if any."""
    for c in rule.citations:
        if m := re.search(r"\b(\d[\d,]*)\s+(?:changed |added )?lines\b", c.text):
            return int(m.group(1).replace(",", ""))
    return None


@dataclass(frozen=True)
class _Comment:
    start: int  # new-file line of its first line
    lines: list[str]  # the comment's text per line, without // or /* */ or a leading *


def _comments(added: list[AddedLine]) -> list[_Comment]:
    """Whole-line comments the patch adds: runs of ``//`` lines, and ``/* */`` blocks, each
    made only of added lines that follow one another."""
    out: list[_Comment] = []
    run: list[AddedLine] = []
    block: list[AddedLine] | None = None

    def flush() -> None:
        if run:
            out.append(_Comment(run[0].line, [a.text.strip()[2:].strip() for a in run]))
            run.clear()

    previous = None
    for a in added:
        s = a.text.strip()
        if previous is not None and a.line != previous + 1:
            flush()
            block = None
        previous = a.line
        if block is not None:
            block.append(a)
            if "*/" in s:
                texts = [x.text.strip().removeprefix("/*").removesuffix("*/").strip()
                         .removeprefix("*").strip() for x in block]
                out.append(_Comment(block[0].line, [t for t in texts if t] or [""]))
                block = None
            continue
        if s.startswith("//"):
            run.append(a)
            continue
        flush()
        if s.startswith("/*") and "*/" not in s:
            block = [a]
    flush()
    return out


def lint(patch: Patch, rules: list[policy.Rule], base_files: dict[str, str | None]
         ) -> list[LintFinding]:
    """Findings against the stated code standards, and ABI changes of public structs."""
    by_id = {r.id: r for r in rules}
    out: list[LintFinding] = []
    length = by_id.get("comment-length")
    limit = comment_limit(length) if length else None
    split = by_id.get("no-mid-sentence-split")
    for f in patch.files:
        if f.target is None or PurePosixPath(f.path).suffix not in C_FILES:
            continue
        for c in _comments(added_lines(f)):
            if length and limit and len(c.lines) > limit:
                out.append(LintFinding(
                    "comment-length", f.path, c.start,
                    f"adds a comment of {len(c.lines)} lines (the rule: {limit} at most): "
                    f"{_short(' '.join(c.lines))}", _cite(length)))
            if split:
                for i in range(len(c.lines) - 1):
                    this, after = c.lines[i], c.lines[i + 1]
                    # "(the latter ...)" or "`name` ..." on the next line goes on with it too
                    goes_on = after.lstrip(_OPENERS)[:1].islower()
                    if this and not this.endswith(_SENTENCE_END) and goes_on:
                        out.append(LintFinding(
                            "mid-sentence-split", f.path, c.start + i,
                            f"a sentence continues on the next line: {_short(this, 60)} / "
                            f"{_short(after, 40)}", _cite(split, "mid-sentence")))
    out += abi_changes(patch, base_files, by_id.get("api-bar"))
    return out


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def abi_changes(patch: Patch, base_files: dict[str, str | None],
                api_rule: policy.Rule | None) -> list[LintFinding]:
    """Hunks of a public header that add, remove or reorder fields of a struct or union:
    the layout every binding mirrors. Fields are read from the hunk's lines; the struct is
    the one open at each line (from the hunk's own lines, and above its first line from the
    header at the base, ``base_files``)."""
    out = []
    for f in patch.files:
        if f.target is None or not is_public_header(f.path):
            continue
        base = (base_files.get(f.path) or "").splitlines()
        for h in f.hunks:
            changed: dict[str, tuple[list[str], list[str], int]] = {}
            outer = container_at(base, h.source_start) if f.source else None
            stack: list[str | None] = \
                [outer[1] if outer[0] in ("struct", "union") else None] if outer else []
            line = h.target_start
            for raw in h.lines:
                sign, text = raw[:1], raw[1:]
                code = strip_comments(text).strip()
                if sign in (" ", "+", "-") and code:
                    if stack and stack[-1] and sign in "+-" and "(" not in code and \
                            (m := _FIELD.match(code)):
                        added, removed, _ = changed.setdefault(stack[-1], ([], [], line))
                        (added if sign == "+" else removed).append(m.group(1))
                    opener = _CONTAINER.match(code.split("{")[0]) if "{" in code else None
                    stack += [opener.group(2) if opener else None] * code.count("{")
                    for _ in range(code.count("}")):
                        if stack:
                            stack.pop()
                if sign in (" ", "+"):
                    line += 1
            for name, (added, removed, first) in sorted(changed.items()):
                out.append(_abi_finding(f.path, first, name, added, removed, api_rule))
    return out


def _abi_finding(path: str, line: int, name: str, added: list[str], removed: list[str],
                 rule: policy.Rule | None) -> LintFinding:
    moved = sorted(set(added) & set(removed))
    parts = [f"adds {', '.join(a for a in added if a not in moved)}"
             if set(added) - set(moved) else "",
             f"removes {', '.join(r for r in removed if r not in moved)}"
             if set(removed) - set(moved) else "",
             f"moves or retypes {', '.join(moved)}" if moved else ""]
    what = "; ".join(p for p in parts if p)
    return LintFinding("abi", path, line,
                       f"ABI: struct {name} layout changes ({what}): bindings that mirror it "
                       "(Python, Rust, Go, ...) break until updated",
                       _cite(rule) if rule else "patchctl (public struct layout)")


def manual_checks(patch: Patch, rules: list[policy.Rule]) -> list[ManualCheck]:
    """The stated standards that cannot be checked mechanically, with what is known."""
    by_id = {r.id: r for r in rules}
    added = sum(1 for f in patch.files for h in f.hunks for ln in h.lines if ln[:1] == "+")
    removed = sum(1 for f in patch.files for h in f.hunks for ln in h.lines if ln[:1] == "-")
    size = f"the patch adds {added} and removes {removed} lines in {len(patch.files)} files"
    out = []
    for rule_id, fact in (
            ("reuse-infrastructure", "not checkable mechanically: name the existing "
             "mechanism each new one could have used, and why it does not suffice"),
            ("keep-simple", f"not checkable mechanically; {size}"),
            ("large-change", size)):
        rule = by_id.get(rule_id)
        if rule is None:
            continue
        if rule_id == "large-change" and (limit := size_limit(rule)) is not None:
            fact = f"{size}; the rule's limit is {limit} lines" + \
                (": OVER IT" if added + removed > limit else "")
        elif rule_id == "large-change":
            fact += "; the rule states no number"
        for c in rule.citations:
            out.append(ManualCheck(f"{c.file}:{c.line}", c.text, fact))
    return out
