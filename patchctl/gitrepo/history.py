"""Small histories: apply --commits, edit/refresh, rebase-pin, import, export (their
work trees: worktree.py)."""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from patchctl.errors import InputError
from patchctl.gitrepo.core import (
    EMPTY_TREE,
    FIXED_IDENTITY,
    git_env,
    refuse_option,
    resolve_commit,
    run_git,
    run_git_bytes,
    tree_of,
    user_config_env,
)
from patchctl.gitrepo.index import SeriesItem, TempIndex, store_index
from patchctl.toolout import reason
from patchctl.untrusted import printable

_HEX = re.compile(r"^[0-9a-f]{4,40}$")

# -- small histories (apply --commits, edit worktrees) ----------------------------------


def init_history(work: Path, message: str) -> Path:
    """``git init`` in ``work`` and commit its files as they are."""
    run_git(["init", "-q", "-b", "main", "--", str(work)])
    env = git_env(**FIXED_IDENTITY)
    run_git(["add", "-A", "-f", "."], repo=work, env=env)
    run_git(["commit", "-q", "--no-verify", "--allow-empty", "-m", message], repo=work, env=env)
    return work


def commit_patch(work: Path, patch: Path, *, strip: int, subject: str, body: str,
                 author: str, trailers: Sequence[tuple[str, str]] | None = None) -> str:
    """Apply ``patch`` to ``work``'s index and commit it. With ``trailers`` (the edit work
    tree, whose messages `refresh --all` reads back) they follow the body as the last
    paragraph, and the message is kept verbatim (no whitespace clean-up)."""
    env = dict(git_env(**FIXED_IDENTITY))
    name, _, email = author.partition("<")
    if email:
        env["GIT_AUTHOR_NAME"], env["GIT_AUTHOR_EMAIL"] = name.strip(), email.rstrip(">").strip()
    r = run_git(["apply", "--index", f"-p{strip}", str(patch)], repo=work, env=env, check=False)
    if r.returncode != 0:  # the patch is at fault (a bad path, a conflict), not git
        raise InputError(f"{patch.name} does not apply: {reason(r.stderr)}; "
                         "`patchctl verify` says why")
    message = subject + ("\n\n" + body if body else "") + "\n"
    cleanup = []
    if trailers is not None:
        cleanup = ["--cleanup=verbatim"]
        if trailers:
            message += "\n" + "".join(f"{k}: {v}\n" for k, v in trailers)
    run_git(["commit", "-q", "--no-verify", "--allow-empty", *cleanup, "-m", message],
            repo=work, env=env)
    return run_git(["rev-parse", "HEAD"], repo=work).stdout.strip()


# -- rebase-pin, authoring and export -----------------------------------------------------

# Regenerated patches must be byte-identical on any machine: no user config reaches
# git (core.py), and every diff option that matters is spelled out. A renamed file stays a
# rename (git's default 50% similarity), so what reads a patch (burden's line tracking,
# verify's partition) follows it to its old path instead of seeing a new file.
_DIFF = ["diff-tree", "-r", "-p", "--stat=72", "--summary",
         "--full-index", "--binary", "--find-renames=50%", "--no-color", "--no-ext-diff",
         "--no-textconv", "-U3", "--inter-hunk-context=0", "--src-prefix=a/",
         "--dst-prefix=b/", "--diff-algorithm=myers"]


def format_diff(repo: Path, old_tree: str, new_tree: str, *,
                env: dict[str, str] | None = None, paths: Sequence[str] | None = None) -> str:
    """Diffstat, a blank line, then the diff from ``old_tree`` to ``new_tree`` ("" if none).

    Pass a TempIndex's ``env`` when the trees were written through it. ``paths``
    limits the diff to exactly those paths (literal, not globs).
    """
    limit = ["--", *(f":(literal){p}" for p in paths)] if paths is not None else []
    return run_git([*_DIFF, "--end-of-options", old_tree, new_tree, *limit], repo=repo,
                   env=env).stdout


