"""Running git: one helper, a scrubbed environment, and small typed queries."""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from patchctl.errors import EnvironmentFailure, GitError, InputError

_KEEP_GIT_VARS = {
    "GIT_EXEC_PATH",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_SSL_CAINFO",
    "GIT_SSL_NO_VERIFY",
    "GIT_ASKPASS",
    "GIT_TERMINAL_PROMPT",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_NOSYSTEM",
    "GIT_ALLOW_PROTOCOL",
    "GIT_PROTOCOL_FROM_USER",
    "GIT_HTTP_USER_AGENT",
    "GIT_TRACE",
    "GIT_TRACE_PACKET",
    "GIT_CURL_VERBOSE",
}
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def _base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in _KEEP_GIT_VARS}
    env["LC_ALL"] = "C"  # messages we parse must not be translated
    env["GIT_TERMINAL_PROMPT"] = env.get("GIT_TERMINAL_PROMPT", "0")
    return env


_ENV: dict[str, str] | None = None


def git_env(**extra: str) -> dict[str, str]:
    global _ENV
    if _ENV is None:
        _ENV = _base_env()
    return {**_ENV, **extra} if extra else _ENV


@dataclass(frozen=True)
class Result:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str


def run_git(
    args: Sequence[str | os.PathLike[str]],
    *,
    repo: Path | None = None,
    env: dict[str, str] | None = None,
    input: str | None = None,
    check: bool = True,
) -> Result:
    """Run ``git [-C repo] args``. With ``check``, a non-zero exit raises GitError."""
    argv = ["git"]
    if repo is not None:
        argv += ["-C", str(repo)]
    argv += [str(a) for a in args]
    try:
        proc = subprocess.run(
            argv,
            input=input,
            capture_output=True,
            text=True,
            errors="surrogateescape",
            env=env or git_env(),
            check=False,
        )
    except FileNotFoundError as e:
        raise EnvironmentFailure("git is not installed or not on PATH; install git >= 2.30") from e
    result = Result(argv, proc.returncode, proc.stdout, proc.stderr)
    if check and proc.returncode != 0:
        raise GitError(argv, proc.returncode, proc.stderr)
    return result


@functools.cache
def version() -> str:
    return run_git(["--version"]).stdout.strip()


def git_dir(path: Path) -> Path:
    """The git directory of the repository at ``path`` (bare or not); InputError if none."""
    if not path.exists():
        raise InputError(f"upstream {path} does not exist")
    r = run_git(["rev-parse", "--absolute-git-dir"], repo=path, check=False)
    if r.returncode != 0:
        raise InputError(f"upstream {path} is not a git repository")
    return Path(r.stdout.strip())


def resolve_commit(repo: Path, ref: str) -> str | None:
    r = run_git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
                repo=repo, check=False)
    return r.stdout.strip() if r.returncode == 0 else None


def commit_and_tree(repo: Path, commit: str) -> tuple[Path, str] | None:
    """(git dir, tree id) of ``commit`` in one git process; None if the commit is missing."""
    r = run_git(["rev-parse", "--absolute-git-dir", "--verify", "--quiet", f"{commit}^{{tree}}"],
                repo=repo, check=False)
    lines = r.stdout.split()
    if r.returncode != 0 or len(lines) != 2:
        git_dir(repo)  # raises when it is no repository at all
        return None
    return Path(lines[0]), lines[1]


def ref_names(repo: Path) -> list[str]:
    """Short names of the branches, tags and remote branches of ``repo`` (for completion)."""
    out = run_git(["for-each-ref", "--format=%(refname:short)", "refs/heads", "refs/tags",
                   "refs/remotes"], repo=repo, check=False).stdout
    return [ln for ln in out.splitlines() if ln]


def tree_of(repo: Path, commit: str) -> str:
    return run_git(["rev-parse", "--verify", f"{commit}^{{tree}}"], repo=repo).stdout.strip()


def is_ancestor(repo: Path, ancestor: str, descendant: str) -> bool:
    r = run_git(["merge-base", "--is-ancestor", ancestor, descendant], repo=repo, check=False)
    return r.returncode == 0


def first_parent_path(repo: Path, old: str, new: str) -> list[str]:
    """Commits on new's first-parent line after ``old``, oldest first."""
    out = run_git(["rev-list", "--first-parent", "--reverse", f"{old}..{new}"], repo=repo).stdout
    return out.split()


def subject(repo: Path, commit: str) -> str:
    return run_git(["log", "-1", "--format=%s", commit], repo=repo).stdout.strip()


def symlinks_among(repo: Path, treeish: str, paths: Sequence[str]) -> set[str]:
    """Which of ``paths`` are symbolic links in ``treeish``."""
    if not paths:
        return set()
    out = run_git(["ls-tree", "-z", "--full-tree", treeish, "--", *paths], repo=repo).stdout
    links = set()
    for entry in out.split("\0"):
        if entry.startswith("120000 "):
            links.add(entry.split("\t", 1)[1])
    return links


def last_line(text: str | bytes | None) -> str:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    """The last non-empty line of a command's stderr, for one-line messages."""
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1].removeprefix("stderr: ").strip("'") if lines else "no output"
