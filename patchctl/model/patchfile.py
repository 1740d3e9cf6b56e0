"""Reading one patch file: mail or DEP-3 headers, trailers, and the diff.

Parsing never touches git. A patch that cannot be parsed at all (empty, not a
diff, truncated) raises ``StackError``; everything else that is wrong with a
patch is a lint finding (see ``model/lint.py``), so one bad trailer does not hide
the rest of the report.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from patchctl import fsutil
from patchctl.errors import StackError

# Trailer / DEP-3 keys patchctl understands; matching is case-insensitive.
KNOWN_KEYS = (
    "Concern",
    "Upstream-Status",
    "Scope",
    "Reproducer",
    "Forwarded",
    "Bug",
    "Origin",
    "Applied-Upstream",
    "Binary",
    "Description",
    "Author",
    "Last-Update",
    "Assisted-by",
    "Co-authored-by",
)
_CANONICAL = {k.lower(): k for k in KNOWN_KEYS}

_KEY_LINE = re.compile(r"^([A-Za-z][A-Za-z0-9-]*):[ \t]*(.*)$")
_DEP3_END = re.compile(r"^---\s*$")
_SUBJECT_PREFIX = re.compile(r"^\s*(\[[^\]]*\]\s*)+")
_DIFF_START = re.compile(r"^(diff --git |Index: |--- )")
_FILE_HEADER = re.compile(r"^diff --git ")
_HUNK_HEADING = re.compile(r"^(@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@).*$", re.M)  # drops the heading
_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)
class Hunk:
    source_start: int
    source_length: int
    target_start: int
    target_length: int
    line: int  # 1-based line of the `@@` header in the patch file
    lines: tuple[str, ...]  # body lines, prefix included, no newline


@dataclass(frozen=True)
class FileDiff:
    source: str | None  # path after stripping; None for /dev/null
    target: str | None
    raw_source: str
    raw_target: str
    line: int  # 1-based line where this file's diff starts in the patch file
    hunks: tuple[Hunk, ...]
    binary: bool = False
    new_mode: str | None = None
    mode_lines: tuple[str, ...] = ()  # "new file mode 100644", "old mode ...", ...

    @property
    def path(self) -> str:
        return self.target or self.source or self.raw_target

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p for p in (self.source, self.target) if p))


@dataclass
class Patch:
    """One parsed patch file. ``metadata`` maps canonical keys to their values."""

    name: str
    path: Path
    strip: int
    subject: str
    author: str
    date: str
    body: str
    metadata: dict[str, list[str]]
    files: tuple[FileDiff, ...]
    diff_line: int  # 1-based line where the diff starts
    text: str
    crlf_damaged: bool = False
    mail_form: bool = False

    def meta(self, key: str) -> str | None:
        values = self.metadata.get(key)
        return values[0] if values else None

    @property
    def concern(self) -> str | None:
        return self.meta("Concern")

    @property
    def upstream_status(self) -> str | None:
        return self.meta("Upstream-Status")

    @property
    def reproducer(self) -> str | None:
        return self.meta("Reproducer")

    @property
    def scope(self) -> list[str]:
        globs: list[str] = []
        for value in self.metadata.get("Scope", []):
            globs.extend(g for g in re.split(r"[\s,]+", value) if g)
        return globs

    @property
    def added(self) -> int:
        return sum(1 for f in self.files for h in f.hunks for ln in h.lines if ln[:1] == "+")

    @property
    def removed(self) -> int:
        return sum(1 for f in self.files for h in f.hunks for ln in h.lines if ln[:1] == "-")

    def normalized_diff(self) -> str:
        """The diff as the fingerprint sees it (docs/FORMATS.md, algorithm pcfp2): every
        line git apply reads, verbatim, from the first file header to the last line of
        the diff (mode lines, index lines, binary payloads included); only hunk section
        headings, the signature and trailing blank lines are left out."""
        lines = _without_signature(self.text.split("\n")[self.diff_line - 1:])
        while lines and not lines[-1]:
            lines.pop()
        return _HUNK_HEADING.sub(r"\1", "\n".join(lines) + "\n") if lines else ""

    def diff_text(self) -> str:
        """The diff alone, as ``git apply`` reads it: from the first file header to the
        end, verbatim, without the mail header, message, trailers, diffstat and
        format-patch signature before and after it."""
        text = "\n".join(_without_signature(self.text.split("\n")[self.diff_line - 1:]))
        return text if text.endswith("\n") else text + "\n"

    @functools.cached_property
    def digest(self) -> str:
        return hashlib.sha256(self.normalized_diff().encode("utf-8", "surrogateescape")).hexdigest()


def read_patch(path: Path, *, name: str | None = None, strip: int = 1) -> Patch:
    return parse_patch(patch_bytes(path), path=path, name=name or path.name, strip=strip)


def patch_bytes(path: Path) -> bytes:
    try:
        return fsutil.read_regular(path, "a patch must be a regular file")
    except fsutil.SpecialFileError as e:
        raise StackError(str(e)) from e
    except OSError as e:
        raise StackError(f"{path}: cannot read patch: {e.strerror}") from e


def parse_patch(data: bytes, *, path: Path, name: str, strip: int = 1) -> Patch:
    if not data.strip():
        raise StackError(f"{name}: the patch is empty")
    text = data.decode("utf-8", "surrogateescape")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    crlf = "\r" in text and any(ln.endswith("\r") for ln in lines
                                 if _DIFF_START.match(ln) or ln.startswith("@@"))
    if crlf:
        # Undo the damage for parsing so the rest of the report is still useful.
        lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
        text = "\n".join(lines) + "\n"

    diff_at = _find_diff_start(lines)
    if diff_at is None:
        raise StackError(f"{name}: not a diff (no `diff --git` or `---/+++` file header found)")
    header = lines[:diff_at]
    mail_form = bool(header) and (header[0].startswith("From ") or _is_mail_header(header))
    if mail_form:
        subject, author, date, body, metadata = _parse_mail(header)
    else:
        subject, author, date, body, metadata = _parse_dep3(header)
    files = _parse_diff(lines, diff_at, strip=strip, name=name)
    if not files:
        raise StackError(f"{name}: not a diff (no file changes found)")
    return Patch(
        name=name,
        path=path,
        strip=strip,
        subject=subject,
        author=author,
        date=date,
        body=body,
        metadata=metadata,
        files=tuple(files),
        diff_line=diff_at + 1,
        text=text,
        crlf_damaged=crlf,
        mail_form=mail_form,
    )


def _find_diff_start(lines: list[str]) -> int | None:
    for i, line in enumerate(lines):
        if line.startswith("diff --git "):
            return i
        if line.startswith("Index: ") and i + 1 < len(lines) and lines[i + 1].startswith("===="):
            return i
        if (
            line.startswith("--- ")
            and i + 1 < len(lines)
            and lines[i + 1].startswith("+++ ")
            and i + 2 < len(lines)
            and lines[i + 2].startswith("@@")
        ):
            return i
    return None


def _is_mail_header(header: list[str]) -> bool:
    keys = {m.group(1).lower() for ln in header[:8] if (m := _KEY_LINE.match(ln))}
    return "subject" in keys and "from" in keys


def _unfold(header: list[str]) -> list[tuple[str, str]]:
    """RFC 822 / DEP-3 headers: a line starting with whitespace continues the last one."""
    pairs: list[tuple[str, str]] = []
    for line in header:
        if line[:1] in (" ", "\t") and pairs:
            key, value = pairs[-1]
            pairs[-1] = (key, f"{value} {line.strip()}".strip())
        elif m := _KEY_LINE.match(line):
            pairs.append((m.group(1), m.group(2).strip()))
    return pairs


def _decode(value: str) -> str:
    if "=?" not in value:
        return value  # not RFC 2047-encoded: skip importing the email package
    from email.header import decode_header, make_header

    try:
        return str(make_header(decode_header(value)))
    except (ValueError, LookupError):
        return value


def _add_meta(metadata: dict[str, list[str]], key: str, value: str) -> None:
    canonical = _CANONICAL.get(key.lower())
    if canonical:
        metadata.setdefault(canonical, []).append(value)


def _parse_mail(header: list[str]) -> tuple[str, str, str, str, dict[str, list[str]]]:
    start = 1 if header and header[0].startswith("From ") else 0
    try:
        blank = header.index("", start)
    except ValueError:
        blank = len(header)
    fields = {k.lower(): v for k, v in _unfold(header[start:blank])}
    subject = _SUBJECT_PREFIX.sub("", _decode(fields.get("subject", ""))).strip()
    author = _decode(fields.get("from", ""))
    date = fields.get("date", "")
    body_lines = header[blank + 1 :]
    # The body ends at the `---` line that opens the diffstat.
    if "---" in body_lines:
        body_lines = body_lines[: len(body_lines) - 1 - body_lines[::-1].index("---")]
    while body_lines and not body_lines[-1].strip():
        body_lines.pop()
    metadata: dict[str, list[str]] = {}
    # Trailers are the last paragraph of the body.
    cut = len(body_lines)
    while cut > 0 and body_lines[cut - 1].strip():
        cut -= 1
    trailer_block = body_lines[cut:]
    if is_trailer_block(trailer_block):
        for key, value in _unfold(trailer_block):
            _add_meta(metadata, key, value)
        body_lines = body_lines[:cut]
    while body_lines and not body_lines[-1].strip():
        body_lines.pop()
    return subject, author, date, "\n".join(body_lines), metadata


def is_trailer_block(paragraph: Sequence[str]) -> bool:
    """A message's last paragraph is its trailers when every line is ``Key: value`` or
    continues one (starts with whitespace); the one test, for reading and writing."""
    return bool(paragraph) and all(_KEY_LINE.match(ln) or ln[:1] in " \t" for ln in paragraph)


def _parse_dep3(header: list[str]) -> tuple[str, str, str, str, dict[str, list[str]]]:
    metadata: dict[str, list[str]] = {}
    prose: list[str] = []
    pairs = _unfold(header)
    for key, value in pairs:
        _add_meta(metadata, key, value)
    for line in header:
        if _DEP3_END.match(line):
            break  # what follows the `---` that ends a DEP-3 header (a diffstat) is no prose
        if not _KEY_LINE.match(line) and line[:1] not in (" ", "\t"):
            prose.append(line)
    fields = {k.lower(): v for k, v in pairs}
    description = fields.get("description") or fields.get("subject") or ""
    subject, _, rest = description.partition(". ")
    body = "\n".join(x for x in [rest, *prose] if x).strip()
    return subject.strip(), fields.get("author", ""), fields.get("last-update", ""), body, metadata


def _strip(raw: str, strip: int) -> str | None:
    raw = raw.split("\t", 1)[0].strip()
    if raw.startswith('"') and raw.endswith('"'):
        raw = raw[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
    if raw == "/dev/null":
        return None
    parts = raw.split("/")
    if strip and len(parts) <= strip:
        return raw  # cannot strip; lint reports the odd path
    return "/".join(parts[strip:])


def _parse_diff(lines: list[str], start: int, *, strip: int,
                name: str) -> list[FileDiff]:
    """File diffs and hunks. unidiff reads the file headers and checks every hunk's length
    (truncation fails) without keeping a line object per diff line (``metadata_only``: a
    50 MB patch cost ~800 MB as objects); the hunk bodies are slices of ``lines``."""
    from unidiff import PatchSet  # type: ignore[attr-defined]
    from unidiff.errors import UnidiffParseError

    body = _without_signature(lines[start:])
    try:
        # Line by line from a generator: no second copy of the whole text is made.
        patchset = PatchSet((ln + "\n" for ln in body), metadata_only=True)
    except UnidiffParseError as e:
        raise StackError(f"{name}: malformed or truncated diff: {e}") from e
    end = start + len(body)
    headers = iter([i for i in range(start, end) if _HUNK_HEADER.match(lines[i])])

    files: list[FileDiff] = []
    after = start  # index in ``lines`` just past the previous file's diff
    for pf in patchset:
        hunks = []
        for h in pf:
            at = next(headers, None)
            if at is None:
                raise StackError(f"{name}: malformed diff: a hunk header is out of place")
            stop = _hunk_end(lines, at, h.source_length, h.target_length, end)
            hunks.append(Hunk(source_start=h.source_start, source_length=h.source_length,
                              target_start=h.target_start, target_length=h.target_length,
                              line=at + 1, lines=tuple(_body_line(ln)
                                                       for ln in lines[at + 1:stop])))
        line_no, after = _file_start(lines, hunks, start, after)
        raw_source, raw_target = pf.source_file, pf.target_file
        modes = _mode_lines(pf.patch_info)
        files.append(
            FileDiff(
                source=_strip(raw_source, strip),
                target=_strip(raw_target, strip),
                raw_source=raw_source,
                raw_target=raw_target,
                line=line_no,
                hunks=tuple(hunks),
                binary=bool(pf.is_binary_file),
                new_mode=_new_mode(modes),
                mode_lines=modes,
            )
        )
    return files


def _hunk_end(lines: list[str], at: int, old: int, new: int, end: int) -> int:
    """Index just past the body of the hunk whose header is ``lines[at]`` (unidiff has
    checked that the body is whole), a trailing `\\ No newline` marker included."""
    i = at + 1
    while i < end and (old > 0 or new > 0):
        sign = lines[i][:1]
        if sign in ("", " ", "\r"):
            old, new = old - 1, new - 1
        elif sign == "-":
            old -= 1
        elif sign == "+":
            new -= 1
        i += 1
    return i + 1 if i < end and lines[i][:1] == "\\" else i


def _body_line(line: str) -> str:
    """A hunk body line as unidiff wrote it: an empty context line gets its space back."""
    return " " + line if not line or line[0] == "\r" else line


def _file_start(lines: list[str], hunks: list[Hunk], start: int,
                after: int) -> tuple[int, int]:
    """(1-based line where this file's diff starts, index just past its last line).

    Its header is the `diff --git`/`Index:` line before its `---` line, if one lies
    after the previous file; a plain `---/+++` (quilt-style) diff starts at `---`.
    """
    if not hunks:  # no hunks (binary, mode or rename only): only git diffs have those
        at = next((i for i in range(after, len(lines)) if _FILE_HEADER.match(lines[i])), after)
        return at + 1, at + 1
    dashes = hunks[0].line - 1 - 2  # `---`, `+++`, then the first `@@`
    at = next((i for i in range(dashes - 1, after - 1, -1)
               if lines[i].startswith(("diff --git ", "Index: "))), dashes)
    return at + 1, hunks[-1].line + len(hunks[-1].lines)


def _swap_sign(line: str) -> str:
    sign = line[:1]
    return {"+": "-", "-": "+"}.get(sign, sign) + line[1:]


def _mode_lines(info: Iterable[object] | None) -> tuple[str, ...]:
    lines = (str(line).strip() for line in info or ())
    return tuple(t for t in lines if t.startswith(("new file mode ", "deleted file mode ",
                                                    "old mode ", "new mode ")))


def _new_mode(modes: tuple[str, ...]) -> str | None:
    for text in modes:
        for prefix in ("new file mode ", "new mode "):
            if text.startswith(prefix):
                return text[len(prefix) :]
    return None


def _without_signature(lines: list[str]) -> list[str]:
    """Drop git format-patch's `-- ` / version signature after the last hunk. A signature
    has text after its `-- ` line; without any, the line is the diff's own (a removed
    `- ` line)."""
    for i in range(len(lines) - 1, -1, -1):
        if lines[i] == "-- ":
            tail = lines[i + 1 :]
            if len(tail) <= 3 and any(tail) and \
                    all(not t.startswith(("+", "-", " ", "@@")) for t in tail):
                return lines[:i]
            break
    return lines


def apply_hunks(data: bytes, hunks: Sequence[Hunk]) -> bytes | None:
    """``data`` with ``hunks`` applied as ``git apply`` applies them at fuzz 0, or None when
    one does not match. Each hunk's pre-image (context and `-` lines) must match whole; it
    is looked for at its header's target line in the file as changed so far, then one line
    after, one before, two after, and so on (git's order). A hunk starting at line 0 or 1
    must match at the beginning, one without trailing context at the end."""
    image = image_lines(data)
    for h in hunks:
        if (found := match_hunk(image, h)) is None:
            return None
        image[found[0]:found[0] + len(found[1])] = found[2]
    return "".join(image).encode("utf-8", "surrogateescape")


def image_lines(data: bytes) -> list[str]:
    """A file's lines, each with its newline (the last may lack one), as hunks match them."""
    image = [ln + "\n" for ln in data.decode("utf-8", "surrogateescape").split("\n")]
    image[-1] = image[-1][:-1]
    return image if image[-1] else image[:-1]


def match_hunk(image: Sequence[str], h: Hunk) -> tuple[int, list[str], list[str]] | None:
    """Where ``h`` goes in ``image`` at fuzz 0, as ``apply_hunks`` looks: (its first line's
    index, its pre-image, its post-image); None when it matches nowhere."""
    old, new, trailing = _sides(h.lines)
    at = _find(image, old, h.target_start - 1 if h.target_start else 0,
               begin=h.source_start <= 1, end=not trailing)
    return None if at is None else (at, old, new)


def _sides(lines: Sequence[str]) -> tuple[list[str], list[str], int]:
    """Pre-image, post-image (lines with their newlines) and trailing context lines."""
    old: list[str] = []
    new: list[str] = []
    trailing = 0
    for i, line in enumerate(lines):
        sign = line[:1]
        if sign == "\\":
            continue
        value = line[1:] if i + 1 < len(lines) and lines[i + 1][:1] == "\\" else line[1:] + "\n"
        if sign in (" ", "-"):
            old.append(value)
        if sign in (" ", "+"):
            new.append(value)
        trailing = trailing + 1 if sign == " " else 0
    return old, new, trailing


def _find(image: Sequence[str], old: list[str], line: int, *, begin: bool, end: bool) -> int | None:
    size, n = len(image), len(old)
    line = min(line, size)
    for d in range(max(line, size - line) + 1):
        for at in ((line + d, line - d) if d else (line,)):
            if 0 <= at <= size - n and (not begin or at == 0) and \
                    (not end or at + n == size) and image[at:at + n] == old:
                return at
    return None
