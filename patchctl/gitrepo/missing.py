"""An upstream that lacks some blobs (a snapshot, a mirror without its largest files, a
partial clone that can no longer fetch): which files, and the one error that names them.

The policy, for every verb that writes the upstream's files: ``apply --into`` and
``reproduce`` write the whole tree, so a file they cannot read is named with the
``--exclude`` that leaves it out; the edit and rebase work trees go sparse, leaving
out what nothing there needs, and name only a file the stack changes (no option
helps there: the upstream must have it).
"""

from __future__ import annotations

import os
import posixpath
import shlex
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from patchctl.errors import InputError
from patchctl.gitrepo.core import run_git

_SHOWN = 3  # paths named in the message; the count says how many more


class MissingFiles(InputError):
    """The upstream lacks the contents of ``paths``, which a verb must write."""

    def __init__(self, message: str, paths: Sequence[str]) -> None:
        super().__init__(message)
        self.paths = list(paths)


def missing_files(paths: Sequence[str], *, excludable: bool, of: int = 0) -> MissingFiles:
    """The one message for files the upstream lacks: the first few and how many, why that
    happens, and what to pass (``excludable``: ``--exclude``, which the verb has, unless
    the upstream lacks every one of the ``of`` files to write)."""
    from patchctl.textout import count
    from patchctl.untrusted import printable

    paths = sorted(paths)
    n = len(paths)
    shown = ", ".join(printable(p) for p in paths[:_SHOWN])
    more = f", and {n - _SHOWN} more" if n > _SHOWN else ""
    it = "it" if n == 1 else "them"
    why = f"(a snapshot, or a partial clone that cannot fetch {it})"
    have = f"an --upstream that has {it} (a full clone)"
    if excludable and n == of:
        return MissingFiles(f"the upstream lacks the contents of every file to write ({n}: "
                            f"{shown}{more}) {why}; pass {have}", paths)
    if excludable:
        return MissingFiles(f"the upstream lacks the contents of {count(n, 'file')} to write: "
                            f"{shown}{more} {why}; pass --exclude {printable(_glob_for(paths))} "
                            f"to leave {it} out, or {have}", paths)
    return MissingFiles(f"the upstream lacks the contents of {count(n, 'file')} the stack "
                        f"changes: {shown}{more} {why}; pass {have}", paths)


def _glob_for(paths: Sequence[str]) -> str:
    """An ``--exclude`` argument (shell-quoted) covering ``paths``: the one path, or every
    file under the directory they share."""
    if len(paths) == 1:
        return shlex.quote(paths[0])
    common = posixpath.commonpath([posixpath.dirname(p) for p in paths])
    return shlex.quote(f"{common}/**" if common else paths[0])


def objects_dir(repo: Path) -> Path:
    """The object directory of the git directory or work tree ``repo``."""
    out = Path(run_git(["rev-parse", "--git-path", "objects"], repo=repo).stdout.strip())
    return out if out.is_absolute() else repo / out


def tree_blobs(repo: Path, treeish: str, *,
               env: dict[str, str] | None = None) -> dict[str, str]:
    """path -> blob id of every file and symlink of ``treeish`` (trees only are read)."""
    out = run_git(["ls-tree", "-r", "-z", "--full-tree", "--end-of-options", treeish],
                  repo=repo, env=env).stdout
    blobs = {}
    for item in out.split("\0"):
        meta, _, path = item.partition("\t")
        if path and meta.split()[1] == "blob":
            blobs[path] = meta.split()[2]
    return blobs


def index_blobs(repo: Path, env: dict[str, str]) -> dict[str, str]:
    """path -> blob id of every entry of the index ``env`` names (submodules left out)."""
    out = run_git(["ls-files", "-s", "-z"], repo=repo, env=env).stdout
    blobs = {}
    for item in out.split("\0"):
        meta, _, path = item.partition("\t")
        if path and not meta.startswith("160000"):
            blobs[path] = meta.split()[1]
    return blobs


def lacking(blobs: Mapping[str, str], objects: Sequence[Path]) -> list[str]:
    """The paths of ``blobs`` (path -> blob id) whose blob none of the object directories
    ``objects`` (their alternates followed) holds, sorted.

    Asked of a scratch repository that borrows those objects and has no promisor
    remote: in a partial clone git would otherwise try to fetch each one to answer.
    """
    if not blobs:
        return []
    with tempfile.TemporaryDirectory(prefix="patchctl-probe-") as tmp:
        probe = Path(tmp) / "probe.git"
        run_git(["init", "-q", "--bare", "--", str(probe)])
        (probe / "objects" / "info" / "alternates").write_text(
            "".join(f"{os.path.abspath(o)}\n" for o in objects))
        out = run_git(["cat-file", "--batch-check=%(objectname)"], repo=probe,
                      input="".join(f"{b}\n" for b in set(blobs.values()))).stdout
    present = {line for line in out.split("\n") if line and not line.endswith(" missing")}
    return sorted(p for p, b in blobs.items() if b not in present)
