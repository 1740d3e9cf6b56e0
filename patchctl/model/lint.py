"""Per-patch lint: metadata, scope, and the shape of the diff.

Checks that need the upstream tree (writing through a symlink there) take the
set of symlinked paths as an argument, so this module stays free of git.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePosixPath

from patchctl.globs import glob_match, glob_problem, valid_globs
from patchctl.model.finding import ERROR as ERROR  # lint's names as before (verify reads
from patchctl.model.finding import WARNING as WARNING  # findings without the linter)
from patchctl.model.finding import Finding as Finding
from patchctl.model.finding import parent_dirs as parent_dirs
from patchctl.model.patchfile import Patch, is_trailer_block
from patchctl.untrusted import control_character, shorten

# Yocto's own check (meta/classes-global/insane.bbclass, check_upstream_status):
# the strict form is valid; any other line that mentions upstream and status is
# a near-miss and reported as malformed.
UPSTREAM_STATUS_STRICT = re.compile(
    r"^Upstream-Status: (Pending|Submitted|Denied|Inappropriate|Backport|Inactive-Upstream)( .+)?$",
    re.MULTILINE,
)
UPSTREAM_STATUS_KINDA = re.compile(r"^.*upstream.*status.*$", re.IGNORECASE | re.MULTILINE)
# The guidelines ask these statuses to say where / which / why in brackets.
_NEEDS_BRACKET = {
    "Submitted": "where it was submitted",
    "Backport": "the upstream commit or release",
    "Inappropriate": "why",
}

REQUIRED_KEYS = ("Concern", "Upstream-Status", "Scope")


def lint_patch(patch: Patch, *, upstream_symlinks: frozenset[str] = frozenset()) -> list[Finding]:
    findings: list[Finding] = []
    header_end = patch.diff_line - 1
    findings += _lint_metadata(patch, header_end)
    findings += _lint_assisted(patch)
    findings += _lint_paths(patch, upstream_symlinks)
    if patch.crlf_damaged:
        findings.append(
            Finding(ERROR, "crlf", "CRLF line endings in the diff (the file was converted "
                    "to DOS line endings); convert it back with `dos2unix`", patch.diff_line)
        )
    return findings


def added_findings(before: Patch, after: Patch) -> list[Finding]:
    """What ``after`` is found to have that ``before`` was not: how a change to a patch's
    header is judged (`header --set`, a header edited at a rebase stop)."""
    seen = {(f.code, f.message) for f in lint_patch(before)}
    return [f for f in lint_patch(after) if (f.code, f.message) not in seen]


def _lint_metadata(patch: Patch, header_end: int) -> list[Finding]:
    out: list[Finding] = []
    header_text = "\n".join(patch.text.split("\n")[:header_end])
    for key in REQUIRED_KEYS:
        if key == "Upstream-Status":
            continue  # checked against the raw text below, as Yocto does
        if not any(v.strip() for v in patch.metadata.get(key, [])):  # `Scope:` alone: none
            out.append(Finding(ERROR, "missing-trailer", f"missing `{key}:` trailer"))
    if not patch.reproducer:
        out.append(Finding(WARNING, "no-reproducer",
                           "no `Reproducer:` trailer naming a project under reproducers/"))
    elif not _under_reproducers(patch.reproducer):
        out.append(Finding(ERROR, "reproducer-path",
                           f"`Reproducer: {patch.reproducer}` must be a path under reproducers/"))

    strict = UPSTREAM_STATUS_STRICT.search(header_text)
    if strict:
        status, rest = strict.group(1), (strict.group(2) or "").strip()
        if status in _NEEDS_BRACKET and not (rest.startswith("[") and rest.endswith("]")):
            out.append(Finding(WARNING, "upstream-status",
                               f"`Upstream-Status: {status}` should say {_NEEDS_BRACKET[status]} "
                               f"in brackets: `{status} [...]`", _line_of(patch, strict.start())))
    else:
        near = UPSTREAM_STATUS_KINDA.search(header_text)
        if near:
            out.append(Finding(ERROR, "upstream-status",
                               f"malformed Upstream-Status {near.group(0).strip()!r}; use exactly "
                               "`Upstream-Status: Pending|Submitted [where]|Backport [ref]|Denied|"
                               "Inappropriate [why]|Inactive-Upstream [...]`",
                               _line_of(patch, near.start())))
        else:
            out.append(Finding(ERROR, "missing-trailer", "missing `Upstream-Status:` trailer"))
    return out


def assisted_problem(value: str) -> str | None:
    """What is wrong with the value of an ``Assisted-by:`` trailer, or None. Its form is
    ``TOOL [glob ...]``: the assistant's name (upstream llama.cpp's AGENTS.md asks for
    ``Assisted-by: <assistant name>``), then optionally the files it helped write."""
    tool, bracket, rest = value.partition("[")
    if not tool.strip():
        return f"`Assisted-by: {shorten(value)}` names no assistant; use `Assisted-by: NAME`"
    if bracket and not rest.rstrip().endswith("]"):
        return f"`Assisted-by: {shorten(value)}`: the globs need a closing `]`"
    for glob in rest.rstrip().removesuffix("]").split():
        problem = glob_problem(glob)
        if problem is not None:
            return f"`Assisted-by:` glob: {problem}"
    return None


def _lint_assisted(patch: Patch) -> list[Finding]:
    """``Assisted-by:`` trailers well formed, their globs matching a file of the patch."""
    out = []
    paths = [f.path for f in patch.files]
    for value in patch.metadata.get("Assisted-by", []):
        line = _trailer_line(patch, "Assisted-by", value)
        problem = assisted_problem(value)
        if problem is not None:
            out.append(Finding(ERROR, "assisted-by", problem, line))
            continue
        for glob in value.partition("[")[2].rstrip().removesuffix("]").split():
            if not any(glob_match(p, glob) for p in paths):
                out.append(Finding(WARNING, "assisted-by",
                                   f"`Assisted-by:` glob {glob} matches no file of the patch",
                                   line))
    return out


def in_scope(path: str, globs: Sequence[str]) -> bool:
    """Whether ``path`` matches one of ``globs`` (valid ones: ``valid_globs``)."""
    return any(glob_match(path, g) for g in globs)


def scope_literal(path: str) -> bool:
    """Whether ``path`` can stand in ``Scope:`` as itself: no blank or comma (they split
    the trailer) and no glob character (it would match more than the path)."""
    return not re.search(r"[\s,*?\[\]\\]", path)


def outside_scope(patch: Patch) -> list[str]:
    """The paths the patch touches that its ``Scope:`` does not cover, in diff order (none
    when it has no Scope: lint says that once)."""
    scope = valid_globs(patch.scope)
    paths = [p for f in patch.files for p in f.paths]
    return list(dict.fromkeys(p for p in paths if patch.scope and not in_scope(p, scope)))


def _lint_paths(patch: Patch, upstream_symlinks: frozenset[str]) -> list[Finding]:
    out: list[Finding] = []
    binary = [g for v in patch.metadata.get("Binary", []) for g in v.split()]
    for key, globs in (("Scope", patch.scope), ("Binary", binary)):
        for g in dict.fromkeys(globs):
            problem = glob_problem(g)
            if problem:
                out.append(Finding(ERROR, "glob", f"`{key}:` {problem}",
                                   _trailer_line(patch, key, g)))
    # a broken glob matches nothing: its own finding above says why
    scope, binary_ok = valid_globs(patch.scope), valid_globs(binary)
    for f in patch.files:
        for path in f.paths:
            if path.startswith("/") or ".." in path.split("/"):
                out.append(Finding(ERROR, "unsafe-path",
                                   f"{path}: absolute or `..` path escapes the tree", f.line))
                continue
            if patch.scope and not in_scope(path, scope):
                out.append(Finding(ERROR, "scope",
                                   f"{path} is outside the patch's Scope "
                                   f"({' '.join(patch.scope)})",
                                   f.line))
            through = [p for p in parent_dirs(path) if p in upstream_symlinks]
            if through or (path in upstream_symlinks and f.source is not None):
                link = through[0] if through else path
                out.append(Finding(ERROR, "symlink",
                                   f"{path}: writes through the symbolic link {link}", f.line))
        if f.new_mode == "120000":
            out.append(Finding(ERROR, "symlink", f"{f.path}: creates a symbolic link", f.line))
        if f.binary and not any(glob_match(f.path, g) for g in binary_ok):
            out.append(Finding(ERROR, "binary",
                               f"{f.path}: binary change; declare it with a `Binary: <glob>` "
                               "trailer or leave binaries out of the stack", f.line))
    return out


_TRAILER_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9-]*$")
# Body lines that end a mail's message or start a diff, for `git mailinfo` (`---`, a
# `diff -` or `Index:` line), `git apply` and patchctl (a `--- file`), or split an mbox
# (a `From ... hh:mm` separator line); as the body, one would change the patch.
_STRUCTURE_LINE = re.compile(r"^(?:---(?:\s|$)|diff -|Index: |From .*\d\d:\d\d)")


# -- what patchctl writes into a header: one check, made by every writer (patchtext) ------


def line_problem(what: str, value: str) -> str | None:
    """What is wrong with ``value`` as one line of a patch header (a subject, an author,
    a date, a trailer's value), or None: a newline or another control character would
    start a header or trailer of its own, or hide text on a terminal."""
    bad = control_character(value)
    if bad is not None:
        return f"{what} must be one line without control characters ('{shorten(value)}' " \
            f"holds {bad})"
    return None


def trailer_form_problem(key: str, value: str) -> str | None:
    """What is wrong with ``key: value`` as a line of a trailer block, or None."""
    if not _TRAILER_KEY.match(key):
        return f"'{shorten(key)}' is not a trailer key (letters, digits and '-', " \
            "e.g. Upstream-Status)"
    return line_problem(f"`{key}:`", value)


def trailer_problem(key: str, value: str, *, content: bool = True) -> str | None:
    """What is wrong with the trailer ``key: value`` given on the command line, or None:
    its form, an empty value, and (``content``) what verify would call an error in it."""
    problem = trailer_form_problem(key, value)
    if problem is not None:
        return problem
    if not value.strip():
        return f"`{key}:` needs a value on one line"
    if not content:
        return None
    if key == "Upstream-Status" and not UPSTREAM_STATUS_STRICT.match(f"{key}: {value}"):
        return ("use exactly `Upstream-Status: Pending|Submitted [where]|Backport [ref]|Denied|"
                "Inappropriate [why]|Inactive-Upstream [...]`")
    if key.lower() == "assisted-by":
        return assisted_problem(value)
    if key == "Reproducer" and not _under_reproducers(value.strip()):
        return f"`Reproducer: {value}` must be a path under reproducers/"
    return None


def body_problem(body: str, *, trailers_follow: bool = False) -> str | None:
    """What is wrong with ``body`` as a patch's message body (between the subject and
    the trailers), or None: a control character other than tab and newline; a line that
    would end the message or start a diff there (so become part of the patch); and,
    unless trailers follow it, a last paragraph that would be read as the trailers."""
    bad = control_character(body, newlines=True)
    if bad is not None:
        return f"the body holds a control character ({bad})"
    lines = body.split("\n")
    for n, line in enumerate(lines, start=1):
        if _STRUCTURE_LINE.match(line):
            return f"line {n} of the body, '{shorten(line)}', would end the message or " \
                "start a diff (as `---`, `diff -`, `Index:` and mbox `From ` lines do); " \
                "reword or indent it"
    while lines and not lines[-1].strip():
        lines.pop()
    cut = len(lines)
    while cut > 0 and lines[cut - 1].strip():
        cut -= 1
    if not trailers_follow and is_trailer_block(lines[cut:]):
        return "the body's last paragraph would be read as trailers (`Key: value` lines); " \
            "set trailers with their own options, or reword it"
    return None


def header_problem(*, subject: str, author: str, date: str, body: str,
                   trailers: Sequence[tuple[str, str]]) -> str | None:
    """What is wrong with a patch header made of these, or None: the one check of every
    value patchctl writes into a header (``patchtext.mail_header``)."""
    for what, value in (("the subject", subject), ("the author", author), ("the date", date)):
        problem = line_problem(what, value)
        if problem is not None:
            return problem
    for key, value in trailers:
        problem = trailer_form_problem(key, value)
        if problem is not None:
            return problem
    return body_problem(body, trailers_follow=bool(trailers))


def _under_reproducers(path: str) -> bool:
    parts = PurePosixPath(path).parts
    return len(parts) >= 2 and parts[0] == "reproducers" and ".." not in parts


def _trailer_line(patch: Patch, key: str, glob: str) -> int | None:
    """The header line of the ``key:`` trailer that holds ``glob``, if one does."""
    for number, line in enumerate(patch.text.split("\n")[: patch.diff_line - 1], start=1):
        name, sep, value = line.partition(":")
        if sep and name.strip().lower() == key.lower() and glob in value:
            return number
    return None


def _line_of(patch: Patch, offset: int) -> int:
    header = "\n".join(patch.text.split("\n")[: patch.diff_line - 1])
    return header.count("\n", 0, offset) + 1
