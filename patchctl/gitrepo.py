"""Everything patchctl asks of git, as typed functions over plain values.

Hot paths (verify, bisect) run git directly: one process per call, no
GitPython import cost. GitPython is used where it earns its weight, for
fetching into the upstream cache with a progress display, and it is imported
only there. No other module runs git or imports GitPython.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from patchctl.errors import EnvironmentFailure, GitError, InputError

# Inherited GIT_* variables would redirect our commands (GIT_DIR, GIT_INDEX_FILE
# from a hook, say); only these, which configure transport and tracing, survive.
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


@dataclass(frozen=True)
class ApplyRun:
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


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


# -- the upstream cache ---------------------------------------------------------------


def default_cache_dir() -> Path:
    if env := os.environ.get("PATCHCTL_CACHE_DIR"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "patchctl"


def cached_upstream(
    url: str,
    commit: str,
    *,
    cache_dir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """A bare clone of ``url`` under the cache holding ``commit``; fetched once.

    Only the pinned commit is fetched when it is missing (blobs lazily, as a
    partial clone), so a llama.cpp pin costs trees and commits, not history.
    """
    import hashlib

    root = (cache_dir or default_cache_dir()) / "upstreams"
    key = hashlib.sha256(url.encode()).hexdigest()[:12]
    tail = url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git") or "upstream"
    repo = root / f"{tail}-{key}.git"
    if repo.is_dir() and resolve_commit(repo, commit):
        return repo
    root.mkdir(parents=True, exist_ok=True)
    if not repo.is_dir():
        run_git(["init", "--bare", "-q", str(repo)])
        run_git(["remote", "add", "origin", url], repo=repo)
    _fetch(repo, commit, progress)
    if not resolve_commit(repo, commit):
        raise InputError(f"commit {commit} is not in upstream {url}")
    return repo


def cached_bundle(bundle: Path, commit: str, *, cache_dir: Path | None = None) -> Path:
    """A bare repo under the cache made from a git bundle file (offline upstreams)."""
    import hashlib

    with open(bundle, "rb") as f:
        key = hashlib.file_digest(f, "sha256").hexdigest()[:16]
    repo = (cache_dir or default_cache_dir()) / "bundles" / f"{bundle.stem}-{key}.git"
    if not (repo.is_dir() and resolve_commit(repo, commit)):
        tmp = repo.with_name(repo.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.parent.mkdir(parents=True, exist_ok=True)
        r = run_git(["clone", "-q", "--bare", str(bundle.resolve()), str(tmp)], check=False)
        if r.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise InputError(f"upstream {bundle} is neither a git repository nor a git bundle")
        shutil.rmtree(repo, ignore_errors=True)
        os.replace(tmp, repo)
    if not resolve_commit(repo, commit):
        raise InputError(f"commit {commit} is not in upstream bundle {bundle}")
    return repo


def _fetch(repo: Path, commit: str, progress: Callable[[str], None] | None) -> None:
    import git  # GitPython: for its fetch progress parsing

    class _Progress(git.RemoteProgress):
        def update(self, op_code, cur_count, max_count=None, message=""):
            if progress and max_count:
                progress(f"fetching: {self._cur_line}")

    handle = git.Repo(repo)
    try:
        with handle.git.custom_environment(**{"LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}):
            try:
                handle.remotes.origin.fetch(
                    commit, filter="blob:none", no_tags=True, progress=_Progress()
                )
            except git.GitCommandError as e:
                if "not our ref" in str(e) or "couldn't find remote ref" in str(e).lower():
                    raise InputError(f"commit {commit} is not in upstream "
                                     f"{handle.remotes.origin.url}") from e
                raise EnvironmentFailure(
                    f"cannot fetch {commit} from {handle.remotes.origin.url}: "
                    f"{_last_line(e.stderr)}; check the URL and network, or pass --upstream PATH"
                ) from e
    finally:
        handle.close()


def _last_line(text: str | bytes | None) -> str:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1].removeprefix("stderr: ").strip("'") if lines else "no output"


# -- small histories (apply --commits, edit worktrees) ----------------------------------

# Fixed identity and dates make the commits, and so their ids, reproducible.
_FIXED_DATE = "1970-01-01T00:00:00Z"
_IDENTITY = {
    "GIT_AUTHOR_NAME": "patchctl",
    "GIT_AUTHOR_EMAIL": "patchctl@localhost",
    "GIT_COMMITTER_NAME": "patchctl",
    "GIT_COMMITTER_EMAIL": "patchctl@localhost",
    "GIT_AUTHOR_DATE": _FIXED_DATE,
    "GIT_COMMITTER_DATE": _FIXED_DATE,
}


def init_history(work: Path, message: str) -> Path:
    """``git init`` in ``work`` and commit its files as they are."""
    run_git(["init", "-q", "-b", "main", str(work)])
    env = git_env(**_IDENTITY)
    run_git(["add", "-A", "-f", "."], repo=work, env=env)
    run_git(["commit", "-q", "--no-verify", "--allow-empty", "-m", message], repo=work, env=env)
    return work


def commit_patch(work: Path, patch: Path, *, strip: int, subject: str, body: str,
                 author: str) -> str:
    env = dict(git_env(**_IDENTITY))
    name, _, email = author.partition("<")
    if email:
        env["GIT_AUTHOR_NAME"], env["GIT_AUTHOR_EMAIL"] = name.strip(), email.rstrip(">").strip()
    run_git(["apply", "--index", f"-p{strip}", str(patch)], repo=work, env=env)
    message = subject + ("\n\n" + body if body else "") + "\n"
    run_git(["commit", "-q", "--no-verify", "--allow-empty", "-m", message], repo=work, env=env)
    return run_git(["rev-parse", "HEAD"], repo=work).stdout.strip()
