"""What verify reads from each patch, cached, so an unchanged stack skips the parse.

A stack of 2,000 patches takes longer to parse and lint than git takes to apply
and reverse it. ``verify`` needs only a few facts of each patch (its trailers,
size, digest, paths and lint findings: a ``Summary``); on a stack that did not
change it reads them back instead of parsing. The cache lives in the user's
cache dir (never in the project): ``<cache>/parsed/<hash of the stack dir>.json``.
An entry is kept by the patch's name, with its strip level and the sha256 of its bytes,
and the whole file by the source of the parser, the linter, its glob matcher and this
module, so any change to a patch or to that code parses again. An entry also keeps
the file's stat (size, mtime, ctime, inode, device) as it was before its bytes were
read: while the file's stat is still that, its bytes are not read again (2,000 patches:
one ``stat`` each instead of an open, a read and a sha256). As in git's racy-git rule,
a stat is kept only for a file last changed well before it was read (``RACY_NS``): a
change within the same timestamp tick as the read, or on a file system with coarse
times, could leave the stat as it was; a file changed that recently is read and hashed
every time until it is older. Lint findings are cached as ``lint_patch`` gives them
without upstream symlinks; a patch that touches one of upstream's symlinks (or a path
under one) is parsed and linted again with them (``Summary.touches``). ``partition``
keeps its ``<hash>.plan`` beside it, and goes with it. Losing or corrupting the cache
costs only time.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from patchctl import fsutil
from patchctl.model.finding import Finding, parent_dirs

if TYPE_CHECKING:  # the parser loads only for a patch the cache does not know
    from patchctl.model.patchfile import FileDiff, Patch

FORMAT = 4  # the layout of a cached entry
# a stat is kept only for a file whose mtime and ctime are this much older than the read:
# more than a timestamp tick, and than the 2 s of a FAT file system's mtime
RACY_NS = 3_000_000_000
KEEP = 16  # stacks whose summaries are kept
MAX_BYTES = 256 << 20  # read back at most (a stack of 10,000 patches writes a few MB)


class Summary(NamedTuple):
    """The facts of one patch that verify reports, fingerprints and lints (a NamedTuple:
    2,000 of them are made per run, and a frozen dataclass costs three times as much)."""

    name: str
    path: str  # as git is given it (the stack's patches dir, "/", the name)
    strip: int
    digest: str
    files: int  # file diffs (git apply reports offsets by file, in this order)
    paths: tuple[str, ...]  # every path the diffs name, source and target, in order
    concern: str | None
    upstream_status: str | None
    added: int
    removed: int
    findings: tuple[Finding, ...]  # lint_patch(patch), no upstream symlinks given
    in_place: bool  # every file diff changes an existing file, same path and mode

    def patch(self) -> Patch:
        """The whole parsed patch (to explain a failure): read and parsed again."""
        from patchctl.model.patchfile import read_patch

        return read_patch(Path(self.path), name=self.name, strip=self.strip)

    def touches(self, links: frozenset[str]) -> bool:
        """Does a path of this patch, or a directory above one, name one of ``links``?"""
        return bool(links) and any(
            p in links or any(d in links for d in parent_dirs(p)) for p in self.paths)

    def lint(self, links: frozenset[str]) -> list[Finding]:
        """``lint_patch`` with upstream's symlinks: the cached findings unless a path of
        this patch meets one of them."""
        if self.touches(links):
            from patchctl.model.lint import lint_patch

            return lint_patch(self.patch(), upstream_symlinks=links)
        return list(self.findings)


def summarize(patch: Patch) -> Summary:
    from patchctl.model.lint import lint_patch  # only for a patch not in the cache

    return Summary(name=patch.name, path=str(patch.path), strip=patch.strip, digest=patch.digest,
                   files=len(patch.files), paths=tuple(p for f in patch.files for p in f.paths),
                   concern=patch.concern, upstream_status=patch.upstream_status,
                   added=patch.added, removed=patch.removed,
                   findings=tuple(lint_patch(patch)),
                   in_place=all(_in_place(f) for f in patch.files))


def _in_place(f: FileDiff) -> bool:
    """Changes an existing file where it is: no creation, deletion, rename, copy or mode
    change (a plain diff whose first hunk starts at line 0 may be either; not this)."""
    first = f.hunks[0] if f.hunks else None
    return (f.source is not None and f.source == f.target and not f.mode_lines
            and (first is None or (first.source_start > 0 and first.target_start > 0)))


def _code_key() -> str:
    # the linter and its glob matcher (how lint matches Scope) by their files: a stack read
    # whole from the cache never imports them
    model = Path(__file__).parent.parent / "model"
    h = hashlib.sha256()
    for source in (model / "patchfile.py", model / "lint.py", model.parent / "globs.py",
                   model / "finding.py", Path(__file__)):
        h.update(source.read_bytes())
    return f"{FORMAT}:{h.hexdigest()}"


class ParseCache:
    """Read patches' summaries through the cache; ``save()`` writes what was parsed anew."""

    def __init__(self, stack_root: Path, cache_dir: Path | None = None) -> None:
        self.path = _cache_file(stack_root, cache_dir)
        self.key = _code_key()
        # name -> [strip, sha256 of its bytes, its stat or None, the summary's fields]
        self.entries: dict[str, list[Any]] = {}
        self.used: dict[str, list[Any]] = {}
        self.changed = False
        self.lock: str | None = None  # engine's key of the lock last found current
        self._lock: str | None = None  # as read
        self._contents = hashlib.sha256(self.key.encode())
        try:  # untrusted: a damaged cache, or a FIFO or a device in its place, costs only time
            data = json.loads(fsutil.read_cache(self.path, MAX_BYTES) or b"null")
            if isinstance(data, dict) and data.get("key") == self.key \
                    and isinstance(data.get("patches"), dict):
                self.entries = data["patches"]
                lock = data.get("lock")
                self._lock = self.lock = lock if isinstance(lock, str) else None
        except (ValueError, RecursionError):
            pass

    def read(self, path: str | Path, *, name: str, strip: int) -> Summary:
        """``summarize(patchfile.read_patch(...))``, from the cache when the file's stat, or
        else its bytes, are the same; raises StackError for a patch that cannot be parsed."""
        path = os.fspath(path)
        entry = self.entries.get(name)
        if not (isinstance(entry, list) and len(entry) == 4):
            entry = None
        try:
            st: os.stat_result | None = os.stat(path)  # before the bytes are read
        except OSError:
            st = None  # patch_bytes says why
        now = _stat_of(st)
        if entry is not None and now is not None and entry[2] == now and entry[0] == strip \
                and isinstance(entry[1], str):
            summary = _summary_of(entry, name=name, path=path, strip=strip)
            if summary is not None:
                self.used[name] = entry
                self._contents.update(f"{name}\0{strip}\0{entry[1]}\n".encode())
                return summary
        from patchctl.model import patchfile  # only for a patch read anew

        data = patchfile.patch_bytes(Path(path))
        sha = hashlib.sha256(data).hexdigest()
        self._contents.update(f"{name}\0{strip}\0{sha}\n".encode())
        if entry is None or entry[1] != sha or entry[0] != strip or \
                (summary := _summary_of(entry, name=name, path=path, strip=strip)) is None:
            summary = summarize(patchfile.parse_patch(data, path=Path(path), name=name,
                                                      strip=strip))
            fields = _to_entry(summary)
        else:
            fields = entry[3]
        kept = [strip, sha, now if now is not None and _settled(st) else None, fields]
        self.changed = self.changed or kept != entry
        self.used[name] = kept
        return summary

    def contents(self) -> str:
        """A key of the patches read so far, in order: their names, strip levels and bytes,
        and the code that summarizes them (equal keys, equal summaries)."""
        return self._contents.hexdigest()

    def save(self) -> None:
        """Keep the entries read this time (a stack's old versions drop out)."""
        if not self.changed and len(self.used) == len(self.entries) and self.lock == self._lock:
            return
        with contextlib.suppress(OSError):  # a read-only cache: next time parses again
            fsutil.atomic_write(self.path, json.dumps(
                {"key": self.key, "patches": self.used, "lock": self.lock},
                separators=(",", ":")))
            _prune(self.path.parent)


