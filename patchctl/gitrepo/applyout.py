"""What `git apply` says beyond "it applied": the hunks it placed away from their header's
line, the lines it warned add whitespace errors, and why it refused. A run's output is read
here only when it holds any of them (a clean stack's never does), so verify's start-up
does not load this module (three dataclasses and five patterns)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from patchctl.toolout import reason

_CHECKING = re.compile(r"^Checking patch (.+)\.\.\.$")
_HUNK_OK = re.compile(r"^Hunk #(\d+) succeeded at (\d+)(?: \(offset (-?\d+) lines?\))?\.$")


# `git apply --whitespace=warn`: "FILE:LINE: WHAT." then the line itself
_WHITESPACE = re.compile(r"^(?P<file>.+?):(?P<line>\d+): (?P<what>[^:\n]+?)\.\n(?P<text>.*)$",
                         re.MULTILINE)
_FAILED_AT = re.compile(r"^error: patch failed: (?P<file>.+):(?P<line>\d+)$")
_ERROR = re.compile(r"^error: (.*)$")


@dataclass(frozen=True)
class HunkOffset:
    """A hunk `git apply -v` placed away from where its header said (the one definition:
    verify, rebase-pin and import report these)."""

    file: str  # the path git names
    hunk: int  # 1-based within its file diff
    offset: int  # lines
    line: int  # where it applied


@dataclass(frozen=True)
class WhitespaceWarning:
    """A line `git apply` warned adds a whitespace error (it names at most five a run)."""

    file: str  # the patch file, as git was given it
    line: int  # as git numbers it: newer gits count from the first line of each patch
    # file, older ones (2.39, for one) count on across all the patch files of one run
    what: str  # "trailing whitespace", "space before tab in indent", ...
    text: str  # the line as git shows it (without its "+", or "+" alone for a blank)


@dataclass(frozen=True)
class ApplyError:
    """Why `git apply` refused, read once from its stderr."""

    message: str  # git's first real error line, without "error: " (else its last line)
    file: str | None = None  # "patch failed: FILE:LINE" names the file and line ...
    line: int | None = None  # ... where the failing hunk was expected upstream


def offsets(text: str) -> list[tuple[int, HunkOffset]]:
    """(file diff index in input order, offset) from the output of `git apply -v`."""
    out: list[tuple[int, HunkOffset]] = []
    file_index, path = -1, "?"
    for line in text.splitlines():
        if m := _CHECKING.match(line):
            file_index, path = file_index + 1, m.group(1)
        elif (m := _HUNK_OK.match(line)) and m.group(3) and int(m.group(3)):
            out.append((file_index, HunkOffset(path, int(m.group(1)), int(m.group(3)),
                                               int(m.group(2)))))
    return out


def whitespace(stderr: str) -> list[WhitespaceWarning]:
    """The lines git warned add whitespace errors, in its order."""
    return [WhitespaceWarning(m.group("file"), int(m.group("line")), m.group("what"),
                              m.group("text")) for m in _WHITESPACE.finditer(stderr)]


def error(stderr: str) -> ApplyError:
    """Why `git apply` refused, from its stderr."""
    lines = stderr.splitlines()
    for line in lines:
        if m := _FAILED_AT.match(line):
            return ApplyError(f"patch failed: {m.group('file')}:{m.group('line')}",
                              m.group("file"), int(m.group("line")))
    errors = [m.group(1) for ln in lines if (m := _ERROR.match(ln))]
    message = next((e for e in errors if not e.startswith("while searching")), None)
    return ApplyError(message or reason(stderr))
