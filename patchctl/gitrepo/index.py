"""Temporary indexes: apply patches to a tree without touching any work tree."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from patchctl.gitrepo.core import Result, git_env, run_git

_CHECKING = re.compile(r"^Checking patch (.+)\.\.\.$")
_HUNK_OK = re.compile(r"^Hunk #(\d+) succeeded at (\d+)(?: \(offset (-?\d+) lines?\))?\.$")


@dataclass(frozen=True)
class HunkOffset:
    """A hunk `git apply -v` placed away from where its header said."""

    file_index: int  # 0-based: which file diff of the input, in input order
    path: str
    hunk: int  # 1-based within its file diff
    line: int  # where it applied
    offset: int


@dataclass(frozen=True)
class ApplyRun:
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def offsets(self) -> list[HunkOffset]:
        """Offsets from `git apply -v`, which reports file diffs in input order."""
        out: list[HunkOffset] = []
        file_index, path = -1, "?"
        for line in (self.stderr + self.stdout).splitlines():
            if m := _CHECKING.match(line):
                file_index, path = file_index + 1, m.group(1)
            elif (m := _HUNK_OK.match(line)) and m.group(3) and int(m.group(3)):
                out.append(HunkOffset(file_index, path, int(m.group(1)), int(m.group(2)),
                                      int(m.group(3))))
        return out


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

    def _run(self, args: list[str], **kwargs) -> Result:
        self.calls += 1
        return run_git(args, repo=self.repo, env=self.env, **kwargs)

    def read_tree(self, treeish: str) -> None:
        self._run(["read-tree", treeish])

    def write_tree(self) -> str:
        return self._run(["write-tree"]).stdout.strip()

    def apply(
        self,
        patch_files: Sequence[Path],
        *,
        strip: int = 1,
        reverse: bool = False,
        three_way: bool = False,
        check_only: bool = False,
    ) -> ApplyRun:
        args = ["apply", "--cached", "-v", f"-p{strip}", "--whitespace=warn"]
        if reverse:
            args.append("-R")
        if three_way:
            args.append("--3way")
        if check_only:
            args.append("--check")
        args += [str(p) for p in patch_files]
        r = self._run(args, check=False)
        return ApplyRun(r.returncode, r.stdout, r.stderr)

    def commit(self, tree: str, parent: str, message: str) -> str:
        """A commit of ``tree`` on ``parent``, into this index's private object dir."""
        from patchctl.gitrepo.history import _IDENTITY

        env = {**self.env, **_IDENTITY}
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

    def checkout_to(self, dest: Path) -> None:
        """Write every index entry as a plain file under ``dest`` (which must exist)."""
        self.calls += 1
        run_git(["--git-dir", str(self.repo), "--work-tree", str(dest.resolve()),
                 "checkout-index", "-a", "-f"], env=self.env)


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
    run_git(["read-tree", "--reset", "-u", tree], repo=work,
            env=_work_env(repo, objects, work, index_file))
