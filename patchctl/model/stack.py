"""The stack on disk: ``series``, ``patches/``, the pin file and the lock.

No git here. Formats are documented in docs/FORMATS.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from patchctl import fsutil, tomlwrite
from patchctl.errors import StackError
from patchctl.untrusted import shorten

if TYPE_CHECKING:  # the parser loads with the first patch read: verify starts git before
    from patchctl.model.patchfile import Patch

SERIES = "series"
PATCHES = "patches"
PIN_FILE = "upstream.toml"
LOCK_FILE = "stack.lock"
LOCK_FORMAT = 1
# where the upstream keeps its tests (`burden` counts their lines apart), unless the pin
# file's `test_paths` says otherwise: path prefixes, `/` ending a directory
DEFAULT_TEST_PATHS = ("tests/",)

_HEX40 = re.compile(r"^[0-9a-f]{40}$")
_STRIP = re.compile(r"^-p(\d+)$")
_NUMBER = re.compile(r"^(\d+)-")


class SeriesEntry(NamedTuple):
    """One line of the series (a NamedTuple: a series of 2,000 makes 2,000 of them before
    verify can start git, and a frozen dataclass costs three times as much)."""

    name: str
    strip: int
    line: int


@dataclass(frozen=True)
class Pin:
    name: str
    url: str
    commit: str
    tag: str | None = None
    test_paths: tuple[str, ...] | None = None  # None: DEFAULT_TEST_PATHS, and not written

    @property
    def tests(self) -> tuple[str, ...]:
        """The path prefixes of the upstream's tests."""
        return DEFAULT_TEST_PATHS if self.test_paths is None else self.test_paths

    def is_test(self, path: str) -> bool:
        return path.startswith(self.tests)

    def to_toml(self) -> str:
        values: dict[str, tomlwrite.Value] = {"name": self.name, "url": self.url,
                                              "commit": self.commit}
        if self.tag:
            values["tag"] = self.tag
        if self.test_paths is not None:
            values["test_paths"] = list(self.test_paths)
        return tomlwrite.render("The upstream this stack applies to. `commit` is the pin; "
                                "a tag is informative only.", values)


@dataclass(frozen=True)
class LockedPatch:
    file: str
    strip: int
    digest: str


@dataclass(frozen=True)
class Lock:
    algorithm: str
    name: str
    pin: str
    fingerprint: str
    patches: tuple[LockedPatch, ...]
    format: int = LOCK_FORMAT


@dataclass
class Stack:
    """A stack directory. Patches are parsed lazily and in series order."""

    root: Path

    @property
    def series_path(self) -> Path:
        return self.root / SERIES

    @property
    def patches_dir(self) -> Path:
        return self.root / PATCHES

    @property
    def pin_path(self) -> Path:
        return self.root / PIN_FILE

    @property
    def lock_path(self) -> Path:
        return self.root / LOCK_FILE

    def series(self) -> list[SeriesEntry]:
        return parse_series(_read_text(self.series_path), source=self.series_path)

    def pin(self) -> Pin:
        return parse_pin(_read_text(self.pin_path), source=self.pin_path)

    def lock(self) -> Lock | None:
        text = self.lock_text()
        return None if text is None else parse_lock(text, source=self.lock_path)

    def lock_text(self) -> str | None:
        """The lock file's text (a regular file only), or None when there is none."""
        if not self.lock_path.exists():
            return None
        return _read_text(self.lock_path)

    def resolve(self, query: str) -> SeriesEntry:
        """The series entry QUERY names (see ``resolve_name``)."""
        entries = self.series()
        return entries[resolve_name([e.name for e in entries], query,
                                    where=str(self.series_path))]

    def patches(self) -> list[Patch]:
        from patchctl.model.patchfile import read_patch

        entries = self.series()
        patches = []
        for entry in entries:
            path = self.patches_dir / entry.name
            if not path.is_file():
                raise StackError(
                    f"{self.series_path}:{entry.line}: series names {entry.name!r}, "
                    f"but {path} does not exist"
                )
            patches.append(read_patch(path, name=entry.name, strip=entry.strip))
        return patches


def find_stack(start: Path) -> Stack:
    """The stack for a project: ``start/stack`` or ``start`` itself if it holds a series."""
    for candidate in (start / "stack", start):
        if (candidate / SERIES).is_file() or (candidate / PIN_FILE).is_file():
            # Absolute: patch paths are handed to `git -C <upstream>`, which would
            # resolve a relative one against the upstream, not the caller's cwd.
            return Stack(candidate.absolute())
    raise StackError(
        f"no stack found in {start} (expected {start / 'stack' / SERIES}); "
        "create one with `patchctl init --upstream URL --pin COMMIT`"
    )


