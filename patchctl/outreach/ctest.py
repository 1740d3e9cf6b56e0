"""Upstream's CTest outcomes at the pin and after each prefix of the stack, compared.

A record of ``ctest`` run at the pin and after each patch holds one section per tree in
its log: a header line ``== LABEL: COMMIT SUBJECT`` (the tree's commit and subject), the
build's ``FAILED: ...`` targets and one line per test as ctest prints it. A ctest totals
line alone ("80% tests passed, 12 tests failed out of 59") reads as if the patch broke
twelve tests; what the record shows is which tests fail at the pin and whether any
prefix changes that. The pin's section is the one whose commit the stack's pin starts
with; the patch's is the one whose subject is the patch's subject. No git here.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from patchctl.textout import count

_SECTION = re.compile(r"^== ([\w.+-]+): ([0-9a-f]{7,40})\b\s*(.*)$")
# "  test-chat ***Not Run   0.00 sec" (condensed) or ctest's own
# " 8/56 Test  #8: test-chat ........***Not Run   0.00 sec"
_TEST = re.compile(r"^\s*(?:\d+/\d+ Test\s+#\d+: )?([\w.+-]+?)\s*\.*\s*"
                   r"(Passed|\*{3}Failed|\*{3}Not Run|\*{3}Timeout|\*{3}Exception|\*{3}Skipped|"
                   r"Not Run|Failed)\b.*?[\d.]+ sec\s*$")
# ninja's "FAILED: [code=1] tests/CMakeFiles/test-chat.dir/test-chat.cpp.o" (or without the code)
_UNBUILT = re.compile(r"^\s*FAILED: (?:\[code=\d+\] )?(?:\S*/)?CMakeFiles/([\w.+-]+)\.dir/")
OK = ("passed", "skipped")  # ctest counts neither as failed


@dataclass
class Section:
    label: str
    commit: str
    subject: str
    outcomes: dict[str, str] = field(default_factory=dict)  # test -> passed, failed, not run
    unbuilt: set[str] = field(default_factory=set)  # build targets that failed

    @property
    def failing(self) -> dict[str, str]:
        return {t: o for t, o in self.outcomes.items() if o not in OK}


@dataclass
class Comparison:
    headline: str  # the first screen's line for the record
    details: list[str]  # the failing tests by name, why in short, what the patch adds
    new_failures: list[str]  # "test-x at p3, p4": failing after the pin, passing or absent there
    why: list[str] = field(default_factory=list)  # why each fails at the pin (for Details)


def sections(text: str) -> list[Section]:
    out: list[Section] = []
    for line in text.splitlines():
        if m := _SECTION.match(line):
            out.append(Section(m.group(1), m.group(2), m.group(3).strip()))
        elif out and (m := _TEST.match(line)):
            out[-1].outcomes[m.group(1)] = m.group(2).lstrip("*").lower()
        elif out and (m := _UNBUILT.match(line)):
            out[-1].unbuilt.add(m.group(1))
    return [s for s in out if s.outcomes]


def compare(text: str, pin: str, subject: str, cmake: str = "") -> Comparison | None:
    """The tests failing at the pin against every later section, and what the patch's own
    section changes from the one before it; None when the log has no section at the pin
    and one after it (then its totals line stands as it is). ``cmake``: the upstream's
    ``tests/CMakeLists.txt`` at the pin, which says what each failing test needs."""
    found = sections(text)
    at = next((i for i, s in enumerate(found) if pin.startswith(s.commit)), None)
    if at is None or at + 1 >= len(found):
        return None
    base, later = found[at], found[at + 1:]
    before = base.failing
    new: dict[str, list[str]] = {}
    fixed: dict[str, list[str]] = {}
    for s in later:
        for t in s.failing:
            if t not in before:
                new.setdefault(t, []).append(s.label)
        for t in before:
            if s.outcomes.get(t) in OK:
                fixed.setdefault(t, []).append(s.label)
    mine = next((i for i, s in enumerate(found) if i > at and s.subject == subject), None)
    where = f"upstream ctest, pin and {count(len(later), 'prefix')}"
    pinned = f"{len(before)} of {len(base.outcomes)} fail at the pin"
    new_failures = [f"{t} at {', '.join(labels)}" for t, labels in sorted(new.items())]
    if not new and not fixed and all(set(s.failing) == set(before) for s in later):
        totals = [len(s.outcomes) for s in [base, *later]]
        of = str(totals[0]) if len(set(totals)) == 1 else \
            "/".join(str(n) for n in totals) + " (pin to last prefix)"
        head = f"{where}: the same {len(before)} fail at each, of {of} tests"
    else:
        parts = [pinned]
        if new:
            parts.append("NEW FAILURES (passing or absent at the pin): "
                         + "; ".join(new_failures))
        if fixed:
            parts.append("pass again: " + "; ".join(
                f"{t} at {', '.join(labels)}" for t, labels in sorted(fixed.items())))
        others = {t for s in later for t in s.failing} - set(before) - set(new)
        if others:
            parts.append("fail at some prefixes only: " + ", ".join(sorted(others)))
        head = f"{where}: " + "; ".join(parts)
    why = _why(base, later, cmake) if before else []
    named = [_named(base, later)] if before else []
    full = [w for w, _ in why]
    if any(not w.startswith(_UNBUILT_LINE) for w in full):
        # the CMake file explains some: the first screen names the failing tests by cause
        # (the unbuilt ones too), their outcomes go to Details
        details, full = _short(why, named=True), named + full
    else:
        details = named + _short(why, named=False)
    if mine is None:
        head += "; the patch's own prefix is not in the log"
    else:
        prev, now = found[mine - 1], found[mine]
        changed, added = _changes(prev, now)
        head += f"; {len(changed)} changed by the patch ({prev.label} -> {now.label}" + (
            f", which adds {', '.join(added)})" if added else ")")
        if changed:
            details.append("changed by the patch: " + ", ".join(changed))
    return Comparison(head, details, new_failures, full)


def _changes(prev: Section, now: Section) -> tuple[list[str], list[str]]:
    """Tests whose outcome differs between two sections (a test the patch adds counts as
    changed only when it fails), and the tests ``now`` adds with their outcome."""
    changed, added = [], []
    for t, o in sorted(now.outcomes.items()):
        if t not in prev.outcomes:
            added.append(f"{t}: {o}")
            if o not in OK:
                changed.append(f"{t} (absent -> {o})")
        elif prev.outcomes[t] != o:
            changed.append(f"{t} ({prev.outcomes[t]} -> {o})")
    changed += [f"{t} ({o} -> absent)" for t, o in sorted(prev.outcomes.items())
                if t not in now.outcomes]
    return changed, added


def _named(base: Section, later: list[Section]) -> str:
    """The tests failing at the pin, by the outcome ctest gives; a test that did not run
    because its own build target failed (at the pin and at every prefix) says so. The log
    states no other cause, so none is given."""
    by: dict[str, list[str]] = {}
    unbuilt: list[str] = []
    for t, o in sorted(base.failing.items()):
        if o == "not run" and all(t in s.unbuilt for s in [base, *later]):
            unbuilt.append(t)
        else:
            by.setdefault(o, []).append(t)
    groups = [f"{o}: {', '.join(ts)}" for o, ts in sorted(by.items(),
                                                           key=lambda x: (x[0] != "failed", x[0]))]
    if unbuilt:
        groups.append(f"not run, unbuilt: {', '.join(unbuilt)}")
    return "at the pin: " + "; ".join(groups)


CMAKE = "tests/CMakeLists.txt"
_STATEMENT = re.compile(r"^\s*(\w+)\s*\((.*)\)\s*$", re.S)
_SOURCE = re.compile(r'^"?\$\{(?:PROJECT|CMAKE)_SOURCE_DIR\}/([^"\s]+)"?$')


@dataclass(frozen=True)
class Need:
    kind: str  # "fixture" (a test that must pass first), "reads" (a file), "runs" (a script)
    what: str
    line: int  # of CMAKE


def needs(cmake: str) -> dict[str, list[Need]]:
    """What the upstream's test CMake file says each test needs beyond its build: a
    fixture test that must pass first (``FIXTURES_REQUIRED``), a file of the source tree
    it reads or a script it runs (an argument under ``${PROJECT_SOURCE_DIR}``)."""
    out: dict[str, list[Need]] = {}
    setup: dict[str, str] = {}  # fixture -> the test that sets it up
    required: list[tuple[str, str, int]] = []
    for line, cmd, args in _statements(cmake):
        if cmd == "set_tests_properties" and args:
            for key, value in itertools.pairwise(args):
                if key == "FIXTURES_SETUP":
                    setup[value] = args[0]
                elif key == "FIXTURES_REQUIRED":
                    required.append((args[0], value, line))
            continue
        name = args[args.index("NAME") + 1] if "NAME" in args[:-1] else \
            args[0].rsplit(".", 1)[0] if cmd == "llama_build_and_test" and args else None
        for prev, arg in zip(["", *args], args, strict=False):
            if name and (m := _SOURCE.match(arg)):
                out.setdefault(name, []).append(
                    Need("runs" if prev == "-P" else "reads", m.group(1), line))
    for test, fixture, line in required:
        out.setdefault(test, []).append(Need("fixture", setup.get(fixture, fixture), line))
    return out


def _statements(cmake: str) -> list[tuple[int, str, list[str]]]:
    """The file's commands: (first line, name, arguments), a command over several lines
    joined, comments dropped."""
    out, buf, start, depth = [], "", 0, 0
    for i, raw in enumerate(cmake.splitlines(), start=1):
        text = raw.split("#", 1)[0] if not raw.lstrip().startswith("#") else ""
        if not buf.strip():
            start = i
        buf += " " + text
        depth += text.count("(") - text.count(")")
        if depth <= 0 and buf.strip():
            if m := _STATEMENT.match(buf):
                out.append((start, m.group(1).lower(), m.group(2).split()))
            buf, depth = "", 0
    return out


def _why(base: Section, later: list[Section], cmake: str) -> list[tuple[str, str]]:
    """Why the tests failing at the pin fail, as far as the log and the test CMake file say:
    build targets that fail at every section, and what each failing test needs (without
    the file, the log's part only). Each line with its short form for the first screen."""
    out: list[tuple[str, str]] = []
    found = needs(cmake)
    unbuilt = set.intersection(*(s.unbuilt for s in [base, *later]))
    if unbuilt:
        names = ", ".join(sorted(unbuilt))
        # the short form: the targets that are no test (a test's is named with its outcome)
        others = ", ".join(sorted(unbuilt - set(base.outcomes)))
        out.append((f"{_UNBUILT_LINE}: {names}", others))
    groups: dict[str, list[tuple[str, Need]]] = {}
    said: set[str] = set()
    for t in sorted(base.failing):
        for n in found.get(t, []):
            said.add(t)
            groups.setdefault(n.what if n.kind == "fixture" else n.kind, []).append((t, n))
    for key, tests in groups.items():
        kind = tests[0][1].kind
        lines = ", ".join(f"{t} (:{n.line})" if kind == "fixture" else f"{t}: {n.what} (:{n.line})"
                          for t, n in tests)
        if kind == "fixture":
            state = base.outcomes.get(key, "not in the log")
            long = f"need {key} ({state} at the pin) to pass first (FIXTURES_REQUIRED)"
            short = f"{tests[0][0]} needs {key} to pass first" if len(tests) == 1 else \
                f"{len(tests)} need {key} to pass first"
        else:
            thing = "script" if kind == "runs" else "file"
            long = f"{kind} a {thing} of the source tree"
            short = f"{tests[0][0]} {kind} {tests[0][1].what}" if len(tests) == 1 else \
                f"{len(tests)} {kind.removesuffix('s')} a source-tree {thing}"
        out.append((f"{long}, {CMAKE} at the pin: {lines}", short))
    rest = sorted(t for t in base.failing if t not in said and t not in unbuilt)
    if rest and cmake:
        out.append((f"no cause in the log or {CMAKE}: {', '.join(rest)}",
                    f"{', '.join(rest)}: none stated"))
    return out


def _short(why: list[tuple[str, str]], *, named: bool) -> list[str]:
    """The causes in one line, each in short (every test by name: Details); ``named``: the
    line replaces the one naming the failing tests, so it names the unbuilt ones too."""
    shorts = [("unbuilt: " + (w.split(": ", 1)[1] if named else short) if short or named
               else "") if w.startswith(_UNBUILT_LINE) else short for w, short in why]
    shorts = [x for x in shorts if x]
    if not shorts:
        return []
    head = "why, at the pin (each: Details): " if named else "also "
    return [head + "; ".join(shorts)]


_UNBUILT_LINE = "build targets failing at the pin and every prefix (the log)"
