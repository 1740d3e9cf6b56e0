"""patchctl's deterministic patch-file text, and how two versions of a patch differ.

A patch file patchctl writes is ``git format-patch`` form with everything that
varies between machines or runs pinned down: the ``From`` line carries the zero
commit id, there is no version signature, and the diffstat and diff come from
``gitrepo.format_diff`` (fixed plumbing flags, full index lines). Regenerating
a patch that did not change therefore gives the same bytes.

No git here: the diff text is produced by ``gitrepo`` and passed in.
"""

from __future__ import annotations

import difflib
import email.utils
import re
from collections.abc import Iterable, Sequence
from email.header import Header
from pathlib import Path

from patchctl.errors import InputError
from patchctl.model import lint
from patchctl.model.patchfile import Patch, is_trailer_block, parse_patch

ZERO_FROM = "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001"
_FROM_LINE = re.compile(r"^From [0-9a-f]{40} ")
_TRAILER = re.compile(r"^([A-Za-z][A-Za-z0-9-]*):[ \t]*(.*)$")
_HUNK_POS = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")

UNCHANGED, CONTEXT, CONTENT = "unchanged", "context-only", "content-changed"


def header_text(patch: Patch) -> str:
    """Everything above the diffstat (mail form) or the diff (DEP-3 form), kept verbatim.

    Only the ``From <sha>`` line is normalized to the zero commit: it is
    format-patch's mbox separator and says nothing about the change.
    """
    lines = patch.text.split("\n")[: patch.diff_line - 1]
    if patch.mail_form and "---" in lines:
        lines = lines[: len(lines) - 1 - lines[::-1].index("---")]
    while lines and not lines[-1].strip():
        lines.pop()
    if lines and _FROM_LINE.match(lines[0]):
        lines[0] = ZERO_FROM
    return "\n".join(lines) + "\n" if lines else ""


def render(header: str, stat_and_diff: str, *, mail_form: bool = True) -> str:
    """A patch file: ``header``, then (mail form) ``---`` and the diffstat, then the diff.

    ``stat_and_diff`` is ``gitrepo.format_diff`` output: diffstat, a blank line,
    the diff. A DEP-3 header keeps its shape: header, blank line, diff only,
    because a diffstat there would be read as part of the description.
    """
    head = header.rstrip("\n")
    if mail_form:
        return f"{head}\n---\n{stat_and_diff}"
    diff = stat_and_diff[stat_and_diff.index("diff --git "):]
    return f"{head}\n\n{diff}" if head else diff


def mail_header(*, author: str, date: str, subject: str, body: str,
                trailers: Sequence[tuple[str, str]]) -> str:
    """A canonical format-patch header; non-ASCII text is MIME-encoded as git does.

    Every value is checked first (``lint.header_problem``): one that would add a header,
    a trailer or a diff line of its own is refused, whichever command brought it."""
    _refuse(lint.header_problem(author=author, date=date, subject=subject, body=body,
                                trailers=trailers))
    text = "\n".join([subject, body, *(f"{k}: {v}" for k, v in trailers)])
    lines = [ZERO_FROM, f"From: {_encode_address(author)}", f"Date: {date}",
             f"Subject: [PATCH] {_encode(subject)}"]
    if not text.isascii():
        lines += ["MIME-Version: 1.0", "Content-Type: text/plain; charset=UTF-8",
                  "Content-Transfer-Encoding: 8bit"]
    lines.append("")
    if body.strip():
        lines += [body.strip("\n"), ""]
    lines += [f"{k}: {v}" for k, v in trailers]
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + "\n"


def now_rfc2822() -> str:
    return email.utils.formatdate(localtime=True)


def _encode(value: str) -> str:
    return value if value.isascii() else Header(value, "utf-8").encode()


def _encode_address(author: str) -> str:
    name, address = email.utils.parseaddr(author)
    if not address:
        return _encode(author)
    return email.utils.formataddr((name, address)) if name.isascii() else \
        f"{_encode(name)} <{address}>"


def split_trailers(message: str) -> tuple[str, list[tuple[str, str]]]:
    """A commit message body and its trailer block (the last paragraph of `Key: value` lines)."""
    lines = message.rstrip("\n").split("\n")
    cut = len(lines)
    while cut > 0 and lines[cut - 1].strip():
        cut -= 1
    block = lines[cut:]
    if not is_trailer_block(block):
        return message.strip("\n"), []
    trailers: list[tuple[str, str]] = []
    for ln in block:
        if ln[:1] in " \t" and trailers:
            key, value = trailers[-1]
            trailers[-1] = (key, f"{value} {ln.strip()}")
        elif m := _TRAILER.match(ln):
            trailers.append((m.group(1), m.group(2).strip()))
    return "\n".join(lines[:cut]).strip("\n"), trailers


def trailers(patch: Patch) -> list[tuple[str, str]]:
    """Every trailer of a patch in order (all keys, not only those patchctl reads)."""
    lines = header_text(patch).split("\n")
    if patch.mail_form:
        lines = lines[lines.index("") + 1:] if "" in lines else []
        return split_trailers("\n".join(lines))[1]
    return [(m.group(1), m.group(2).strip()) for ln in lines if (m := _TRAILER.match(ln))]


