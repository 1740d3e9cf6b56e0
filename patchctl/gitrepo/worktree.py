"""Work trees patchctl makes and reads: the edit and rebase scratch checkouts (sparse
when the upstream lacks blobs), their status, snapshots and commits."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from patchctl.errors import InputError
from patchctl.gitrepo.core import FIXED_IDENTITY, OBJECT_ID, git_env, run_git
from patchctl.gitrepo.index import ApplyRun
from patchctl.gitrepo.missing import lacking, missing_files, objects_dir, tree_blobs
from patchctl.untrusted import shorten

SCRATCH_BRANCH = "refs/heads/patchctl"  # the one ref a scratch checkout is made with


def scratch_checkout(upstream: Path, dest: Path, commit: str, *,
                     needed: Sequence[str] = (),
                     wanted: Callable[[str], bool] | None = None,
                     patterns: Sequence[str] = (), full: bool = False) -> Path:
    """A new repository at ``dest`` on branch ``patchctl`` (``SCRATCH_BRANCH``) at ``commit``.

    It borrows ``upstream``'s objects as an alternate, so nothing is copied and
    nothing is written into the upstream; deleting ``dest`` leaves no trace.
    When some blob cannot be read at all (a mirror that lacks its largest
    files), the work tree is made sparse: only ``needed`` paths are written,
    the rest stay in the index as skip-worktree entries, so trees made from
    that index are still whole; a ``needed`` path whose blob is missing is
    ``MissingFiles`` (the one policy, ``gitrepo.missing``). Paths for which
    ``wanted`` is true (a patch's Scope) are written too, where their blobs can be
    read, and ``patterns`` (``sparse_patterns`` of that Scope) keep a file created
    there inside the sparse work tree, for git status and git add as for patchctl.
    With ``full`` every file whose blob can be read is written (to build the
    upstream there).
    """
    run_git(["init", "-q", "--", str(dest)])
    objects = objects_dir(upstream)
    (dest / ".git" / "objects" / "info" / "alternates").write_text(f"{objects.resolve()}\n")
    run_git(["update-ref", "--end-of-options", SCRATCH_BRANCH, commit], repo=dest)
    run_git(["symbolic-ref", "HEAD", SCRATCH_BRANCH], repo=dest)
    # The files are written through the upstream itself: in a partial clone that is
    # where the promisor remote is configured, so missing blobs are fetched there.
    whole = run_git(["--git-dir", str(upstream.absolute()), "--work-tree", str(dest.absolute()),
                     "read-tree", "-u", "--reset", "--end-of-options", commit],
                    env=git_env(GIT_INDEX_FILE=str((dest / ".git" / "index").absolute())),
                    check=False)
    if whole.returncode == 0:
        return _partial_clone_of(upstream, dest)
    # dest has no promisor remote yet: asking it fetches nothing
    blobs = tree_blobs(dest, commit)
    missing = set(lacking(blobs, [dest / ".git" / "objects"]))
    if not missing:
        raise whole.failure()
    if needs := missing.intersection(needed):
        raise missing_files(sorted(needs), excludable=False)
    for entry in dest.iterdir():  # what the failed checkout wrote before it stopped
        if entry.name == ".git":
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    chosen = (lambda _: True) if full else wanted or (lambda _: False)
    readable = [] if full else [p for p in blobs if p not in missing and chosen(p)]
    left_out = sorted(p for p in missing if chosen(p))
    if full:
        patterns = ["/*"]
    run_git(["config", "core.sparseCheckout", "true"], repo=dest)
    (dest / ".git" / "info").mkdir(exist_ok=True)
    (dest / ".git" / "info" / "sparse-checkout").write_text(
        "".join(f"/{_sparse_escape(p)}\n" for p in sorted(set(needed) | set(readable)))
        + "".join(f"{p}\n" for p in patterns)  # where new files may come
        + "".join(f"!/{_sparse_escape(p)}\n" for p in left_out if patterns))  # never these
    run_git(["read-tree", "-u", "--reset", "--end-of-options", commit], repo=dest)
    return _partial_clone_of(upstream, dest)


def cut_short_checkout(dest: Path) -> bool:
    """Whether ``dest`` holds only what a ``scratch_checkout`` whose `git init` was cut
    short leaves (an interrupt or a timeout ends git's group with patchctl): a ``.git``
    that git cannot read, beside no file. Only when that ``.git`` holds no ref, reflog,
    index, object or linked work tree: a repository that does is someone's work,
    whatever state it is in. Deleting one that passes loses nothing."""
    git_dir = dest / ".git"
    if git_dir.is_symlink() or not git_dir.is_dir():
        return False
    if any(entry.name != ".git" for entry in dest.iterdir()):
        return False
    if any(os.path.lexists(git_dir / name) for name in ("packed-refs", "index", "worktrees")):
        return False
    for top in ("refs", "logs", "objects"):
        for folder, _, files in os.walk(git_dir / top):
            # objects/info/ holds the alternates patchctl writes: pointers, not objects
            if files and Path(folder) != git_dir / "objects" / "info":
                return False
    return True


def _partial_clone_of(upstream: Path, dest: Path) -> Path:
    """Make ``dest`` a partial clone of ``upstream``, as git understands one: a left-out
    file's blob may be missing (a skip-worktree entry), so building a tree (patchctl's
    commits and the user's own) does not demand it. Without this a missing blob at the
    root made every commit fail ("error building trees"). Set last: nothing before it
    may try to fetch a missing blob."""
    run_git(["config", "remote.upstream.url", str(upstream.absolute())], repo=dest)
    run_git(["config", "remote.upstream.promisor", "true"], repo=dest)
    return dest


def sparse_patterns(globs: Sequence[str]) -> list[str]:
    """Scope globs (``*`` within a name, ``**`` across directories) as sparse-checkout
    patterns, which read ``*``, ``?`` and ``[...]`` alike and ``**`` only as a whole
    path segment; a glob they would read otherwise (``a**b``) is left out."""
    out = []
    for glob in globs:
        parts = glob.strip("/").split("/")
        if glob.strip() and all(p == "**" or "**" not in p for p in parts):
            out.append("/" + "/".join(parts))
    return out


def _sparse_escape(path: str) -> str:
    """A literal path as a sparse-checkout (gitignore-style) pattern."""
    out = []
    for ch in path:
        out.append("\\" + ch if ch in "*?[]!#\\" else ch)
    return "".join(out)


@dataclass(frozen=True)
class MarkedApply:
    """What ``apply_with_markers`` did: git's run, and the .rej files its ``--reject``
    fallback wrote (paths relative to the work tree; none after a three-way merge)."""

    run: ApplyRun
    rejects: list[str]


def apply_with_markers(work: Path, patch: Path, *, strip: int) -> MarkedApply:
    """``git apply --3way`` in a work tree: conflicts are left as markers and unmerged paths.

    When a three-way merge is impossible (the patch's preimage blobs are not in
    the repository), fall back to ``--reject`` so the failed hunks land in .rej files.
    """
    r = run_git(["apply", "--3way", f"-p{strip}", str(patch)], repo=work, check=False)
    rejects: list[str] = []
    if r.returncode != 0 and not worktree_status(work).unmerged:
        before = set(rej_files(work))
        r = run_git(["apply", "--reject", f"-p{strip}", str(patch)], repo=work, check=False)
        rejects = [p for p in rej_files(work) if p not in before]
    return MarkedApply(ApplyRun(r.returncode, r.stdout, r.stderr), rejects)


def rej_files(work: Path) -> list[str]:
    """The untracked ``*.rej`` files in ``work``, ignored ones too (a .gitignore may hide
    them from `git status`), as paths relative to it, sorted."""
    out = run_git(["ls-files", "--others", "-z", "--", "*.rej"], repo=work).stdout
    return sorted(p for p in out.split("\0") if p)


@dataclass(frozen=True)
class WorktreeStatus:
    unmerged: list[str]
    unstaged: list[str]  # tracked files changed but not staged
    untracked: list[str]


def worktree_status(work: Path) -> WorktreeStatus:
    out = run_git(["status", "--porcelain=v1", "-z", "--untracked-files=all"], repo=work).stdout
    unmerged, unstaged, untracked = [], [], []
    fields = iter(out.split("\0"))
    for entry in fields:
        if len(entry) < 4:
            continue
        xy, path = entry[:2], entry[3:]
        if xy[0] in "RC":
            next(fields, None)  # the rename's source path
        if "U" in xy or xy in ("AA", "DD"):
            unmerged.append(path)
        elif xy == "??":
            untracked.append(path)
        elif xy[1] != " ":
            unstaged.append(path)
    return WorktreeStatus(unmerged, unstaged, untracked)


def index_tree(work: Path) -> str:
    """The tree of what is staged in ``work``'s own index."""
    return run_git(["write-tree"], repo=work).stdout.strip()


def snapshot_tree(work: Path) -> str:
    """The tree of ``work`` as it is on disk (committed, staged or not, untracked but not
    ignored), built in a throwaway index so the user's own index is left alone.

    In a sparse work tree every file on disk counts, inside the sparse patterns or
    not (``add --sparse``); a file left out of the work tree by design (skip-worktree
    in the work tree's own index and absent) is kept as HEAD has it, never deleted.
    A file the user staged counts even where .gitignore ignores it (`git add -f`, as
    llama.cpp's ``/models/*`` asks for a file under models/)."""
    tags = _index_tags(work)
    skipped = [path for tag, path in tags if tag == "S" and not os.path.lexists(work / path)]
    with tempfile.TemporaryDirectory(prefix="patchctl-snap-") as tmp:
        env = git_env(GIT_INDEX_FILE=str(Path(tmp) / "index"))
        run_git(["read-tree", "HEAD"], repo=work, env=env)
        if skipped:
            run_git(["update-index", "--skip-worktree", "-z", "--stdin"], repo=work, env=env,
                    input="".join(f"{p}\0" for p in skipped))
        sparse = ["--sparse"] if (work / ".git" / "info" / "sparse-checkout").is_file() else []
        run_git(["add", "-A", *sparse, "."], repo=work, env=env)  # --sparse: git 2.34
        have = set(run_git(["ls-files", "-z"], repo=work, env=env).stdout.split("\0"))
        forced = [path for _, path in tags if path not in have and os.path.lexists(work / path)]
        if forced:  # staged by the user although ignored
            run_git(["add", "-f", *sparse, "--pathspec-from-file=-", "--pathspec-file-nul"],
                    repo=work, env={**env, "GIT_LITERAL_PATHSPECS": "1"},
                    input="".join(f"{p}\0" for p in forced))
        # a blob the upstream lacks is left out by design; its tree entry stays as HEAD's
        return run_git(["write-tree", *(["--missing-ok"] if skipped else [])], repo=work,
                       env=env).stdout.strip()


def _index_tags(work: Path) -> list[tuple[str, str]]:
    """(``ls-files -t`` tag, path) of each entry of ``work``'s own index."""
    out = run_git(["ls-files", "-t", "-z"], repo=work).stdout.split("\0")
    return [(e[0], e[2:]) for e in out if len(e) > 2]


def commit_index(work: Path, message: str, *, author: str) -> str:
    """Commit what is staged in ``work`` (fixed committer, the patch's author)."""
    env = dict(git_env(**FIXED_IDENTITY))
    name, _, email = author.partition("<")
    if email:
        env["GIT_AUTHOR_NAME"], env["GIT_AUTHOR_EMAIL"] = name.strip(), email.rstrip(">").strip()
    run_git(["commit", "-q", "--no-verify", "--allow-empty", "-m", message], repo=work, env=env)
    return run_git(["rev-parse", "HEAD"], repo=work).stdout.strip()


_UNFINISHED = (("rebase-merge", "rebase"), ("rebase-apply", "rebase"),
               ("MERGE_HEAD", "merge"), ("CHERRY_PICK_HEAD", "cherry-pick"),
               ("REVERT_HEAD", "revert"))


def unfinished_operation(work: Path) -> str | None:
    """The git operation stopped half-way in ``work`` (``rebase``, ``merge``,
    ``cherry-pick``, ``revert``), or None: its HEAD is then not what the user means."""
    args = [a for name, _ in _UNFINISHED for a in ("--git-path", name)]
    paths = run_git(["rev-parse", *args], repo=work).stdout.splitlines()
    return next((what for (_, what), path in zip(_UNFINISHED, paths, strict=True)
                 if os.path.lexists(work / path)), None)


def work_head(work: Path) -> str:
    """The commit at HEAD of a work tree patchctl made (the rebase work tree)."""
    return run_git(["rev-parse", "--verify", "HEAD^{commit}"], repo=work).stdout.strip()


def reset_work(work: Path, commit: str, *, keep: bool) -> None:
    """Move ``work``'s branch back to ``commit``. ``keep``: the index and files stay as
    they are (what was committed since becomes staged); else both are reset to
    ``commit`` and untracked files (.rej leftovers) removed. ``commit`` comes from a
    state file: it must be a full object id (git 2.39's reset refuses
    ``--end-of-options``, so nothing option-like may reach it)."""
    if not OBJECT_ID.fullmatch(commit):
        raise InputError(f"not a commit id: {commit!r} (the rebase state is damaged)")
    if keep:
        run_git(["reset", "-q", "--soft", commit], repo=work)
    else:
        run_git(["reset", "-q", "--hard", commit], repo=work)
        run_git(["clean", "-q", "-f", "-d"], repo=work)


@dataclass(frozen=True)
class GitWork:
    """What a scratch checkout holds that patchctl did not make (``unrecorded_work``)."""

    branches: list[str]
    tags: list[str]
    other_refs: list[str]
    worktrees: list[str]  # linked work trees, by path
    stash: int  # entries
    empty_commits: int  # on HEAD since ``since``: a message without a change
    operation: str | None  # a git operation stopped half-way

    def __bool__(self) -> bool:
        return bool(self.branches or self.tags or self.other_refs or self.worktrees or
                    self.stash or self.empty_commits or self.operation)

    def describe(self) -> str:
        """In words, one line: ``branches: wip, series; stash: 1 entry; ...``."""
        def names(what: str, items: list[str]) -> list[str]:
            return [f"{what}: {', '.join(shorten(i, 200) for i in items[:5])}"
                    + (f" and {len(items) - 5} more" if len(items) > 5 else "")] if items else []
        return "; ".join([
            *names("branches", self.branches), *names("tags", self.tags),
            *names("linked worktrees", self.worktrees), *names("other refs", self.other_refs),
            *([f"stash: {self.stash} {'entry' if self.stash == 1 else 'entries'}"]
              if self.stash else []),
            *([f"commits not in any patch: {self.empty_commits} on HEAD (they change "
               "nothing)"] if self.empty_commits else []),
            *([f"a git {self.operation} stopped half-way"] if self.operation else [])])


def unrecorded_work(work: Path, *, since: str | None) -> GitWork:
    """The git work in the scratch checkout ``work`` that deleting it would lose and that
    patchctl did not make: refs other than ``SCRATCH_BRANCH`` (remote-tracking refs are
    copies of work kept elsewhere), linked work trees, stash entries, a git operation
    stopped half-way, and the commits on HEAD since ``since`` (the pin) that change
    nothing. Those are the only commits counted: every other commit on HEAD changes the
    files, and the caller compares the work tree's files with what it recorded."""
    refs = run_git(["for-each-ref", "--format=%(refname)"], repo=work).stdout.splitlines()
    branches, tags, other = [], [], []
    for ref in refs:
        if ref == SCRATCH_BRANCH or ref.startswith("refs/remotes/") or ref == "refs/stash":
            continue
        if ref.startswith("refs/heads/"):
            branches.append(ref.removeprefix("refs/heads/"))
        elif ref.startswith("refs/tags/"):
            tags.append(ref.removeprefix("refs/tags/"))
        else:
            other.append(ref)
    stash = 0
    if "refs/stash" in refs:
        out = run_git(["rev-list", "--walk-reflogs", "--count", "refs/stash", "--"],
                      repo=work, check=False).stdout.strip()
        stash = int(out) if out.isdigit() else 1
    return GitWork(branches, tags, other, _linked_worktrees(work), stash,
                   _empty_commits(work, since) if since else 0, unfinished_operation(work))


def _linked_worktrees(work: Path) -> list[str]:
    """The paths of ``work``'s linked work trees that still exist (not the main one)."""
    r = run_git(["worktree", "list", "--porcelain", "-z"], repo=work, check=False)
    if r.returncode == 0:  # -z: git 2.36; a path may hold a newline
        blocks = [b.split("\0") for b in r.stdout.split("\0\0")]
    else:
        out = run_git(["worktree", "list", "--porcelain"], repo=work).stdout
        blocks = [b.splitlines() for b in out.split("\n\n")]
    blocks = [b for b in blocks if b and b[0].startswith("worktree ")]
    return [b[0].removeprefix("worktree ") for b in blocks[1:]
            if not any(ln.startswith("prunable") for ln in b)]


def _empty_commits(work: Path, since: str) -> int:
    """How many commits on HEAD since ``since`` have the tree of their (first) parent."""
    if not OBJECT_ID.fullmatch(since):
        return 0
    out = run_git(["rev-list", "--boundary", "--format=%m %H %T %P", "HEAD", "--not", since,
                   "--"], repo=work, check=False).stdout.splitlines()
    trees: dict[str, str] = {}
    commits: list[tuple[str, list[str]]] = []
    for line in out:
        mark, *ids = line.split() or [""]
        if mark in ("<", ">", "-") and len(ids) >= 2:  # not the "commit ID" lines between
            trees[ids[0]] = ids[1]
            if mark != "-":
                commits.append((ids[1], ids[2:]))
    return sum(1 for tree, parents in commits if parents and trees.get(parents[0]) == tree)