def _stat_of(st: os.stat_result | None) -> str | None:
    """What of a patch file's stat the cache keeps (a regular file's only), as one string
    (JSON reads it back faster than five large numbers)."""
    if st is None or not stat.S_ISREG(st.st_mode):
        return None
    return f"{st.st_size} {st.st_mtime_ns} {st.st_ctime_ns} {st.st_ino} {st.st_dev}"


def _settled(st: os.stat_result | None, *, now: int | None = None) -> bool:
    """Was the file last changed long enough before ``now`` (the time) that a later change
    cannot leave its stat as it is? (git's racy-git problem: a file rewritten within one
    timestamp tick, at the same size, keeps its stat.)"""
    return st is not None and max(st.st_mtime_ns, st.st_ctime_ns) < \
        (time.time_ns() if now is None else now) - RACY_NS


def _summary_of(entry: list[Any], *, name: str, path: str, strip: int) -> Summary | None:
    try:
        return _from_entry(entry[3], name=name, path=path, strip=strip)
    except (IndexError, KeyError, TypeError, ValueError):
        return None


def _cache_file(stack_root: Path, cache_dir: Path | None = None) -> Path:
    return fsutil.stack_cache_file(stack_root, "parsed", ".json", cache_dir)


def _prune(folder: Path, keep: int = KEEP) -> None:
    """At most ``keep`` stacks' files: the least recently written go first."""
    files = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in files[keep:]:
        old.unlink(missing_ok=True)
        old.with_suffix(".plan").unlink(missing_ok=True)  # partition.plan_file


def _to_entry(s: Summary) -> list[Any]:
    return [s.digest, s.files, list(s.paths), s.concern, s.upstream_status, s.added, s.removed,
            [[f.severity, f.code, f.message, f.line] for f in s.findings], s.in_place]


def _from_entry(e: list[Any], *, name: str, path: str, strip: int) -> Summary:
    digest, files, paths, concern, status, added, removed, findings, in_place = e
    if not (isinstance(digest, str) and isinstance(files, int) and isinstance(paths, list)
            and isinstance(added, int) and isinstance(removed, int)
            and isinstance(findings, list) and isinstance(in_place, bool)):
        raise ValueError("not a summary")
    # positional, map(), and no generator for the usual patch without findings: this runs
    # once per patch on every verify
    return Summary(name, path, strip, digest, files, tuple(map(str, paths)), concern, status,
                   added, removed,
                   tuple(Finding(str(s), str(c), str(m), ln) for s, c, m, ln in findings)
                   if findings else (), in_place)
