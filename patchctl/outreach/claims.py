"""Claims of a concern's outreach data that its patch contradicts. No git here.

Narrow and mechanical: a clause of a text field of ``stack/outreach/<concern>.toml``
that says *only* (or *other than*, *except*) some architectures, naming them by the
names of the upstream's per-architecture files (``src/models/llama.cpp`` is
``llama``), or saying how many (``only 2 architectures``), is compared with the
per-architecture files the patch changes. When the patch changes files of
architectures the clause does not name (or a different number), the clause is a lint
finding at its line of the TOML file: the brief must not repeat a stale claim.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from pathlib import Path, PurePosixPath

from patchctl.model.patchfile import Patch
from patchctl.model.stack import Stack
from patchctl.outreach.facts import LintFinding, OutreachData, load_outreach

_EXCLUSIVE = re.compile(r"\b(only|other than|except|exclusively)\b", re.I)
_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
_COUNT = re.compile(r"\b(only|just)\s+(\d+|" + "|".join(_NUMBERS) + r")\s+"
                    r"(?:\w+\s+)?(architectures|archs|models)\b", re.I)
FIELDS = ("title", "summary", "motivation", "api", "scope")


def is_model_file(path: str) -> bool:
    """A per-architecture source file: ``<dir>/models/<arch>.c[pp]``."""
    p = PurePosixPath(path)
    return len(p.parts) >= 2 and p.parts[-2] == "models" and p.suffix in (".c", ".cc", ".cpp")


def architectures(paths: Iterable[str]) -> set[str]:
    return {PurePosixPath(p).stem for p in paths if is_model_file(p)}


def changed_architectures(patch: Patch) -> set[str]:
    """The architectures whose per-architecture file the patch changes or adds."""
    return architectures(f.path for f in patch.files if f.target is not None)


def _names_in(clause: str, known: set[str]) -> list[str]:
    out: list[tuple[str, int, int]] = []
    for name in sorted(known, key=len, reverse=True):
        # a whole name: not part of llama.cpp, llama_batch or qwen2moe
        for m in re.finditer(rf"(?<![\w.-]){re.escape(name)}(?![\w-]|\.\w)", clause):
            if not any(m.start() >= s and m.end() <= e for _, s, e in out):
                out.append((name, m.start(), m.end()))
    return [n for n, _, _ in sorted(out, key=lambda x: x[1])]


def contradictions(data: OutreachData, toml_text: str, patch: Patch, known: set[str]
                   ) -> list[LintFinding]:
    """The clauses of ``data`` (its TOML text ``toml_text``) that say which architectures
    run, where the patch changes the files of others. ``known``: the architectures at the
    base (the names of its per-architecture files) and those the patch adds."""
    changed = changed_architectures(patch)
    if not changed:
        return []
    out = []
    for key in FIELDS:
        value = data.fields.get(key)
        if not value:
            continue
        for clause in re.split(r";\s+|(?<=[.!?])\s+", value):
            if not _EXCLUSIVE.search(clause):
                continue
            named = _names_in(clause, known | changed)
            count = _COUNT.search(clause)
            said = None
            if named and set(named) != changed:
                said = f"names {len(named)} ({', '.join(named)})"
                extra = sorted(changed - set(named))
            elif count and _number(count.group(2)) != len(changed):
                said = f"says {count.group(0)!r}"
                extra = sorted(changed)
            if said is None:
                continue
            line = _line_of(toml_text, key, clause)
            more = f"; not named: {', '.join(extra)}" if named and extra else ""
            out.append(LintFinding(
                "outreach-claim", data.file, line,
                f"{key} {said} as the architectures that run, but the patch changes the "
                f"per-architecture files (models/*.cpp) of {len(changed)}{more}: "
                f"correct the outreach data", f"{data.file}:{line}" if line else data.file))
    return out


# "edits 2 builders", "Four builders change", "17 files", "the only builder"
_NUMBER = r"(\d+|" + "|".join(_NUMBERS) + r")"
_COUNTED = re.compile(r"(?<![\w.+-])" + _NUMBER + r"\s+"
                      r"(?:(?:changed|edited|source|graph|model|more)\s+)?(files?|builders?)\b",
                      re.I)
_THE_ONLY = re.compile(r"\bthe only (?:graph )?(builder|file)\b", re.I)
# "the bitnet, nemotron-h and plamo2 builders": the names are read backwards from each
# "builder(s)", over a short window, with one anchored match of the reversed text, so a long
# field costs linear time (one regex over the whole text tried every start against every
# later "builders": 38 s for 20,000 characters)
_BUILDER_WORD = re.compile(r"\s+(?:graph\s+)?builders?\b")
_NAMES_REVERSED = re.compile(r"(?:[\w.+-]+\s+dna\s+,?)?[\w.+-]+(?:\s+,[\w.+-]+)*")
_NAMES_WINDOW = 300
_NAMES_AT_MOST = 100  # "builder(s)" read per clause
_PATCH_NUMBER = re.compile(r"(?<![\w.#/-])(\d{4})(?![\w.-])")


def toml_text(stack_root: Path, data: OutreachData) -> str:
    """The TOML file ``data`` was read from (its lines locate a claim), or ""."""
    path = stack_root.parent / data.file
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def stack_claims(stack: Stack, known: Collection[str] = ()) -> list[LintFinding]:
    """``stale_claims`` of every outreach file the stack's patches name, once each."""
    patches = stack.patches()
    out: list[LintFinding] = []
    for patch in patches:
        data = load_outreach(stack.root, patch.concern)
        if data is not None:
            out += stale_claims(data, toml_text(stack.root, data), patch, patches, known)
    return list({x.message: x for x in out}.values())


