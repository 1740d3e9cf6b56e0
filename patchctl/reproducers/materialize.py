"""``patchctl apply --into DIR``: pin + stack as plain files (or a git repo), atomically.

The tree is built beside DIR and renamed into place, so an interrupted run
leaves DIR as it was. The stamp (docs/FORMATS.md) is written last, inside the
new tree, so a tree without a stamp was never finished.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from patchctl import fsutil, gitrepo, tomlwrite
from patchctl.errors import InputError, StackError
from patchctl.globs import check_globs, glob_match
from patchctl.model import schemas
from patchctl.model.fingerprint import ALGORITHM, fingerprint
from patchctl.model.patchfile import Patch
from patchctl.model.stack import Pin, Stack
from patchctl.model.stackwrite import output_areas
from patchctl.textout import count

STAMP = ".patchctl-stamp"


@dataclass(frozen=True)
class Stamp:
    name: str
    pin: str
    fingerprint: str
    tree: str
    manifest: str
    patches: tuple[str, ...]
    exclude: tuple[str, ...] = ()
    algorithm: str = ALGORITHM

    def render(self) -> str:
        values: dict[str, tomlwrite.Value] = {
            "format": 1, "algorithm": self.algorithm, "name": self.name, "pin": self.pin,
            "fingerprint": self.fingerprint, "tree": self.tree, "manifest": self.manifest,
            "patches": self.patches}
        if self.exclude:
            values["exclude"] = self.exclude
        return tomlwrite.render("patchctl apply stamp: this directory = pin + stack; "
                                "do not edit by hand.", values)


def read_stamp(directory: Path) -> Stamp | None:
    import tomllib

    path = directory / STAMP
    if not path.is_file():
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != 1 or not isinstance(data.get("patches"), list):
            raise ValueError(f"format {data.get('format')!r}, not format 1")
        return Stamp(name=data["name"], pin=data["pin"], fingerprint=data["fingerprint"],
                     tree=data["tree"], manifest=data["manifest"],
                     patches=tuple(data["patches"]), exclude=tuple(data.get("exclude", ())),
                     algorithm=data.get("algorithm", ALGORITHM))
    except (OSError, ValueError, KeyError, TypeError) as e:  # TOML and UTF-8 errors included
        raise InputError(f"{path}: unreadable stamp ({e}); re-run with --force") from e


def manifest(directory: Path) -> str:
    """sha256 over `<sha256>  <path>` lines of every file, sorted by path (docs/FORMATS.md).

    A FIFO, socket or device in ``directory`` raises ``fsutil.SpecialFileError``
    (reading a FIFO would block forever).
    """
    entries: list[tuple[bytes, str]] = []
    root = str(directory)
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir == ".":
            dirnames[:] = [d for d in dirnames if d != ".git"]
        # os.walk does not descend into symlinked directories; they count as links.
        names = filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        for name in names:
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            if rel == STAMP:
                continue
            full = os.path.join(dirpath, name)
            if os.path.islink(full):
                digest = hashlib.sha256(os.readlink(full).encode()).hexdigest()
            else:
                fd = fsutil.open_regular(Path(full), "patchctl never reads one: remove it, "
                                         "or pass --force to replace the directory")
                with os.fdopen(fd, "rb") as f:
                    digest = hashlib.file_digest(f, "sha256").hexdigest()
            entries.append((rel.encode("utf-8", "surrogateescape"), digest))
    entries.sort()
    text = "".join(f"{d}  {p.decode('utf-8', 'surrogateescape')}\n" for p, d in entries)
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


@dataclass
class ApplyResult:
    into: Path
    stamp: Stamp
    unchanged: bool

    def to_dict(self) -> dict[str, Any]:
        return {"schema": schemas.APPLY, "into": str(self.into),
                "unchanged": self.unchanged, "stamp": asdict(self.stamp)}


def materialize(
    stack: Stack,
    upstream: Path,
    into: Path,
    *,
    commits: bool = False,
    exclude: list[str] | None = None,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
) -> ApplyResult:
    # A symlink DIR is followed: its target is replaced and the link kept.
    protect, inside = output_areas(stack.root.parent, stack, {"the upstream": upstream})
    into = fsutil.replaceable(into, "--into", protect, inside=inside)
    pin = stack.pin()
    patches = stack.patches()
    fp = fingerprint(pin.commit, patches)
    exclude = list(exclude or [])
    check_globs(exclude, "--exclude")
    for p in patches:
        for f in p.files:
            hit = next((g for g in exclude for path in f.paths if glob_match(path, g)), None)
            if hit:
                raise InputError(f"--exclude {hit} would leave out {f.path}, which {p.name} "
                                 "changes; exclude only paths the stack does not touch")
    with fsutil.path_lock(into, f"apply --into {into}"):
        fsutil.recover(into)
        try:
            existing = read_stamp(into) if into.is_dir() else None
        except InputError:
            if not force:
                raise
            existing = None  # --force replaces a tree whatever its stamp says
        if existing is not None:
            try:
                edited = manifest(into) != existing.manifest
            except fsutil.SpecialFileError:
                if not force:
                    raise
                edited = True
            if edited and not force:
                raise InputError(f"{into} was edited after `patchctl apply` stamped it; "
                                 "re-run with --force to replace it (the edits are lost)")
            if not edited and existing.fingerprint == fp and list(existing.exclude) == exclude \
                    and _is_repo(into) == commits:
                return ApplyResult(into, existing, unchanged=True)
        elif into.exists() and any(into.iterdir()) and not force:
            raise InputError(f"{into} exists and was not made by `patchctl apply`; "
                             "choose an empty or new directory, or pass --force")

        if not gitrepo.resolve_commit(upstream, pin.commit):
            raise InputError(f"pin {pin.commit} is not in upstream {upstream}")
        with fsutil.swap_in(into) as staging:
            stamp = _build(stack, upstream, staging, patches, fp, commits, exclude, progress)
        return ApplyResult(into, stamp, unchanged=False)


def _build(stack: Stack, upstream: Path, staging: Path, patches: list[Patch], fp: str,
           commits: bool, exclude: list[str],
           progress: Callable[[str], None] | None) -> Stamp:
    pin = stack.pin()
    with gitrepo.temp_index(upstream) as index:
        index.read_tree(pin.commit)
        if exclude:
            _drop(index, exclude)
        if commits:
            index.checkout_to(staging)  # the pristine pin: history replays the patches
        if progress and patches:
            progress(f"applying {count(len(patches), 'patch')}")
        applied = index.apply_series([gitrepo.SeriesItem(p.path, p.strip, len(p.files))
                                      for p in patches])
        if (failed := applied.failed) is not None:
            assert failed.error is not None
            raise StackError(f"the stack does not apply at {pin.commit[:12]}: "
                             f"{Path(failed.item.path).name}: {failed.error.message}; "
                             "run `patchctl verify`")
        tree = index.write_tree()
        if not commits:
            if progress:
                progress(f"writing files into {staging.name}")
            index.checkout_to(staging)
    if commits:
        head_tree = _make_history(staging, pin, patches)
        if head_tree != tree:
            raise StackError(f"replaying the stack as commits gave tree {head_tree}, "
                             f"not {tree}; run `patchctl verify`")
    stamp = Stamp(name=pin.name, pin=pin.commit, fingerprint=fp, tree=tree,
                  manifest=manifest(staging), patches=tuple(p.name for p in patches),
                  exclude=tuple(exclude))
    fsutil.atomic_write(staging / STAMP, stamp.render())
    return stamp


def _drop(index: gitrepo.TempIndex, exclude: list[str]) -> None:
    listed = gitrepo.run_git(["ls-files", "-z"], repo=index.repo, env=index.env).stdout
    doomed = [p for p in listed.split("\0") if p and any(glob_match(p, g) for g in exclude)]
    if doomed:
        gitrepo.remove_from_index(index, doomed)  # works on a non-bare clone's git dir too


def _make_history(work: Path, pin: Pin, patches: list[Patch]) -> str:
    """A repo whose first commit is the pin's tree and then one commit per patch."""
    repo = gitrepo.init_history(work, f"{pin.name} {pin.commit}\n\nUpstream pin, as fetched.\n")
    for p in patches:
        gitrepo.commit_patch(repo, p.path, strip=p.strip, subject=p.subject or p.name,
                             body=p.body, author=p.author)
    return gitrepo.tree_of(repo, "HEAD")


def _is_repo(path: Path) -> bool:
    return (path / ".git").is_dir()
