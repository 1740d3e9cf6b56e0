"""Temporary indexes: apply patches to a tree without touching any work tree."""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchctl.gitrepo.core import FIXED_IDENTITY, OBJECT_ID, Result, git_env, run_git, start_git
from patchctl.gitrepo.missing import index_blobs, lacking, missing_files, objects_dir, tree_blobs

if TYPE_CHECKING:  # what git said beyond success: made only when it said it (applyout)
    from patchctl.gitrepo.applyout import ApplyError, HunkOffset, WhitespaceWarning

# in every whitespace warning of `git apply --whitespace=warn` (gitrepo.applyout reads
# them); a quick search for it spares the slow scan of a clean run's output
_WHITESPACE_HINT = re.compile(r":\d+: ")


@dataclass(frozen=True)
class ApplyRun:
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def offsets(self) -> list[tuple[int, HunkOffset]]:
        """(file diff index in input order, offset) from `git apply -v`."""
        text = self.stderr + self.stdout
        if "succeeded at" not in text:
            return []  # no hunk moved (the usual case): no need to read 2 lines a file
        from patchctl.gitrepo import applyout

        return applyout.offsets(text)

    def whitespace(self) -> list[WhitespaceWarning]:
        """The lines git warned add whitespace errors, in its order (one scan of its
        whole output)."""
        if not _WHITESPACE_HINT.search(self.stderr):  # 2,000 clean patches: ~7 ms less
            return []
        from patchctl.gitrepo import applyout

        return applyout.whitespace(self.stderr)

    @property
    def error(self) -> ApplyError | None:
        if self.ok:
            return None
        from patchctl.gitrepo import applyout

        return applyout.error(self.stderr)


@dataclass(frozen=True)
class SeriesItem:
    """One patch of a series to apply: its file, strip level and number of file diffs
    (``files``: lets one batched call be split back into per-patch offsets)."""

    path: str | os.PathLike[str]
    strip: int = 1
    files: int | None = None


@dataclass
class Applied:
    """What happened to one patch of a series."""

    item: SeriesItem
    ok: bool
    offsets: list[HunkOffset] = field(default_factory=list)
    error: ApplyError | None = None
    three_way: bool = False  # it went on only with --3way
    run: ApplyRun | None = None  # git's own output (whitespace warnings); shared in a batch


@dataclass
class SeriesResult:
    applied: list[Applied]  # in order; after a failure with on_failure="stop", no more
    batched: bool  # all of it went on in one call per strip level

    @property
    def ok(self) -> bool:
        return all(a.ok for a in self.applied)

    @property
    def failed(self) -> Applied | None:
        return next((a for a in self.applied if not a.ok), None)


