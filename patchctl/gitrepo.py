"""Everything patchctl asks of git, as typed functions over plain values.

Hot paths (verify, bisect) run git directly: one process per call, no
GitPython import cost. GitPython is used where it earns its weight, for
fetching into the upstream cache with a progress display, and it is imported
only there. No other module runs git or imports GitPython.
"""

from __future__ import annotations

import contextlib
import functools
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
        # A stalled transfer (under 1 byte/s for a minute) fails instead of hanging.
        quiet = {"LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0", "GIT_HTTP_LOW_SPEED_LIMIT": "1",
                 "GIT_HTTP_LOW_SPEED_TIME": "60"}
        with handle.git.custom_environment(**quiet):
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


# -- rebase-pin, authoring and export -----------------------------------------------------

# Regenerated patches must be byte-identical on any machine, so no user config
# (diff.noprefix, diff.context, color, renames, orderFile...) may reach these calls.
_STABLE = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
_DIFF = ["-c", "core.quotePath=true", "diff-tree", "-r", "-p", "--stat=72", "--summary",
         "--full-index", "--binary", "--no-renames", "--no-color", "--no-ext-diff",
         "--no-textconv", "-U3", "--inter-hunk-context=0", "--src-prefix=a/",
         "--dst-prefix=b/", "--diff-algorithm=myers"]


def format_diff(repo: Path, old_tree: str, new_tree: str, *,
                env: dict[str, str] | None = None) -> str:
    """Diffstat, a blank line, then the diff from ``old_tree`` to ``new_tree`` ("" if none).

    Pass a TempIndex's ``env`` when the trees were written through it.
    """
    return run_git([*_DIFF, old_tree, new_tree], repo=repo,
                   env={**(env or git_env()), **_STABLE}).stdout


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
                   "--no-ext-diff", "--format=commit %H", f"{old}..{new}", "--", *paths],
                  repo=repo, env=git_env(**_STABLE)).stdout
    ids: dict[str, str] = {}
    for line in run_git(["patch-id", "--stable"], repo=repo, input=log).stdout.splitlines():
        pid, commit = line.split()
        ids[pid] = commit  # log lists newest first: the last one seen is the oldest
    return ids


def is_tag(repo: Path, name: str) -> bool:
    r = run_git(["rev-parse", "--verify", "--quiet", f"refs/tags/{name}"], repo=repo, check=False)
    return r.returncode == 0


def fetch_ref(repo: Path, ref: str) -> str | None:
    """Fetch ``ref`` (commit, tag or branch) from the cache repo's origin; its commit id."""
    r = run_git(["fetch", "-q", "--filter=blob:none", "--no-tags", "origin", ref], repo=repo,
                check=False)
    return resolve_commit(repo, "FETCH_HEAD") if r.returncode == 0 else None


def scratch_checkout(upstream: Path, dest: Path, commit: str) -> Path:
    """A new repository at ``dest`` on branch ``patchctl`` at ``commit``.

    It borrows ``upstream``'s objects as an alternate, so nothing is copied and
    nothing is written into the upstream; deleting ``dest`` leaves no trace.
    """
    run_git(["init", "-q", str(dest)])
    objects = Path(run_git(["rev-parse", "--git-path", "objects"], repo=upstream).stdout.strip())
    objects = objects if objects.is_absolute() else upstream / objects
    (dest / ".git" / "objects" / "info" / "alternates").write_text(f"{objects.resolve()}\n")
    # The files are written through the upstream itself: in a partial clone that is
    # where the promisor remote is configured, so missing blobs are fetched there.
    run_git(["--git-dir", str(upstream.absolute()), "--work-tree", str(dest.absolute()),
             "read-tree", "-u", "--reset", commit],
            env=git_env(GIT_INDEX_FILE=str((dest / ".git" / "index").absolute())))
    run_git(["update-ref", "refs/heads/patchctl", commit], repo=dest)
    run_git(["symbolic-ref", "HEAD", "refs/heads/patchctl"], repo=dest)
    return dest