def set_trailer(header: str, key: str, value: str | None, *, mail_form: bool = True) -> str:
    """``header`` (``header_text`` output) with every ``key:`` line replaced by one
    ``key: value`` where the first stood, or appended to the trailers; removed with None.

    In mail form only the trailer block (the message's last paragraph) is
    touched; in DEP-3 form, the header's ``Key: value`` lines. A key or value that is
    not one trailer line (``lint.trailer_form_problem``) is refused.
    """
    _refuse(lint.trailer_form_problem(key, "" if value is None else value))
    lines = header.rstrip("\n").split("\n") if header.strip() else []
    start = 0
    if mail_form:
        start = lines.index("") + 1 if "" in lines else len(lines)
        cut = len(lines)
        while cut > start and lines[cut - 1].strip():
            cut -= 1
        block = lines[cut:]
        start = cut if is_trailer_block(block) else len(lines)
    out = lines[:start]
    placed = False
    skipping = False
    for ln in lines[start:]:
        m = _TRAILER.match(ln)
        if skipping and ln[:1] in " \t":
            continue  # a continuation of a replaced line
        skipping = bool(m and m.group(1).lower() == key.lower())
        if not skipping:
            out.append(ln)
        elif not placed and value is not None and m:
            out.append(f"{m.group(1)}: {value}")  # the spelling already there
            placed = True
    if not placed and value is not None:
        if mail_form and start == len(lines):
            out.append("")  # a new trailer block after the body
        out.append(f"{key}: {value}")
    return "\n".join(out) + "\n"


def set_body(header: str, body: str) -> str:
    """``header`` (mail-form ``header_text`` output) with the message body, the text
    between the mail headers and the trailer block, replaced by ``body`` (removed when
    blank). The mail headers and the trailer block are kept verbatim; a non-ASCII body
    gets the MIME headers format-patch writes for it. A body that could add to the diff
    or the trailers (``lint.body_problem``: with no trailer block after it, a last
    paragraph of `Key: value` lines would become one) is refused."""
    lines = header.rstrip("\n").split("\n") if header.strip() else []
    cut = lines.index("") if "" in lines else len(lines)
    head, rest = lines[:cut], lines[cut + 1:]
    start = len(rest)
    while start > 0 and rest[start - 1].strip():
        start -= 1
    block = rest[start:]
    if not is_trailer_block(block):
        block = []
    _refuse(lint.body_problem(body, trailers_follow=bool(block)))
    if not body.isascii() and not any(ln.lower().startswith("content-type:") for ln in head):
        head += ["MIME-Version: 1.0", "Content-Type: text/plain; charset=UTF-8",
                 "Content-Transfer-Encoding: 8bit"]
    out = [*head, ""]
    if body.strip():
        out += [body.strip("\n"), ""]
    out += block
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"


def _refuse(problem: str | None) -> None:
    if problem is not None:
        raise InputError(f"{problem}; nothing was written")


def check_options(checks: Iterable[tuple[str, str | None]]) -> None:
    """Refuse the first (option, ``lint`` problem) pair with a problem, naming the option:
    what a command checks of its options before work that ``mail_header`` would refuse."""
    for option, problem in checks:
        if problem is not None:
            raise InputError(f"{option}: {problem}; nothing was written")


def reparse(text: str, *, name: str, path: Path, strip: int = 1) -> Patch:
    return parse_patch(text.encode("utf-8", "surrogateescape"), path=path, name=name, strip=strip)


# -- range-diff style comparison --------------------------------------------------------


def changes(patch: Patch) -> list[tuple[str, tuple[str, ...]]]:
    """Per file, the changed lines only: what a reviewer would call the patch's content."""
    return [(f.path, tuple(ln for h in f.hunks for ln in h.lines if ln[:1] in "+-"))
            for f in patch.files]


def compare(old: Patch, new: Patch) -> str:
    """``unchanged`` (same normalized diff), ``context-only`` (same +/- lines), or
    ``content-changed``."""
    if old.digest == new.digest:
        return UNCHANGED
    return CONTEXT if changes(old) == changes(new) else CONTENT


def interdiff(old: Patch, new: Patch, *, name: str = "patch") -> str:
    """A diff of the two diffs, hunk positions blanked so moved context does not show."""

    def lines(p: Patch) -> list[str]:
        out: list[str] = []
        for f in p.files:
            out += [f"--- {f.raw_source}", f"+++ {f.raw_target}"]
            for h in f.hunks:
                out.append("@@")
                out += list(h.lines)
        return out

    diff = difflib.unified_diff(lines(old), lines(new), f"a/{name}", f"b/{name}", lineterm="",
                                n=2)
    return "\n".join(diff) + "\n"


def slug(text: str, *, limit: int = 52) -> str:
    """format-patch's file-name slug of a subject."""
    s = re.sub(r"[^A-Za-z0-9._]+", "-", text).strip("-.")
    s = re.sub(r"\.{2,}", ".", s)
    return s[:limit].rstrip("-.") or "patch"


_NUMBERED = re.compile(r"^(\d{4})-")


def next_number(names: Sequence[str]) -> int:
    numbers = [int(m.group(1)) for n in names if (m := _NUMBERED.match(n))]
    return max(numbers, default=0) + 1


def numbered_name(number: int, subject: str) -> str:
    return f"{number:04d}-{slug(subject)}.patch"


_LEADING_NUMBER = re.compile(r"^([0-9]+)-(?=[^/]*$)")  # a file in patches/ itself


def renumbered(names: Sequence[str]) -> dict[str, str]:
    """Old name -> new name for each of ``names`` (a series, in order) whose leading
    ``NNNN-`` number is not its 1-based position: the same name with that position,
    zero-padded to 4 digits or to the widest number the names already carry. A name
    without a leading number (or in a subdirectory) is left out."""
    found = [(i, n, m) for i, n in enumerate(names, 1) if (m := _LEADING_NUMBER.match(n))]
    width = max([4, *(len(m.group(1)) for _, _, m in found)])
    return {n: f"{i:0{width}d}-{n[m.end():]}" for i, n, m in found if int(m.group(1)) != i}


def unnumbered(names: Sequence[str]) -> list[str]:
    """The names ``renumbered`` leaves alone: no leading ``NNNN-`` number."""
    return [n for n in names if not _LEADING_NUMBER.match(n)]