def builders(patch: Patch) -> list[str]:
    """The builders a patch edits: the per-architecture files it changes, by architecture."""
    return sorted(changed_architectures(patch))


def stale_claims(data: OutreachData, toml_text: str, patch: Patch, series: list[Patch],
                 known: Collection[str] = ()) -> list[LintFinding]:
    """The clauses of ``data``'s text fields and objections that count or name the files
    or builders a patch changes, where the patch does otherwise. A clause naming a patch of
    ``series`` by its number ("0002 edits ...") is about that patch, else about ``patch``.
    Names are checked only when each is an architecture (``known``, or one a patch of the
    series changes). Each finding is one line: the TOML line, the claim and the truth."""
    by_number = {p.name.split("-", 1)[0]: p for p in series}
    known = set(known) | {a for p in series for a in changed_architectures(p)}
    texts = [(key, data.fields.get(key, "")) for key in FIELDS] + \
        [("objection", o.text) for o in data.objections]
    out = []
    for key, value in texts:
        for clause in re.split(r";\s+|(?<=[.!?])\s+|\(|\)", value):
            numbers = [n for n in _PATCH_NUMBER.findall(clause) if n in by_number]
            about = by_number[numbers[0]] if len(set(numbers)) == 1 else \
                patch if not numbers else None
            if about is None:
                continue  # a clause comparing two patches: not checked
            for said, truth in _claims(clause, about, known):
                line = _line_of(toml_text, key, clause)
                where = f"{data.file}:{line}" if line else data.file
                out.append(LintFinding(
                    "outreach-claim", data.file, line,
                    f"{where}: {key} says {said!r}, but {_short(about.name)} {truth}: "
                    "correct the outreach data", where))
    return out


def _claims(clause: str, patch: Patch, known: set[str]) -> list[tuple[str, str]]:
    """(what the clause says, what the patch does) for each count or name it gets wrong."""
    out = []
    arch = builders(patch)
    files = sorted({f.path for f in patch.files})
    said_builders = [f"{_number(m.group(1))}:{m.group(0)}" for m in _COUNTED.finditer(clause)
                     if m.group(2).lower().startswith("builder")]
    said_files = [f"{_number(m.group(1))}:{m.group(0)}" for m in _COUNTED.finditer(clause)
                  if m.group(2).lower().startswith("file")]
    for m in _THE_ONLY.finditer(clause):
        (said_builders if m.group(1).lower() == "builder" else said_files).append(
            f"1:{m.group(0)}")
    for entry in said_builders:
        n, text = entry.split(":", 1)
        if int(n) != len(arch):
            out.append((text, f"edits {len(arch)} builder(s) (per-architecture files under "
                        f"models/){': ' + ', '.join(arch) if arch else ''}"))
    for entry in said_files:
        n, text = entry.split(":", 1)
        if int(n) != len(files):
            out.append((text, f"changes {len(files)} file(s)"))
    for k, word in enumerate(_BUILDER_WORD.finditer(clause)):
        before = clause[max(0, word.start() - _NAMES_WINDOW):word.start()][::-1]
        named = _NAMES_REVERSED.match(before)
        if named is None or k >= _NAMES_AT_MOST:
            continue
        listed = named.group(0)[::-1]
        said = listed + word.group(0)
        names = [n for n in re.split(r",\s*|\s+and\s+", listed) if n]
        # "the bitnet, nemotron-h and plamo2 builders"; "other builders", "V4's builder": no
        while names and names[0].lower() in ("the", "its", "their"):
            names = names[1:]
        if names and all(n in known for n in names) and set(names) != set(arch):
            out.append((said, f"edits the builders of {', '.join(arch) or 'none'}"))
    return out


def _short(name: str) -> str:
    head = name.split("-", 1)[0]
    return head if head.isdigit() else name


def _number(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word.lower()]


def _line_of(toml_text: str, key: str, clause: str) -> int | None:
    """The line of the TOML file holding the clause (the key's line when it spans lines)."""
    lines = toml_text.splitlines()
    probe = clause[:40]
    for number, line in enumerate(lines, start=1):
        if probe and probe in line:
            return number
    for number, line in enumerate(lines, start=1):
        if re.match(rf"^\s*{re.escape(key)}\s*=", line):
            return number
    return None