class TempIndex:
    """A throwaway index file in a private temp dir; the work tree is never touched."""

    def __init__(self, repo: Path, tmpdir: Path) -> None:
        self.repo = repo
        self.path = tmpdir / "index"
        # New blobs and trees go to a private object dir (the upstream's objects
        # are read as an alternate), so verifying writes nothing into the upstream.
        objects = tmpdir / "objects"
        objects.mkdir()
        alternates = [str(repo / "objects")]
        if inherited := os.environ.get("GIT_ALTERNATE_OBJECT_DIRECTORIES"):
            alternates.append(inherited)
        self.calls = 0  # git processes run on this index, for reports
        self.env = git_env(
            GIT_INDEX_FILE=str(self.path),
            GIT_OBJECT_DIRECTORY=str(objects),
            GIT_ALTERNATE_OBJECT_DIRECTORIES=os.pathsep.join(alternates),
        )

    def _run(self, args: list[str], **kwargs: Any) -> Result:
        self.calls += 1
        return run_git(args, repo=self.repo, env=self.env, **kwargs)

    def read_tree(self, treeish: str) -> None:
        self._run(["read-tree", treeish])

    def seed(self, tree: str) -> None:
        """``read_tree(tree)`` for a tree id, from the index git wrote for it before when
        there is one: a tree id names its contents for good, so that index is kept in the
        cache (``<cache>/indexes/<tree>``; read back only whole, its checksum intact) and a
        copy of it spares the ``read-tree`` process (verify starts ``git apply`` at once)."""
        from patchctl import fsutil

        kept = fsutil.cache_dir() / "indexes" / tree
        data = fsutil.read_cache(kept, _KEPT_INDEX_BYTES) if OBJECT_ID.fullmatch(tree) else None
        if data is not None and _intact(data, len(tree) // 2):
            self.path.write_bytes(data)
            return
        self.read_tree(tree)
        with contextlib.suppress(OSError):  # a read-only cache: read-tree again next time
            if OBJECT_ID.fullmatch(tree):
                fsutil.atomic_write(kept, self.path.read_bytes())
                _prune_kept(kept.parent)

    def write_tree(self) -> str:
        # --missing-ok: every entry is the pin's own (read from its trees) or a blob
        # `git apply` just wrote, so git's existence check proves nothing; it only
        # fails on an upstream that lacks some blobs by design (a mirror without its
        # largest files) as soon as a patch touches their directory (the root: any).
        return self._run(["write-tree", "--missing-ok"]).stdout.strip()

    def apply(
        self,
        patch_files: Sequence[str | os.PathLike[str]],
        *,
        strip: int = 1,
        reverse: bool = False,
        three_way: bool = False,
        check_only: bool = False,
        verbose: bool = True,
        started: Callable[[], None] | None = None,
    ) -> ApplyRun:
        """``git apply --cached`` of ``patch_files`` in one process. ``verbose`` (-v) makes
        git name each file and report hunk offsets (``ApplyRun.offsets``); without it,
        only errors and whitespace warnings. ``started`` is called once git runs, before
        this waits for it."""
        args = ["apply", "--cached", *(["-v"] if verbose else []), f"-p{strip}",
                "--whitespace=warn"]
        if reverse:
            args.append("-R")
        if three_way:
            args.append("--3way")
        if check_only:
            args.append("--check")
        args += [os.fspath(p) for p in patch_files]
        self.calls += 1
        git = start_git(args, repo=self.repo, env=self.env)  # spooled: -v, a line per file
        if started is not None:
            started()
        r = git.wait()
        return ApplyRun(r.returncode, r.stdout, r.stderr)

    def holds(self, patch_file: str | os.PathLike[str], *, strip: int = 1,
              tree: str | None = None) -> bool:
        """Whether the tree in this index (``tree``, when the caller knows it) already holds
        every change the patch makes, each at its place: the patch reverse-applies there,
        and applying it again gives that same tree back. The second half compares modes
        and binary contents as such: ``git apply`` only warns when a file's mode is not the
        one the patch expects, so a reverse-apply alone passes where a patch's lines landed
        and its mode change did not. The index is left holding that tree."""
        start = tree or self.write_tree()
        if not self.apply([patch_file], strip=strip, reverse=True, verbose=False).ok:
            return False  # git apply changed nothing
        try:
            return self.apply([patch_file], strip=strip, verbose=False).ok and \
                self.write_tree() == start
        finally:
            self.read_tree(start)

    def commit(self, tree: str, parent: str, message: str) -> str:
        """A commit of ``tree`` on ``parent``, into this index's private object dir."""
        env = {**self.env, **FIXED_IDENTITY}
        self.calls += 1
        return run_git(["commit-tree", tree, "-p", parent, "-m", message], repo=self.repo,
                       env=env).stdout.strip()

    def range_diff(self, old: tuple[str, str], new: tuple[str, str]) -> str:
        """``git range-diff`` of two series given as (base, tip) commit pairs. A high
        creation factor pairs commits however much they differ: meant for one commit on
        each side that the caller knows are the same patch."""
        self.calls += 1
        return run_git(["range-diff", "--no-color", "--creation-factor=1000",
                        f"{old[0]}..{old[1]}",
                        f"{new[0]}..{new[1]}"], repo=self.repo, env=self.env).stdout
    def apply_series(self, items: Sequence[SeriesItem], *, reverse: bool = False,
                     on_failure: str = "stop", batch: bool = True, per_patch: bool = True,
                     base: str | None = None) -> SeriesResult:
        """Apply a series in order: the one way patchctl puts patches on an index.

        With ``batch`` (and every item's ``files`` known), first one ``git apply``
        per run of equal strip levels; when all go on, that is the whole cost. Else
        (or when a batch fails: the index is put back) one patch per call, and on a
        failure: ``stop`` there, ``skip`` the patch and go on, or ``three_way``:
        try ``--3way``, else skip. Without ``per_patch`` a failed batch ends it there
        (no item in the result). ``reverse`` applies each in reverse (pass the items
        last first). ``base``: the tree the index holds, when the caller knows it (saves
        a ``write-tree``). The index keeps what went on; nothing is written.
        """
        if not items:
            return SeriesResult([], True)
        if batch and all(i.files is not None for i in items):
            start = base or self.write_tree()
            done = self._batched(items, reverse=reverse)
            if done is not None:
                return SeriesResult(done, True)
            self.read_tree(start)
        if not per_patch:
            return SeriesResult([], False)
        applied: list[Applied] = []
        for item in items:
            run = self.apply([item.path], strip=item.strip, reverse=reverse)
            if run.ok:
                applied.append(Applied(item, True, [h for _, h in run.offsets()], run=run))
                continue
            result = Applied(item, False, error=run.error, run=run)
            if on_failure == "three_way" and not reverse:
                before = self.write_tree()
                if self.apply([item.path], strip=item.strip, three_way=True).ok:
                    result = Applied(item, True, three_way=True, run=run)
                else:
                    self.read_tree(before)  # drop the conflict stages it left
            applied.append(result)
            if not result.ok and on_failure == "stop":
                break
        return SeriesResult(applied, False)

    def _batched(self, items: Sequence[SeriesItem], *, reverse: bool) -> list[Applied] | None:
        applied: list[Applied] = []
        for _, run_items in itertools.groupby(items, key=lambda i: i.strip):
            group = list(run_items)
            run = self.apply([i.path for i in group], strip=group[0].strip, reverse=reverse)
            if not run.ok:
                return None
            applied += applied_from(run, group)
        return applied

    def checkout_to(self, dest: Path) -> None:
        """Write every index entry as a plain file under ``dest`` (which must exist); a
        file whose blob the upstream lacks is ``MissingFiles`` (pass ``--exclude``)."""
        self.calls += 1
        r = run_git(["--git-dir", str(self.repo), "--work-tree", str(dest.resolve()),
                     "checkout-index", "-a", "-f"], env=self.env, check=False)
        if r.returncode != 0:
            objects = [Path(self.env["GIT_OBJECT_DIRECTORY"]), objects_dir(self.repo)]
            blobs = index_blobs(self.repo, self.env)
            if paths := lacking(blobs, objects):
                raise missing_files(paths, excludable=True, of=len(blobs))
            raise r.failure()

    def round_trip_in_background(self, patch_files: Sequence[str | os.PathLike[str]], *,
                                 strip: int,
                                 base: str | None = None) -> RoundTrip:
        """Start proving a series on this index on a thread: ``seed(base)`` (when given:
        a tree id), one ``git apply`` forward, one ``git apply -R`` of it last first, then
        ``write-tree``. git works while the caller parses the patches;
        ``RoundTrip.running()`` waits until git runs, ``forward_run()`` for the forward
        pass, ``wait()`` for all of it."""
        return RoundTrip(self, list(patch_files), strip, base)


_KEPT_INDEX_BYTES = 256 << 20  # read back at most (a tree of 100,000 files: ~10 MB)


def _intact(data: bytes, id_bytes: int) -> bool:
    """Is ``data`` an index file whose trailing checksum (SHA-1 or SHA-256, as long as an
    object id) matches its contents? A damaged or cut copy is a miss."""
    import hashlib

    return data[:4] == b"DIRC" and len(data) > 12 + id_bytes and hashlib.new(
        "sha1" if id_bytes == 20 else "sha256", data[:-id_bytes]).digest() == data[-id_bytes:]


def _prune_kept(folder: Path, keep: int = 8) -> None:
    """The indexes of at most ``keep`` trees: the least recently written go first."""
    for old in sorted(folder.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True)[keep:]:
        old.unlink(missing_ok=True)


def applied_from(run: ApplyRun, items: Sequence[SeriesItem]) -> list[Applied]:
    """One successful batched ``git apply`` split back into its patches: each hunk offset
    goes to the patch whose file diff it is in (by each item's ``files``)."""
    owner = [n for n, i in enumerate(items) for _ in range(i.files or 0)]
    parts = [Applied(i, True, run=run) for i in items]
    for file_index, h in run.offsets():
        if 0 <= file_index < len(owner):
            parts[owner[file_index]].offsets.append(h)
    return parts


class RoundTrip:
    """A forward and reverse ``git apply`` of a series running on a thread."""

    def __init__(self, index: TempIndex, patch_files: list[str | os.PathLike[str]],
                 strip: int, base: str | None = None) -> None:
        self.forward: ApplyRun | None = None
        self.back: ApplyRun | None = None
        self.tree: str | None = None  # the tree after both, when both applied
        self._error: BaseException | None = None
        self._forward_done = threading.Event()
        self._running = threading.Event()
        self._thread = threading.Thread(target=self._run,
                                        args=(index, patch_files, strip, base), daemon=True)
        self._thread.start()

    def _run(self, index: TempIndex, patch_files: list[str | os.PathLike[str]], strip: int,
             base: str | None) -> None:
        try:
            if base is not None:
                index.seed(base)
            self.forward = index.apply(patch_files, strip=strip, started=self._running.set)
            if not self.forward.ok:
                return
            # the reverse only has to go on (its offsets are not reported): no -v, which
            # costs git ~15 ms of writes at 2,000 patches. The caller hears of the forward
            # pass once the reverse runs: a thread busy reading it then would hold this
            # one back from starting git.
            self.back = index.apply(patch_files[::-1], strip=strip, reverse=True,
                                    verbose=False, started=self._forward_done.set)
            if self.back.ok:
                self.tree = index.write_tree()
        except BaseException as e:  # handed to the caller by wait()
            self._error = e
        finally:
            self._running.set()
            self._forward_done.set()

    def running(self) -> RoundTrip:
        """Wait until git runs the forward pass (or the round trip ended before it could).
        Until then this thread needs the interpreter lock at every step of starting git,
        and a caller busy parsing holds it up to the 5 ms switch interval each time."""
        self._running.wait()
        return self

    def forward_run(self) -> ApplyRun | None:
        """The forward pass, once it ended (the reverse may still run); None when it
        could not run (``wait()`` raises why)."""
        self._forward_done.wait()
        return self.forward

    def wait(self) -> RoundTrip:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self

@contextlib.contextmanager
def temp_index(repo: Path) -> Iterator[TempIndex]:
    tmp = Path(tempfile.mkdtemp(prefix="patchctl-index-"))
    try:
        yield TempIndex(repo, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# -- reproduce: one source directory moved between trees in place ------------------------


class StoreIndex(TempIndex):
    """A TempIndex whose new blobs and trees go to a persistent private object dir.

    ``reproduce`` needs the trees of pin + each prefix to outlive the index, to
    check them out later, yet must write nothing into the upstream either:
    ``objects`` (in its cache) reads the upstream's objects as an alternate.
    """

    def __init__(self, repo: Path, tmpdir: Path, objects: Path) -> None:
        super().__init__(repo, tmpdir)
        objects.mkdir(parents=True, exist_ok=True)
        self.env = {**self.env, "GIT_OBJECT_DIRECTORY": str(objects.absolute())}


@contextlib.contextmanager
def store_index(repo: Path, objects: Path) -> Iterator[StoreIndex]:
    tmp = Path(tempfile.mkdtemp(prefix="patchctl-index-"))
    try:
        yield StoreIndex(repo, tmp, objects)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def index_paths(index: TempIndex) -> list[str]:
    """Every path in a temporary index."""
    out = run_git(["ls-files", "-z"], repo=index.repo, env=index.env).stdout
    return [p for p in out.split("\0") if p]


def remove_from_index(index: TempIndex, paths: Sequence[str]) -> None:
    # update-index insists on a work tree even to remove entries (a non-bare
    # clone's git dir has none): lend it the index's empty-of-sources temp dir.
    if paths:
        run_git(["update-index", "--force-remove", "-z", "--stdin"], repo=index.repo,
                env={**index.env, "GIT_WORK_TREE": str(index.path.parent)},
                input="\0".join(paths) + "\0")


def _work_env(repo: Path, objects: Path, work: Path, index_file: Path) -> dict[str, str]:
    alternates = [str((repo / "objects").absolute())]
    if inherited := os.environ.get("GIT_ALTERNATE_OBJECT_DIRECTORIES"):
        alternates.append(inherited)
    return git_env(GIT_DIR=str(repo.absolute()), GIT_WORK_TREE=str(work.absolute()),
                   GIT_INDEX_FILE=str(index_file.absolute()),
                   GIT_OBJECT_DIRECTORY=str(objects.absolute()),
                   GIT_ALTERNATE_OBJECT_DIRECTORIES=os.pathsep.join(alternates))


def indexed_tree(repo: Path, objects: Path, work: Path, index_file: Path) -> str | None:
    """The tree ``work`` was last switched to (per its private index); None before the first."""
    if not index_file.is_file():
        return None
    r = run_git(["write-tree"], env=_work_env(repo, objects, work, index_file), check=False)
    return r.stdout.strip() if r.returncode == 0 else None


def switch_tree_in_place(repo: Path, objects: Path, work: Path, index_file: Path,
                         tree: str) -> None:
    """Make ``work`` hold exactly ``tree`` (from a StoreIndex on ``objects``), rewriting
    only the files that differ.

    A two-way ``read-tree --reset -u`` against a private index is what ``git
    checkout`` does: files equal in both trees keep their bytes and mtime, so a
    build tree over ``work`` recompiles only what changed; stray edits to files
    the index tracks are put back. Nothing is written into ``repo``.
    """
    work.mkdir(parents=True, exist_ok=True)
    env = _work_env(repo, objects, work, index_file)
    r = run_git(["read-tree", "--reset", "-u", tree], repo=work, env=env, check=False)
    if r.returncode != 0:
        blobs = tree_blobs(repo, tree, env=env)
        if paths := lacking(blobs, [objects, objects_dir(repo)]):
            raise missing_files(paths, excludable=True, of=len(blobs))
        raise r.failure()
