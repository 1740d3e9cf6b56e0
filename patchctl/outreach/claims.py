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
from collections.abc import Iterable
from pathlib import PurePosixPath

from patchctl.model.patchfile import Patch
from patchctl.outreach.facts import LintFinding, OutreachData

_EXCLUSIVE = re.compile(r"\b(only|other than|except|exclusively)\b", re.I)
_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10}
_COUNT = re.compile(r"\b(only|just)\s+(\d+|" + "|".join(_NUMBERS) + r")\s+"
                    r"(?:\w+\s+)?(architectures|archs|models|graph builders|builders)\b", re.I)
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