def format_diffs(repo: Path, trees: Sequence[str], *,
                 env: dict[str, str] | None = None) -> list[str]:
    """``format_diff`` of each step of ``trees`` (t0 -> t1, t1 -> t2, ...), in one git call."""
    pairs = [f"{a} {b}" for a, b in itertools.pairwise(trees)]
    if not pairs:
        return []
    out = run_git([*_DIFF, "--stdin"], repo=repo, input="".join(p + "\n" for p in pairs),
                  env=env).stdout
    # Each step's output follows an echo of its input line; a diff line never is one
    # (every diff and stat line has a prefix or a keyword first).
    lines = out.split("\n")
    starts = []
    at = 0
    for pair in pairs:
        at = lines.index(pair, at)
        starts.append(at)
        at += 1
    bounds = [*starts, len(lines)]
    diffs = []
    for i in range(len(pairs)):
        chunk = lines[bounds[i] + 1:bounds[i + 1]]
        diffs.append("\n".join(chunk) + ("\n" if chunk and i < len(pairs) - 1 else ""))
    return diffs


def unmerged_paths(index: TempIndex) -> list[str]:
    """Paths a failed ``apply --3way`` left at conflict stages in a temporary index."""
    out = run_git(["ls-files", "-u", "-z"], repo=index.repo, env=index.env).stdout
    return sorted({e.split("\t", 1)[1] for e in out.split("\0") if "\t" in e})


def patch_id(repo: Path, diff_text: str) -> str | None:
    out = run_git(["patch-id", "--stable"], repo=repo, input=diff_text).stdout.split()
    return out[0] if out else None


def range_patch_ids(repo: Path, old: str, new: str, paths: Sequence[str]) -> dict[str, str]:
    """``git patch-id --stable`` of each non-merge commit in old..new, its diff limited to
    ``paths`` -> the oldest such commit. Limiting finds a change that landed inside a
    larger commit, and reads (or lazily fetches) only the blobs of those paths."""
    log = run_git(["log", "--no-merges", "-p", "--full-index", "--no-renames", "--no-color",
                   "--no-ext-diff", "--format=commit %H", "--end-of-options", f"{old}..{new}",
                   "--", *paths], repo=repo).stdout
    ids: dict[str, str] = {}
    for line in run_git(["patch-id", "--stable"], repo=repo, input=log).stdout.splitlines():
        pid, commit = line.split()
        ids[pid] = commit  # log lists newest first: the last one seen is the oldest
    return ids


@dataclass(frozen=True)
class CommitMessage:
    """An upstream commit's message: read to match references, shown only escaped."""

    id: str
    parent: str | None  # the first parent; None for a root commit
    subject: str
    body: str


def range_messages(repo: Path, old: str, new: str) -> list[CommitMessage]:
    """Every commit in ``old..new``, merges included, newest first (one ``git log``)."""
    out = run_git(["log", "--format=%H%x00%P%x00%s%x00%b%x1e", "--no-color",
                   "--end-of-options", f"{old}..{new}"], repo=repo).stdout
    commits = []
    for record in out.split("\x1e"):
        fields = record.lstrip("\n").split("\0", 3)
        if len(fields) == 4:
            commit, parents, subj, body = fields
            first = parents.split()[0] if parents.split() else None
            commits.append(CommitMessage(commit, first, subj, body))
    return commits


def commit_steps(repo: Path, tree: str, steps: Sequence[dict[str, tuple[str, bytes]]], *,
                 work: Path, env: dict[str, str] | None = None) -> list[str]:
    """Trees after each step (path -> (mode, contents) written) on top of ``tree``, from one
    ``git fast-import`` into a scratch repository at ``work`` that borrows the objects of
    ``repo`` (and of ``env``'s object directories); nothing is written into ``repo``."""
    env = dict(env or git_env())
    own = env.pop("GIT_OBJECT_DIRECTORY", None)
    borrowed = [str(_objects(repo)), *env.pop("GIT_ALTERNATE_OBJECT_DIRECTORIES", "").split(
        os.pathsep), *([own] if own else [])]
    env.pop("GIT_INDEX_FILE", None)
    run_git(["init", "-q", "--bare", "--", str(work)], env=env)
    (work / "objects" / "info" / "alternates").write_text(
        "".join(f"{d}\n" for d in borrowed if d))
    base = run_git(["commit-tree", tree, "-m", "base"], repo=work,
                   env=git_env(**FIXED_IDENTITY)).stdout
    stream = [b"feature done\n"]
    for i, files in enumerate(steps):
        stream.append(f"commit refs/heads/steps\nmark :{i + 1}\ncommitter patchctl "
                      f"<patchctl@localhost> 0 +0000\ndata 0\n".encode())
        if i == 0:
            stream.append(f"from {base.strip()}\n".encode())
        for path, (mode, data) in files.items():
            stream.append(f"M {mode} inline {_fast_import_path(path)}\ndata {len(data)}\n"
                          .encode("utf-8", "surrogateescape") + data + b"\n")
        stream.append(b"\n")
    stream.append(b"done\n")
    run_git_bytes(["fast-import", "--quiet"], repo=work, env=env, input=b"".join(stream))
    trees = run_git(["log", "--reverse", "--format=%T", "refs/heads/steps"], repo=work,
                    env=env).stdout.split()
    return trees[1:]  # the first is ``tree`` itself


