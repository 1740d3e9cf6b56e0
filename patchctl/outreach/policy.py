"""An upstream's contribution rules, read from its own policy files. No git here.

patchctl never states a rule of its own: a rule is reported only when a line
of a policy file says it, and every rule carries the file, line and text it
came from. The catalog below only *recognizes* common rules (issue first, one
open PR, AI disclosure, ...) so the brief can group and check them; a file
that states none of them yields an empty checklist, never an invented one.

Upstream text is decoded here, once (``decode``): a file that is not UTF-8 is shown
with U+FFFD where it is not, and named as a finding.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from patchctl.globs import GlobError, compile_glob

# Where projects keep the files this module reads, in the order they are shown.
RULE_FILES = (
    "CONTRIBUTING.md", ".github/CONTRIBUTING.md", "docs/CONTRIBUTING.md",
    "AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md",
)
TEMPLATE_FILES = (
    ".github/pull_request_template.md", ".github/PULL_REQUEST_TEMPLATE.md",
    "docs/pull_request_template.md", "pull_request_template.md",
)
CODEOWNERS_FILES = ("CODEOWNERS", ".github/CODEOWNERS", "docs/CODEOWNERS")
EDITORCONFIG = ".editorconfig"
ALL_FILES = (*RULE_FILES, *TEMPLATE_FILES, *CODEOWNERS_FILES, EDITORCONFIG)

_AI = re.compile(r"\bAI\b|machine|\bLLM|\bagents?\b|automat", re.I)
# files addressed to coding agents: everything in them is about AI use
AGENT_FILES = ("AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md")
_PROHIBITION = re.compile(
    r"prohibit|forbid|not allowed|\bdo not\b|\bdon't\b|\bnever\b|must not|strictly|\bban", re.I)


def decode(data: bytes | str) -> tuple[str, int | None]:
    """Upstream text, decoded the one way draft-outreach decodes it: UTF-8, each byte that
    is not valid UTF-8 replaced by U+FFFD, so a brief is valid UTF-8 on stdout and on disk.
    A str from git's output (bytes it could not decode kept as surrogates) is decoded the
    same way. Also the line of the first invalid byte; None when there was none."""
    if isinstance(data, bytes):
        raw = data
    else:
        try:
            raw = data.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:  # a lone surrogate that stands for no byte
            raw = data.encode("utf-8", "surrogatepass")
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as e:
        return raw.decode("utf-8", "replace"), raw.count(b"\n", 0, e.start) + 1


def decode_files(blobs: Mapping[str, bytes | None]) -> tuple[dict[str, str | None], list[str]]:
    """``decode`` for each of an upstream's files (None: absent), and one finding for each
    file that is not valid UTF-8."""
    texts: dict[str, str | None] = {}
    findings: list[str] = []
    for path, data in blobs.items():
        if data is None:
            texts[path] = None
            continue
        texts[path], bad = decode(data)
        if bad is not None:
            findings.append(f"{path} at the base is not valid UTF-8 (first at line {bad}): "
                            "what is not is shown as U+FFFD, so check the file itself")
    return texts, findings


@dataclass(frozen=True)
class RuleKind:
    id: str
    title: str  # patchctl's name for the group; the rule itself is the cited text
    patterns: tuple[str, ...]  # every one must match the line
    prohibition: bool = False  # the line, or its section heading, must prohibit something
    about_ai: bool = False  # the line, its heading or the file must be about AI/agents


# Recognizers, not rules: each matches lines that state a rule of this kind.
KINDS = (
    RuleKind("no-machine-prose", "No machine-written PR descriptions, commit messages or replies",
             (r"(PR|pull[- ]request) descriptions?\b|commit messages?|\bposts\b|"
              r"respon\w* to (reviewer|humans)|reviewer responses",
              r"\bAI\b|machine|\bLLM|agent|\bwrit|generat"), prohibition=True, about_ai=True),
    RuleKind("no-automated-submission", "No automated commits or submissions",
             (r"automat", r"submi|commits|\bPRs?\b|pull request|push"), prohibition=True),
    RuleKind("issue-first", "Features begin with an issue",
             (r"(begin|start) with an issue|open an issue|feature request first|"
              r"issue .*before (implementing|writing)",)),
    RuleKind("check-existing", "Check existing issues and PRs first",
             (r"(search|check)\b.{0,20}\bexisting|existing (issues|prs|pull requests)",)),
    RuleKind("api-bar", "New public API carries a higher bar",
             (r"\bAPI\b", r"higher bar|justify")),
    RuleKind("one-open-pr", "New contributors keep one open PR",
             (r"open (PRs|pull requests)", r"\b(1|one)\b")),
    RuleKind("ai-disclosure", "Disclose AI assistance", (r"disclos",), about_ai=True),
    RuleKind("understand-every-line", "Understand and explain every line",
             (r"explain (every|any) (line|change)|understand (their|your) code|"
              r"code you do not understand|fully understand",)),
    RuleKind("assisted-by", "How to credit a tool in a commit", (r"assisted-by",)),
    RuleKind("ascii", "ASCII only", (r"\bASCII\b|unicode characters",)),
    RuleKind("trailing-whitespace", "No trailing whitespace", (r"trailing whitespace",)),
    RuleKind("indentation", "Indentation", (r"spaces for indentation|indent with",)),
    RuleKind("regression-test", "Fixes come with a regression test",
             (r"regression test|test that fails before",)),
    RuleKind("test-asks", "Tests to run before a PR",
             (r"\bci/|\bfull CI\b|perplexity|llama-bench|test-backend-ops|test suite",
              r"\b(execute|run|verify|use)\b")),
    RuleKind("separate-prs", "One feature or fix per PR", (r"separate PRs|unrelated changes",)),
    RuleKind("sized-types", "Sized integer types in the public API", (r"sized integer types",)),
    RuleKind("commit-title", "Commit title format", (r"commit title",)),
    RuleKind("find-reviewer", "Find a reviewer who will maintain it",
             (r"collaborator who is willing|willing to review",)),
    # issue forms and the code standards
    RuleKind("discuss-first", "Discuss the idea first",
             (r"\b(post|open|start|discuss)\b.{0,40}\b(first|before)\b", r"discuss")),
    RuleKind("no-pasted-model-output", "No pasted language-model output in issues",
             (r"copy-?past|\bpast(e|ed|ing)\b",
              r"language model|\bLLM|\bAI\b|model output|generated"), prohibition=True),
    RuleKind("comment-length", "Short code comments",
             (r"comment", r"\b\d+\s*-\s*\d+ lines?\b|\b(one|two|1|2) (or two )?lines?\b")),
    RuleKind("no-mid-sentence-split", "No line split mid-sentence",
             (r"mid-sentence|hard-wrap",)),
    RuleKind("reuse-infrastructure", "Reuse existing infrastructure",
             (r"reus\w* existing",)),
    RuleKind("large-change", "Changes small enough to review",
             (r"\b(large|too extensive|too large|too big)\b", r"\bchanges?\b")),
    RuleKind("keep-simple", "Keep it simple", (r"simple as possible|keep it simple",)),
)


@dataclass(frozen=True)
class Citation:
    file: str
    line: int
    text: str
    heading: str = ""  # the section it is in (a rule "for maintainers" binds no contributor)


@dataclass
class Rule:
    id: str
    title: str
    citations: list[Citation]
    applies: str = "check"  # yes | no | check (the submitter decides)
    reason: str = ""


@dataclass(frozen=True)
class _Line:
    number: int
    text: str
    heading: str


def _lines(text: str) -> list[_Line]:
    """Markdown lines outside code fences and HTML comments, with their nearest heading."""
    out: list[_Line] = []
    heading, fence, comment = "", False, False
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if stripped.startswith(("```", "~~~")):
            fence = not fence
            continue
        if fence:
            continue
        if stripped.startswith("#"):
            heading = stripped.lstrip("#").strip()
        if stripped.startswith("<!--") and "-->" not in stripped:
            comment = True
        if comment:
            comment = "-->" not in stripped
            out.append(_Line(number, raw, heading))  # a template's hints are text too
            continue
        out.append(_Line(number, raw, heading))
    return out


def find_rules(files: dict[str, str | None],
               forms: Mapping[str, Sequence[tuple[int, str]]] | None = None) -> list[Rule]:
    """The rules the policy files state, in catalog order; each with every line saying it.
    ``forms``: more lines to read (an issue form's text lines: path -> (line, text)), in
    the order given; a sentence that several forms repeat is cited from the first."""
    found: dict[str, Rule] = {}
    sources = [(path, _lines(text)) for path in (*RULE_FILES, *TEMPLATE_FILES)
               if (text := files.get(path))]
    sources += [(path, [_Line(n, t, "") for n, t in lines])
                for path, lines in (forms or {}).items()]
    for path, lines in sources:
        for line in lines:
            body = line.text.strip()
            if not body or body.startswith("#"):
                continue
            for kind in KINDS:
                if not all(re.search(p, body, re.I) for p in kind.patterns):
                    continue
                if kind.prohibition and not (_PROHIBITION.search(body) or
                                             _PROHIBITION.search(line.heading)):
                    continue
                if kind.about_ai and not (path in AGENT_FILES or _AI.search(body) or
                                          _AI.search(line.heading)):
                    continue
                rule = found.setdefault(kind.id, Rule(kind.id, kind.title, []))
                quote = _quote(body)
                if forms and path in forms and any(c.text == quote for c in rule.citations):
                    continue  # the same sentence in another issue form: cited once
                rule.citations.append(Citation(path, line.number, quote, line.heading))
    return [found[k.id] for k in KINDS if k.id in found]


def _quote(text: str, limit: int = 240) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


# -- the pull request template ---------------------------------------------------------

@dataclass
class TemplateSection:
    heading: str
    line: int
    hints: list[str] = field(default_factory=list)  # the template's own comments
    items: list[str] = field(default_factory=list)  # its checklist lines
    item_lines: list[int] = field(default_factory=list)  # the line of each item
    facts: list[str] = field(default_factory=list)  # which fact groups of the brief belong


# heading/hint words -> the brief's fact groups that belong in such a section
_SECTION_FACTS = (
    (r"overview|description|summary|what|motivation|why", ["what", "why"]),
    (r"test|verif", ["tests"]),
    (r"additional|related|context|link|discussion|issue", ["prior-art", "tests"]),
    (r"disclos|\bAI\b", ["disclosure"]),
    (r"requirement|checklist|agree", ["rules"]),
)


def template_sections(text: str) -> list[TemplateSection]:
    sections: list[TemplateSection] = []
    comment: list[str] | None = None
    for line in _lines(text):
        s = line.text.strip()
        if re.match(r"^#{1,6}\s", s):
            sections.append(TemplateSection(s.lstrip("#").strip(), line.number))
            continue
        if not sections:
            sections.append(TemplateSection("(top)", line.number))
        current = sections[-1]
        if comment is not None or s.startswith("<!--"):
            comment = (comment or []) + [s.removeprefix("<!--").removesuffix("-->").strip()]
            if "-->" in s or (s.startswith("<!--") and s.endswith("-->")):
                hint = " ".join(x for x in comment if x)
                if hint:
                    current.hints.append(_quote(hint))
                comment = None
            continue
        if s.startswith(("- ", "* ")):
            current.items.append(_quote(re.sub(r"<!--.*?-->", "", s[2:]).strip()))
            current.item_lines.append(line.number)
    for section in sections:
        words = " ".join([section.heading, *section.hints, *section.items])
        facts: list[str] = []
        for pattern, groups in _SECTION_FACTS:
            if re.search(pattern, words, re.I):
                facts += [g for g in groups if g not in facts]
        section.facts = facts
    return [s for s in sections if s.heading != "(top)" or s.hints or s.items]


# -- .editorconfig -----------------------------------------------------------------------

@dataclass(frozen=True)
class EditorProperty:
    value: str
    line: int  # where .editorconfig sets it


def editorconfig_for(text: str, path: str) -> dict[str, EditorProperty]:
    """The properties .editorconfig sets for ``path`` (later sections win; ``unset`` removes)."""
    props: dict[str, EditorProperty] = {}
    active = False
    for number, raw in enumerate(text.splitlines(), start=1):
        s = raw.strip()
        if not s or s[0] in "#;":
            continue
        if s.startswith("[") and s.endswith("]"):
            active = _editorconfig_match(s[1:-1], path)
            continue
        key, sep, value = s.partition("=")
        if not sep or not active:
            continue
        key, value = key.strip().lower(), value.strip()
        if value.lower() == "unset":
            props.pop(key, None)
        else:
            props[key] = EditorProperty(value.lower(), number)
    return props


def _editorconfig_match(glob: str, path: str) -> bool:
    """EditorConfig's section globs: the shared matcher with ``{a,b}`` alternatives; a
    glob without ``/`` matches the name in any directory."""
    if "/" not in glob:
        glob = "**/" + glob
    try:
        return compile_glob(glob.lstrip("/"), braces=True).match(path)
    except GlobError:
        return False  # a section whose glob is broken applies to no file


# -- CODEOWNERS -----------------------------------------------------------------------

@dataclass(frozen=True)
class Owners:
    pattern: str
    owners: tuple[str, ...]
    line: int


def codeowners_for(text: str, path: str) -> Owners | None:
    """The last CODEOWNERS entry matching ``path`` (GitHub's rule), or None."""
    match = None
    for number, raw in enumerate(text.splitlines(), start=1):
        s = raw.split("#", 1)[0].strip()
        if not s:
            continue
        pattern, *owners = s.split()
        if _codeowners_match(pattern, path):
            match = Owners(pattern, tuple(owners), number)
    return match


def team_members(text: str) -> dict[str, tuple[str, int]]:
    """Teams the file itself lists in comments (``# org/team : a, b``): team -> (members, line)."""
    teams: dict[str, tuple[str, int]] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        m = re.match(r"^#\s*([\w.-]+/[\w.-]+)\s*:\s*(.+)$", raw.strip())
        if m:
            teams["@" + m.group(1)] = (m.group(2).strip(), number)
    return teams


def _codeowners_match(pattern: str, path: str) -> bool:
    """GitHub's CODEOWNERS rules on the shared matcher: a pattern with a ``/`` other than
    at its end is anchored at the root, any other matches in any directory; ``[`` is
    itself (CODEOWNERS has no character sets)."""
    anchored = pattern.startswith("/") or "/" in pattern.rstrip("/")
    body = pattern.strip("/").replace("[", "[[]")
    # GitHub: "docs/*" owns docs/a.md but not docs/sub/b.md; any other pattern also owns
    # everything under a directory it names
    try:
        glob = compile_glob(body if anchored else "**/" + body)
    except GlobError:
        return False  # longer than any path: it owns nothing
    return glob.match(path, or_parent=not pattern.endswith("/*"))