def parse_series(text: str, *, source: Path | str = SERIES) -> list[SeriesEntry]:
    entries: list[SeriesEntry] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        if len(raw) <= 255 and _PLAIN_NAME.fullmatch(raw):
            name, strip = raw, 1  # the usual line, a plain name alone: one match (of 2,000)
        else:
            line = raw.split("#", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
            if not line:
                continue
            name, *options = line.split()
            strip = 1
            for i, option in enumerate(options):
                m = _STRIP.match(option)
                if not m:
                    raise StackError(
                        f"{source}:{number}: unknown option {option!r} for {name} "
                        "(only -pN is allowed)"
                    )
                if i:
                    raise StackError(f"{source}:{number}: {name} has {' '.join(options)}: "
                                     "give one -pN")
                strip = int(m.group(1))
            try:
                check_patch_name(name)
            except StackError as e:
                raise StackError(f"{source}:{number}: {e}") from e
        if name in seen:
            raise StackError(
                f"{source}:{number}: {name} is listed twice (first on line {seen[name]})"
            )
        seen[name] = number
        entries.append(SeriesEntry(name, strip, number))
    return entries


class PatchNameError(StackError):
    """A name on the command line names no patch, or several; ``candidates`` lists them."""

    def __init__(self, message: str, candidates: Sequence[str]) -> None:
        super().__init__(message)
        self.candidates = list(candidates)


def resolve_name(names: Sequence[str], query: str, *, where: str = SERIES) -> int:
    """0-based position in ``names`` (series order) of the one patch ``query`` names.

    The one way every command names an existing patch (docs/FORMATS.md), tried
    in this order; the first rule that matches anything decides:

    1. ``@N`` (``@`` and digits): the patch at position N in the series (the ``#``
       column of ``patchctl series``);
    2. the file name, with or without ``.patch``;
    3. a number (``9``, ``0009``): the patch whose file name carries that number
       (``0009-...``), never a position, so a number keeps naming the same patch
       after a ``delete`` or ``move``; a number no file carries names nothing;
    4. the name without its number and ``.patch`` (``tiny-bump-op-02``);
    5. a part of the file name that only one patch has (``bump``).

    Naming several patches, or none, raises ``PatchNameError`` (exit 2) listing
    the candidates.
    """
    query = query.strip()
    shown = f"'{shorten(query, 60)}'"  # as an error line quotes it: escaped, cut short
    number = _digits(query)
    if query.startswith("@") and _digits(query[1:]):
        return _position(names, query, shown, where)
    stems = [n.removesuffix(".patch") for n in names]
    rules: list[Callable[[int], bool]] = [
        lambda i: query in (names[i], stems[i]),
        lambda i: number and _same_number(names[i], query),
        lambda i: _NUMBER.sub("", stems[i]) == query,
        lambda i: bool(query) and query in names[i],
    ]
    for n, rule in enumerate(rules):
        hits = [i for i in range(len(names)) if rule(i)]
        if len(hits) == 1:
            return hits[0]
        if hits:
            listed = [names[i] for i in hits]
            raise PatchNameError(
                f"{shown} names {len(hits)} patches in {where} ({_listing(listed)}); "
                "give the file name", listed)
        if n == 1 and number:  # a number is a file's number, nothing else
            at = _index(query, len(names))
            hint = f"; `@{at + 1}` is the patch at position {at + 1} ({names[at]})" \
                if at is not None else ""
            raise PatchNameError(f"no patch file in {where} carries the number "
                                 f"{shorten(query, 60)}{hint}; give a file name "
                                 "(`patchctl series` lists them)",
                                 [names[at]] if at is not None else [])
    import difflib

    close = difflib.get_close_matches(query, [*names, *stems], n=5, cutoff=0.5)
    close = list(dict.fromkeys(n if n in names else f"{n}.patch" for n in close))
    hint = f" (did you mean {_listing(close)}?)" if close else ""
    raise PatchNameError(f"no patch named {shown} in {where}{hint}; give a file name, a "
                         "file's number, @POSITION or a unique part of a name "
                         "(`patchctl series` lists them)", close)


def _position(names: Sequence[str], query: str, shown: str, where: str) -> int:
    """``@N``: the N-th patch of the series (1-based, as ``patchctl series`` numbers them)."""
    at = _index(query[1:], len(names))
    if at is None:
        span = f"positions 1 to {len(names)}" if names else "no patches"
        raise PatchNameError(f"{shown}: {where} has {span}", [])
    return at


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _index(digits: str, count: int) -> int | None:
    """0-based index of the 1-based position ``digits``, None outside 1..count."""
    digits = digits.lstrip("0")
    return int(digits) - 1 if digits and len(digits) <= len(str(count)) and \
        int(digits) <= count else None


def _same_number(name: str, digits: str) -> bool:
    """Whether file ``name`` starts with the number ``digits`` (leading zeros aside)."""
    m = _NUMBER.match(name)
    return m is not None and m.group(1).lstrip("0") == digits.lstrip("0")


def select_names(names: Sequence[str], queries: Sequence[str], *,
                 concerns: Sequence[str | None] | None = None, where: str = SERIES) -> list[int]:
    """Positions (series order, each once) of the patches ``queries`` name, for commands
    that take several: each query as ``resolve_name`` reads it or, given ``concerns``
    (each patch's, or None), a concern standing for every patch of it."""
    chosen: set[int] = set()
    for query in queries:
        try:
            chosen.add(resolve_name(names, query, where=where))
        except PatchNameError:
            hits = [i for i, c in enumerate(concerns or ()) if c is not None and c == query]
            if not hits:
                raise
            chosen.update(hits)
    return sorted(chosen)


def _listing(names: Sequence[str], limit: int = 5) -> str:
    more = f", and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


# names ``check_patch_name`` accepts at a glance: ASCII parts, none hidden or empty
_PLAIN_NAME = re.compile(r"[\w+-][\w.+-]*(?:/[\w+-][\w.+-]*)*", re.ASCII)
_NAME_PART = re.compile(r"^[^.\s\\#\x00-\x1f\x7f][^\s\\#\x00-\x1f\x7f]*$")


def check_patch_name(name: str, *, subdirs: bool = True) -> str:
    """Refuse a patch name that would leave ``patches/`` or break the series format.

    The one check for every name patchctl reads (series lines, edit state) or is
    given (``new NAME``): relative, ``/``-separated parts, none empty or hidden
    (so no ``.``/``..``), without whitespace, ``#``, ``\\`` or control characters;
    no subdirectory unless ``subdirs``.
    """
    if len(name) <= 255 and _PLAIN_NAME.fullmatch(name) and (subdirs or "/" not in name):
        return name  # the usual name, in one match (a series names thousands)
    parts = name.split("/")
    if any(len(p.encode("utf-8", "surrogateescape")) > 255 for p in parts):  # NAME_MAX
        raise StackError(f"patch name {name[:40]!r}...: longer than a file name may be "
                         "(255 bytes)")
    if name.startswith("/") or ".." in name.replace("\\", "/").split("/"):
        raise StackError(f"patch name {name!r} leaves patches/")
    if not subdirs and len(parts) > 1:
        raise StackError(f"patch name {name!r}: a name, not a path (no `/`)")
    bad = next((p for p in parts if not _NAME_PART.match(p)), None)
    if bad is not None:
        raise StackError(f"patch name {name!r}: {bad!r} is not a plain file name (empty, "
                         "hidden, or with whitespace, #, \\ or control characters)")
    return name


def rewrite_series(text: str, *, dropped: Collection[str] = (), restrip: Collection[str] = (),
                   append: Sequence[str] = ()) -> str:
    """The series with entries dropped, strip levels reset to -p1, names appended;
    comments, blank lines and order kept (``edit_series`` does the editing)."""
    kept = [e.name for e in parse_series(text) if e.name not in dropped]
    return edit_series(text, [*kept, *append], regenerated=restrip)


def edit_series(text: str, order: Sequence[str], *, renamed: Mapping[str, str] | None = None,
                regenerated: Collection[str] = ()) -> str:
    """The series text with its entries replaced by ``order`` (the new names, in order):
    the one way any command edits a series.

    Comment and blank lines stay where they are; each entry line keeps its
    options and inline comment, moving with its patch (``renamed`` maps an old
    name to the new one). Entries slot into the old entry lines in order;
    surplus entries go after the last one. ``regenerated`` names patches
    rewritten in patchctl's form: their strip level goes back to -p1.
    """
    renamed = dict(renamed or {})
    old_of = {new: old for old, new in renamed.items()}
    lines = text.splitlines()
    slots: list[int] = []
    own: dict[str, str] = {}
    for i, raw in enumerate(lines):
        words = raw.split("#", 1)[0].split()
        if words and not raw.lstrip().startswith("#"):
            slots.append(i)
            own[words[0]] = raw
    rendered: list[str] = []
    for name in order:
        raw = own.get(old_of.get(name, name), name)
        old = raw.split()[0]
        at = raw.index(old)
        if name in regenerated:
            _, hash_, comment = raw.partition("#")
            raw = name + (f"  {hash_}{comment}" if hash_ else "")
        else:
            raw = raw[:at] + name + raw[at + len(old):]
        rendered.append(raw)
    for slot, raw in zip(slots, rendered, strict=False):
        lines[slot] = raw
    drop = set(slots[len(rendered):])
    extra = rendered[len(slots):]
    out: list[str] = []
    last = slots[-1] if slots else len(lines) - 1
    for i, raw in enumerate(lines):
        if i not in drop:
            out.append(raw)
        if i == last:
            out += extra
            extra = []
    return "\n".join(out + extra) + "\n"


def parse_pin(text: str, *, source: Path | str = PIN_FILE) -> Pin:
    data = _plain_toml(text)
    if data is None:
        data = _toml(text, source)
    missing = [k for k in ("name", "url", "commit") if not isinstance(data.get(k), str)]
    if missing:
        raise StackError(f"{source}: missing {', '.join(missing)} (see docs/FORMATS.md)")
    commit = data["commit"].strip().lower()
    check_commit_id(commit, what=f"{source}: commit")
    tag = data.get("tag")
    if tag is not None and not isinstance(tag, str):
        raise StackError(f"{source}: tag must be a string (see docs/FORMATS.md)")
    tests = data.get("test_paths")
    if tests is not None and not (isinstance(tests, list) and all(
            isinstance(t, str) and t and not t.startswith("/") and ".." not in t.split("/")
            for t in tests)):
        raise StackError(f"{source}: test_paths must be a list of relative path prefixes "
                         '(e.g. ["tests/"]; see docs/FORMATS.md)')
    return Pin(name=data["name"], url=data["url"], commit=commit, tag=tag or None,
               test_paths=None if tests is None else tuple(tests))


def check_commit_id(value: str, *, what: str = "pin") -> str:
    if not _HEX40.match(value):
        raise StackError(
            f"{what} {value!r} is not a full 40-hex commit id "
            "(a tag or short id is never a pin; resolve it with `git rev-parse`)"
        )
    return value


def parse_lock(text: str, *, source: Path | str = LOCK_FILE) -> Lock:
    data = _toml(text, source)
    try:
        patches = tuple(
            LockedPatch(file=_str(p, "file"), strip=int(p["strip"]), digest=_str(p, "digest"))
            for p in data.get("patch", [])
        )
        return Lock(
            algorithm=_str(data, "algorithm"),
            name=_str(data, "name"),
            pin=_str(data, "pin"),
            fingerprint=_str(data, "fingerprint"),
            patches=patches,
            format=int(data.get("format", 0)),
        )
    except (KeyError, TypeError, ValueError) as e:
        raise StackError(f"{source}: malformed lock ({e}); rewrite it with `patchctl lock`") from e


def render_lock(lock: Lock) -> str:
    return tomlwrite.render(
        "patchctl stack lock: written by `patchctl lock`; do not edit by hand.",
        {"format": lock.format, "algorithm": lock.algorithm, "name": lock.name,
         "pin": lock.pin, "fingerprint": lock.fingerprint},
        [("patch", {"file": p.file, "strip": p.strip, "digest": p.digest})
         for p in lock.patches])


def _str(table: Mapping[str, Any], key: str) -> str:
    value = table[key]
    if not isinstance(value, str):
        raise TypeError(f"{key} must be a string")
    return value


# A line of TOML as patchctl writes a pin file (tomlwrite): a comment, a blank line, or
# `key = "a string of printable ASCII without quote or backslash"`, which TOML reads as it is
_PLAIN_LINE = re.compile(r'#[\t -~]*|[ \t]*|([A-Za-z0-9_-]+) = "([ !#-\[\]-~]*)"')


def _plain_toml(text: str) -> dict[str, Any] | None:
    """What ``tomllib.loads`` gives for a file of such lines only, without loading the TOML
    parser (verify reads the pin before git starts); None for any other file."""
    data: dict[str, Any] = {}
    for line in text.split("\n"):
        m = _PLAIN_LINE.fullmatch(line)
        if m is None or m.group(1) in data:  # a duplicate key is TOML's error to give
            return None
        if m.group(1) is not None:
            data[m.group(1)] = m.group(2)
    return data


def _toml(text: str, source: Path | str) -> dict[str, Any]:
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise StackError(f"{source}: not valid TOML: {e}") from e


def _read_text(path: Path) -> str:
    try:
        return fsutil.read_regular(path, "a stack holds only regular files").decode("utf-8")
    except FileNotFoundError as e:
        raise StackError(f"{path} does not exist") from e
    except (OSError, UnicodeDecodeError) as e:
        reason = getattr(e, "strerror", None) or str(e)
        raise StackError(f"{path}: cannot read: {reason}") from e