def _objects(repo: Path) -> Path:
    objects = Path(run_git(["rev-parse", "--git-path", "objects"], repo=repo).stdout.strip())
    return (objects if objects.is_absolute() else repo / objects).resolve()


def _fast_import_path(path: str) -> str:
    """A path as fast-import reads it: C-quoted when it has a quote, newline or leading quote."""
    if not any(c in path for c in '"\n\\') and not path.startswith('"'):
        return path
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def rev_range(repo: Path, spec: str) -> list[str]:
    """Non-merge commits of ``spec`` oldest first; a single revision means just that commit.

    ``A..B`` (either end may be empty: HEAD) and ``A...B``: each end is resolved
    as a commit first, so nothing the user typed reaches git as an option."""
    refuse_option(spec, "revision range")
    sep = "..." if "..." in spec else ".." if ".." in spec else None
    if sep is None:
        commit = resolve_commit(repo, spec)
        if commit is None:
            raise InputError(f"{spec!r} is not a commit in {repo}")
        return [commit]
    ends = []
    for end in spec.split(sep, 1):
        commit = resolve_commit(repo, end or "HEAD")
        if commit is None:
            raise InputError(f"{spec!r} is not a revision range in {repo} "
                             f"({end!r} is not a commit)")
        ends.append(commit)
    r = run_git(["rev-list", "--reverse", "--no-merges", "--end-of-options", sep.join(ends)],
                repo=repo, check=False)
    if r.returncode != 0:
        raise InputError(f"{spec!r} is not a revision range in {repo}")
    return r.stdout.split()


@dataclass(frozen=True)
class CommitInfo:
    commit: str
    author: str  # Name <email>
    date: str  # RFC 2822
    message: str
    parent_tree: str
    tree: str


def commit_info(repo: Path, commit: str) -> CommitInfo:
    fmt = "%an <%ae>%x00%aD%x00%T%x00%P%x00%B"
    author, date, tree, parents, message = run_git(
        ["log", "-1", f"--format={fmt}", "--end-of-options", commit],
        repo=repo).stdout.split("\0", 4)
    parent = parents.split()[0] if parents.split() else None
    return CommitInfo(commit, author, date, message.rstrip("\n"), tree_of(repo, parent)
                      if parent else EMPTY_TREE, tree)


def mailsplit(mbox: Path, outdir: Path) -> list[Path]:
    """Split an mbox (or one format-patch file) into one file per message, in order."""
    outdir.mkdir(parents=True, exist_ok=True)
    r = run_git(["mailsplit", "-b", f"-o{outdir}", str(mbox.absolute())], check=False)
    if r.returncode != 0:
        raise InputError(f"{mbox}: not an mbox or format-patch file ({reason(r.stderr)})")
    return sorted(outdir.iterdir())


def mailinfo(mail: Path, msg: Path, patch: Path) -> dict[str, str]:
    """``git mailinfo``: decoded Author/Email/Subject/Date; body to ``msg``, diff to ``patch``."""
    text = mail.read_bytes().decode("utf-8", "surrogateescape")
    r = run_git(["mailinfo", "-u", str(msg), str(patch)], input=text, check=False)
    if r.returncode != 0:  # the mail is bad (an unknown charset, ...), not git
        raise InputError(f"git cannot read the mail: {reason(r.stderr)}")
    info: dict[str, str] = {}
    for line in r.stdout.splitlines():
        key, sep, value = line.partition(": ")
        if sep:  # header fields are text: bytes that are not UTF-8 cannot be kept there
            info[key] = value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return info


