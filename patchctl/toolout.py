"""Why a tool failed, read from what it printed: the one reader behind every failure that
patchctl relays from CMake, a compiler or linker, ninja, git or the worker.

A tool's last lines are rarely its reason: CMake ends with its call stack and
"-- Configuring incomplete, errors occurred!", ninja with "build stopped", git with
hints, the worker with its usage. So the reason is CMake's first error message (its
reflowed paragraphs joined again, the call stack left out); else the error lines of a
compiler, linker, git or the worker; else the last lines that are none of that noise.
"""

from __future__ import annotations

import re

from patchctl.untrusted import shorten

SEPARATOR = " | "  # the parts of a reason, on the one line an error message is
MAX_CMAKE_PARTS = 8  # a worker refusal: what, found, needed, how, three commands, or-set
MAX_ERROR_LINES = 3
MAX_LAST_LINES = 3
MAX_CHARS = 1000

# "CMake Error at FILE:LINE (message):", "CMake Error in FILE:", "CMake Error: TEXT".
_CMAKE_ERROR = re.compile(r"^CMake (?:\w+ )?Error(?: \(dev\))?(?: (?:at|in) .+)?:(?P<text>.*)$")
# git's "fatal: ..."/"error: ...", GCC's and Clang's "FILE:L:C: [fatal ]error: ...", MSVC's
# "error C2065: ...", GNU ld's "undefined reference to" and "cannot find -lfoo", the worker's
# "worker: ..." (its usage follows).
_ERROR_LINE = re.compile(r"^(?:fatal|error): |(?:^|: )(?:fatal )?error(?: [A-Z]+\d+)?: "
                         r"|undefined reference to |\bld(?:\.\w+)?: cannot find |^worker: ")
_NOISE = re.compile(r"^(?:-- Configuring incomplete|-- Generating done|ninja: build stopped"
                    r"|hint: |Call Stack \(most recent call first\):|\s+\S+:\d+ \([\w:]+\)\s*$)")


def reason(output: str | bytes | None) -> str:
    """The reason in a failed tool's ``output`` (stdout and stderr, in any order), as one
    line: its parts joined by " | ", whitespace runs as one space, control characters
    escaped, at most MAX_CHARS; "no output" when there is nothing to say."""
    if isinstance(output, bytes):
        output = output.decode("utf-8", "replace")
    lines = (output or "").splitlines()
    parts = _cmake_error(lines) or _error_lines(lines) or _last_lines(lines)
    text = SEPARATOR.join(" ".join(p.split()) for p in parts)
    return shorten(text, MAX_CHARS) if text else "no output"


def _cmake_error(lines: list[str]) -> list[str]:
    """CMake's first error message. CMake indents it by two, wraps each paragraph at
    80 columns with a blank line between paragraphs, and keeps lines the author indented
    (commands to run) as they are: so a paragraph's lines are joined again and each
    indented line is a part of its own."""
    start = next((i for i, ln in enumerate(lines) if _CMAKE_ERROR.match(ln)), None)
    if start is None:
        return []
    m = _CMAKE_ERROR.match(lines[start])
    assert m is not None
    parts = [m.group("text").strip()] if m.group("text").strip() else []
    joinable = False
    for line in lines[start + 1:]:
        if not line.strip():
            joinable = False
            continue
        if not line[0].isspace():
            break  # "Call Stack (most recent call first):", "-- Configuring incomplete", ...
        body = line[2:] if line.startswith("  ") else line.lstrip()
        if body[:1].isspace():
            parts.append(body.strip())
            joinable = False
        elif joinable:
            parts[-1] += " " + body.strip()
        else:
            parts.append(body.strip())
            joinable = True
        if len(parts) > MAX_CMAKE_PARTS:
            break
    return parts[:MAX_CMAKE_PARTS]


def _error_lines(lines: list[str]) -> list[str]:
    return [ln.strip() for ln in lines if _ERROR_LINE.search(ln.strip())][:MAX_ERROR_LINES]


def _last_lines(lines: list[str]) -> list[str]:
    kept = [ln.strip() for ln in lines if ln.strip() and not _NOISE.match(ln)]
    return kept[-MAX_LAST_LINES:]