def apply_with_markers(work: Path, patch: Path, *, strip: int) -> ApplyRun:
    """``git apply --3way`` in a work tree: conflicts are left as markers and unmerged paths.

    When a three-way merge is impossible (the patch's preimage blobs are not in
    the repository), fall back to ``--reject`` so the failed hunks land in .rej files.
    """
    r = run_git(["apply", "--3way", f"-p{strip}", str(patch)], repo=work, check=False)
    if r.returncode != 0 and not worktree_status(work).unmerged:
        r = run_git(["apply", "--reject", f"-p{strip}", str(patch)], repo=work, check=False)
    return ApplyRun(r.returncode, r.stdout, r.stderr)


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
    ignored), built in a throwaway index so the user's own index is left alone."""
    with tempfile.TemporaryDirectory(prefix="patchctl-snap-") as tmp:
        env = git_env(GIT_INDEX_FILE=str(Path(tmp) / "index"))
        run_git(["read-tree", "HEAD"], repo=work, env=env)
        run_git(["add", "-A", "."], repo=work, env=env)
        return run_git(["write-tree"], repo=work, env=env).stdout.strip()


def commit_index(work: Path, message: str, *, author: str) -> str:
    """Commit what is staged in ``work`` (fixed committer, the patch's author)."""
    env = dict(git_env(**_IDENTITY))
    name, _, email = author.partition("<")
    if email:
        env["GIT_AUTHOR_NAME"], env["GIT_AUTHOR_EMAIL"] = name.strip(), email.rstrip(">").strip()
    run_git(["commit", "-q", "--no-verify", "--allow-empty", "-m", message], repo=work, env=env)
    return run_git(["rev-parse", "HEAD"], repo=work).stdout.strip()


def rev_range(repo: Path, spec: str) -> list[str]:
    """Non-merge commits of ``spec`` oldest first; a single revision means just that commit."""
    if ".." not in spec:
        commit = resolve_commit(repo, spec)
        if commit is None:
            raise InputError(f"{spec!r} is not a commit in {repo}")
        return [commit]
    r = run_git(["rev-list", "--reverse", "--no-merges", spec], repo=repo, check=False)
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
        ["log", "-1", f"--format={fmt}", commit], repo=repo).stdout.split("\0", 4)
    parent = parents.split()[0] if parents.split() else None
    return CommitInfo(commit, author, date, message.rstrip("\n"), tree_of(repo, parent)
                      if parent else EMPTY_TREE, tree)


def mailsplit(mbox: Path, outdir: Path) -> list[Path]:
    """Split an mbox (or one format-patch file) into one file per message, in order."""
    outdir.mkdir(parents=True, exist_ok=True)
    r = run_git(["mailsplit", "-b", f"-o{outdir}", str(mbox)], check=False)
    if r.returncode != 0:
        raise InputError(f"{mbox}: not an mbox or format-patch file ({_last_line(r.stderr)})")
    return sorted(outdir.iterdir())


def mailinfo(mail: Path, msg: Path, patch: Path) -> dict[str, str]:
    """``git mailinfo``: decoded Author/Email/Subject/Date; body to ``msg``, diff to ``patch``."""
    text = mail.read_bytes().decode("utf-8", "surrogateescape")
    out = run_git(["mailinfo", "-u", str(msg), str(patch)], input=text).stdout
    info: dict[str, str] = {}
    for line in out.splitlines():
        key, sep, value = line.partition(": ")
        if sep:
            info[key] = value
    return info


def author_ident() -> str:
    """The user's ``Name <email>`` as git would record it, or a neutral stand-in."""
    r = run_git(["var", "GIT_AUTHOR_IDENT"], check=False)
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


def seed_blobs(repo: Path, treeish: str, patches: Sequence[tuple[Path, int]]) -> None:
    """Apply ``(patch, strip)`` in order on ``treeish`` in a throwaway index, for the side
    effect: every intermediate blob lands in ``repo``'s own object store, where a later
    ``git apply --3way`` looks up each patch's preimage. Failures are ignored."""
    with tempfile.TemporaryDirectory(prefix="patchctl-seed-") as tmp:
        env = git_env(GIT_INDEX_FILE=str(Path(tmp) / "index"))
        run_git(["read-tree", treeish], repo=repo, env=env)
        for patch, strip in patches:
            run_git(["apply", "--cached", f"-p{strip}", str(patch)], repo=repo, env=env,
                    check=False)