def author_ident() -> str:
    """The user's ``Name <email>`` as git would record it, or a neutral stand-in."""
    r = run_git(["var", "GIT_AUTHOR_IDENT"], check=False, env=user_config_env())
    ident = r.stdout.strip()
    return ident.rsplit(" ", 2)[0] if r.returncode == 0 and ">" in ident else \
        "patchctl <patchctl@localhost>"


def dirty_paths(path: Path, pathspec: Path) -> list[str] | None:
    """Uncommitted changes (untracked files included) under ``pathspec`` in the git work
    tree holding ``path``; None when ``path`` is not in a git work tree."""
    r = run_git(["rev-parse", "--is-inside-work-tree"], repo=path, check=False)
    if r.returncode != 0 or r.stdout.strip() != "true":
        return None
    out = run_git(["status", "--porcelain=v1", "-z", "--untracked-files=all", "--",
                   str(pathspec.resolve())], repo=path).stdout
    return [e[3:] for e in out.split("\0") if len(e) > 3]


def head_commit(path: Path) -> tuple[str, int] | None:
    """HEAD of the git work tree holding ``path`` and its committer time (Unix seconds,
    what SOURCE_DATE_EPOCH means); None outside a work tree or before the first commit."""
    r = run_git(["log", "-1", "--format=%H %ct", "HEAD"], repo=path, check=False)
    if r.returncode != 0 or not r.stdout.strip():
        return None
    commit, seconds = r.stdout.split()
    return commit, int(seconds)


def seed_blobs(repo: Path, treeish: str, patches: Sequence[tuple[Path, int]]) -> None:
    """Apply ``(patch, strip)`` one by one on ``treeish`` in a throwaway index, for the side
    effect: every intermediate blob lands in ``repo``'s own object store, where a later
    ``git apply --3way`` looks up each patch's preimage. Failures are skipped."""
    git_dir = repo / ".git" if (repo / ".git").is_dir() else repo
    with store_index(git_dir, git_dir / "objects") as index:
        index.read_tree(treeish)
        index.apply_series([SeriesItem(p, strip) for p, strip in patches], on_failure="skip",
                           batch=False)


def changed_paths(repo: Path, old: str, new: str) -> list[str]:
    """Paths that differ between two commits' trees (trees only: no blob is read)."""
    out = run_git(["diff-tree", "-r", "-z", "--no-renames", "--name-only", "--end-of-options",
                   old, new], repo=repo).stdout
    return [p for p in out.split("\0") if p]


@dataclass(frozen=True)
class FileChange:
    """One commit's change to one file: its hunks as (old start, old length, new start,
    new length), zero context, in file order."""

    commit: str
    subject: str
    hunks: tuple[tuple[int, int, int, int], ...]


def file_changes(repo: Path, old: str, new: str, path: str) -> list[FileChange]:
    """The first-parent commits after ``old`` up to ``new`` that changed ``path``, oldest
    first, each with its zero-context hunks (one ``git log`` call)."""
    out = run_git(["log", "--first-parent", "--reverse", "-p", "-U0", "--no-renames",
                   "--no-color", "--no-ext-diff", "--format=%x00%H %s", "--end-of-options",
                   f"{old}..{new}", "--", path], repo=repo).stdout
    changes = []
    for chunk in out.split("\0")[1:]:
        head, _, diff = chunk.partition("\n")
        commit, _, subj = head.partition(" ")
        hunks = []
        for line in diff.split("\n"):  # not splitlines(): a \x0c in a line starts none
            if line.startswith("@@ "):
                old_part, new_part = line.split(" ")[1:3]
                hunks.append((*_span(old_part[1:]), *_span(new_part[1:])))
        changes.append(FileChange(commit, printable(subj), tuple(hunks)))
    return changes


def _span(text: str) -> tuple[int, int]:
    start, _, length = text.partition(",")
    return int(start), int(length) if length else 1


def merge_base(repo: Path, a: str, b: str) -> str | None:
    """The best common ancestor of ``a`` and ``b``; None when they share no history."""
    r = run_git(["merge-base", "--end-of-options", a, b], repo=repo, check=False)
    return r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else None
