"""The rest of an upstream's contribution surface: issue forms, discussions, CODEOWNERS gaps
and the owners of a subsystem a reviewer's question names. No git here.

GitHub issue forms are YAML, but simple: a small line reader takes the form's
``name``, ``description`` and ``labels``, the text of its markdown blocks and the
``label``/``description`` of each field, each with its line, so rules in them are
quoted as file:line like every other rule (no YAML library: nothing here needs
more than lines, and a form that is not simple YAML still yields its lines).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from patchctl.outreach import policy

ISSUE_TEMPLATE_DIRS = (".github/ISSUE_TEMPLATE",)
_KEY = re.compile(r"^(\s*)(-\s+)?([A-Za-z_][\w-]*)\s*:\s*(.*)$")
_BLOCK = re.compile(r"^[|>][+-]?\d*$")


@dataclass(frozen=True)
class FormLine:
    line: int
    key: str  # name | description | labels | value | label | about | url | ...
    text: str


@dataclass
class IssueForm:
    file: str
    name: str
    description: str
    labels: str
    lines: list[FormLine] = field(default_factory=list)  # what the form says, in order


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def read_form(path: str, text: str) -> IssueForm:
    """An issue form (or the chooser's config.yml), read line by line."""
    form = IssueForm(path, "", "", "")
    block_indent: int | None = None  # inside a ``value: |`` block: its key's indentation
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        indent = len(raw) - len(raw.lstrip(" "))
        if block_indent is not None:
            if not stripped or indent > block_indent:
                if stripped:
                    form.lines.append(FormLine(number, "value", stripped))
                continue
            block_indent = None
        if not stripped or stripped.startswith("#"):
            continue
        m = _KEY.match(raw)
        if not m:
            continue
        key, value = m.group(3), m.group(4).split(" #", 1)[0].strip()
        key_indent = len(m.group(1)) + len(m.group(2) or "")
        if _BLOCK.match(value):
            block_indent = key_indent
            continue
        value = _unquote(value)
        if key_indent == 0 and key in ("name", "description", "labels"):
            setattr(form, key, value)
        if value and key in ("name", "description", "label", "value", "about", "url",
                             "placeholder") and not (key_indent == 0 and key == "name"):
            form.lines.append(FormLine(number, key, value))
    return form


def form_rule_lines(forms: Iterable[IssueForm]) -> dict[str, list[tuple[int, str]]]:
    """The lines of each form that may state a rule, for ``policy.find_rules``: the forms
    for requesting a feature first (a patch proposes one), then the others by path."""
    def order(f: IssueForm) -> tuple[bool, str]:
        return (not re.search(r"enhancement|feature", f"{f.name} {f.labels}", re.I), f.file)

    return {f.file: [(x.line, x.text) for x in f.lines
                     if x.key in ("value", "label", "description", "about")]
            for f in sorted(forms, key=order)}


# -- discussions named by the issues found ----------------------------------------------

DISCUSSION = re.compile(r"https://github\.com/[\w.-]+/[\w.-]+/discussions/\d+")


@dataclass(frozen=True)
class Discussion:
    url: str
    named_by: str  # the issue whose text names it, and where that text was read


def discussions(texts: Mapping[str, str]) -> list[Discussion]:
    """Discussion URLs in ``texts`` (where it was read -> its text), in order, once each."""
    out: dict[str, Discussion] = {}
    for source, text in texts.items():
        for url in DISCUSSION.findall(text):
            out.setdefault(url, Discussion(url, source))
    return list(out.values())


# -- CODEOWNERS -------------------------------------------------------------------------

def unowned(codeowners: str, touched: Iterable[str]) -> list[str]:
    """The touched paths that no CODEOWNERS entry matches."""
    return sorted(p for p in touched if policy.codeowners_for(codeowners, p) is None)


@dataclass
class Subsystem:
    word: str  # the word of the question that names it
    question: str
    team: str | None  # ``@org/team`` whose name holds the word
    members: str | None  # the team's members as the file lists them, with the line
    entries: list[policy.Owners]  # CODEOWNERS entries for the subsystem

    @property
    def paths(self) -> list[str]:
        """The entries' patterns as git pathspecs (for the authors of the subsystem)."""
        return sorted({e.pattern.lstrip("/") for e in self.entries if e.pattern.strip("/")})


def _token(name: str) -> str:
    """``ggml-rpc`` -> ``rpc``: a subsystem's word, without the project's prefix (the part
    before the last ``-``); ``llama-arch.*`` -> ``arch``."""
    name = re.sub(r"[*?\[].*$", "", name).split(".", 1)[0]
    return re.split(r"[-_]", name)[-1].lower()


def subsystems(question: str, codeowners: str, path: str) -> list[Subsystem]:
    """The subsystems a question names: a CODEOWNERS team whose name (without the org and
    a prefix: ``ggml-rpc`` -> ``rpc``) is a word of the question, or an owned directory whose
    name the question writes in capitals (``RPC``); with their entries."""
    teams = policy.team_members(codeowners)
    entries = _entries(codeowners)
    words = {w.lower(): w for w in re.findall(r"[A-Za-z][\w-]*[A-Za-z0-9]", question)}
    found: dict[str, Subsystem] = {}
    for team in sorted({o for e in entries for o in e.owners if "/" in o} | set(teams)):
        word = _token(team.split("/", 1)[1])
        if len(word) >= 2 and word in words and word not in found:
            listed = teams.get(team)
            members = f"{listed[0]} (as listed at {path}:{listed[1]})" if listed else None
            found[word] = Subsystem(words[word], question, team, members,
                                    [e for e in entries if team in e.owners])
    for e in entries:
        parts = [p for p in e.pattern.strip("/").split("/") if p]
        word = _token(parts[-1]) if parts else ""
        if len(word) >= 3 and words.get(word) == word.upper():
            sub = found.setdefault(word, Subsystem(words[word], question, None, None, []))
            if e not in sub.entries:
                sub.entries.append(e)
    return [found[w] for w in sorted(found)]


def _entries(codeowners: str) -> list[policy.Owners]:
    out = []
    for number, raw in enumerate(codeowners.splitlines(), start=1):
        s = raw.split("#", 1)[0].strip()
        if s:
            pattern, *owners = s.split()
            out.append(policy.Owners(pattern, tuple(owners), number))
    return out
