"""Running git: one helper, a scrubbed environment, and small typed queries."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from patchctl import procs
from patchctl.errors import EnvironmentFailure, GitError, InputError
from patchctl.toolout import reason

OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # a full SHA-1 or SHA-256 id

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
# Fixed identity and dates make the commits patchctl writes (small histories, a temp
# index's commits, the edit work tree's), and so their ids, reproducible.
_FIXED_DATE = "1970-01-01T00:00:00Z"
FIXED_IDENTITY = {
    "GIT_AUTHOR_NAME": "patchctl",
    "GIT_AUTHOR_EMAIL": "patchctl@localhost",
    "GIT_COMMITTER_NAME": "patchctl",
    "GIT_COMMITTER_EMAIL": "patchctl@localhost",
    "GIT_AUTHOR_DATE": _FIXED_DATE,
    "GIT_COMMITTER_DATE": _FIXED_DATE,
}


# The user's and the system's git config never reach git: a global core.autocrlf,
# apply.whitespace=fix, diff.noprefix, commit.gpgSign or a hooks path would change
# what patchctl writes or make it fail. Only calls that need the user's own settings
# (network fetches: proxies, credentials, insteadOf; the user's name) read them.
_CONTROLLED = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
# Values that matter even against a repository's own config (an upstream clone's
# .git/config): the bytes written, and no command run on our behalf. Automatic
# maintenance is such a command, and a gc it detaches would hold the stack's lock, which
# every process a writer starts inherits (procs.inheriting), for as long as it repacks.
_FIXED_CONFIG = ("-c", "core.autocrlf=false", "-c", "core.safecrlf=false",
                 "-c", "core.fsmonitor=false", "-c", "core.hooksPath=" + os.devnull,
                 "-c", "commit.gpgSign=false", "-c", "core.quotePath=true",
                 "-c", "maintenance.auto=false")
NETWORK_TIMEOUT_ENV = "PATCHCTL_NETWORK_TIMEOUT"


def _base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in _KEEP_GIT_VARS}
    env["LC_ALL"] = "C"  # messages we parse must not be translated
    env["GIT_TERMINAL_PROMPT"] = env.get("GIT_TERMINAL_PROMPT", "0")
    env.update(_CONTROLLED)
    return env


_ENV: dict[str, str] | None = None


def git_env(**extra: str) -> dict[str, str]:
    global _ENV
    if _ENV is None:
        _ENV = _base_env()
    return {**_ENV, **extra} if extra else _ENV


def user_config_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: git_env()) with the user's own git config readable again."""
    out = {k: v for k, v in (env or git_env()).items() if k not in _CONTROLLED}
    out.update({k: os.environ[k] for k in _CONTROLLED if k in os.environ})
    return out


def network_timeout() -> float:
    """Seconds a network git operation may take in all ($PATCHCTL_NETWORK_TIMEOUT, else
    900): a stalled git:// or ssh:// server has no low-speed limit of its own."""
    value = os.environ.get(NETWORK_TIMEOUT_ENV, "")
    try:
        return float(value) if value else 900.0
    except ValueError as e:
        raise InputError(f"{NETWORK_TIMEOUT_ENV}={value!r} is not a number of seconds") from e


@dataclass(frozen=True)
class Result:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str

    def failure(self) -> GitError:
        """This run as the error that says why it failed: the reason in git's stderr
        (toolout), not its hints. Every GitError is made here."""
        return GitError(self.argv, self.returncode, self.stderr, reason(self.stderr))


def run_git(
    args: Sequence[str | os.PathLike[str]],
    *,
    repo: Path | None = None,
    env: dict[str, str] | None = None,
    input: str | None = None,
    check: bool = True,
    timeout: float | None = None,
    spool: bool = False,
) -> Result:
    """Run ``git [-C repo] args`` under the controlled config, in a process group of its
    own (``procs``). With ``check``, a non-zero exit raises GitError; past ``timeout``
    seconds, or past ``procs.MAX_PROCESSES`` at once, the whole group is killed
    (EnvironmentFailure). With ``spool``, git writes its output to unnamed temp files,
    not pipes: ``git apply -v`` writes a line at a time, unbuffered, and thousands of pipe
    writes each waking this process cost git more than its work on a 2,000-patch batch."""
    if spool:
        result = start_git(args, repo=repo, env=env, input=input).wait(timeout)
    else:
        argv = _argv(args, repo)
        with _git_failures(args, timeout):
            done = procs.run(argv, input=_encode(input), env=env or git_env(), timeout=timeout)
        result = Result(argv, done.returncode, _decode(done.stdout), _decode(done.stderr))
    if check and result.returncode != 0:
        raise result.failure()
    return result


def _encode(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-8", "surrogateescape")


def _decode(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", "surrogateescape")


def _argv(args: Sequence[str | os.PathLike[str]], repo: Path | None) -> list[str]:
    return ["git", *_FIXED_CONFIG, *(["-C", str(repo)] if repo is not None else []),
            *(str(a) for a in args)]


@contextlib.contextmanager
def _git_failures(args: Sequence[str | os.PathLike[str]],
                  timeout: float | None) -> Iterator[None]:
    """git missing, past its time, or a flood of processes: one EnvironmentFailure that
    says so."""
    what = " ".join(str(a) for a in args[:2])
    try:
        yield
    except FileNotFoundError as e:
        raise EnvironmentFailure("git is not installed or not on PATH; install git >= 2.30") from e
    except subprocess.TimeoutExpired as e:
        raise EnvironmentFailure(
            f"`git {what}` made no end in {timeout:g} s (a stalled server?); every process "
            f"it started was stopped; check the network, or raise {NETWORK_TIMEOUT_ENV}") from e
    except procs.ProcessFlood as e:
        # The one cascade known: git 2.39 in a partial clone whose server answers as plain
        # HTTP, each object lookup a lazy fetch that walks again.
        raise EnvironmentFailure(
            f"`git {what}` had {e.count} processes running at once (more than {e.limit}), so "
            f"all were stopped: a server answering as plain (\"dumb\") HTTP makes git "
            f"before 2.44 recurse in a partial clone; pass --upstream with a local clone, or "
            f"a smart-HTTP, ssh or git:// URL") from e


class Started:
    """A git process running in a group of its own with its output spooled to unnamed
    temp files (``start_git``); ``wait()`` gives its Result, whatever its exit code."""

    def __init__(self, args: Sequence[str | os.PathLike[str]], argv: list[str],
                 env: dict[str, str], input: str | None) -> None:
        self._args, self.argv = args, argv
        self._input = _encode(input)
        with contextlib.ExitStack() as held:
            self._files = (held.enter_context(tempfile.TemporaryFile()),
                           held.enter_context(tempfile.TemporaryFile()))
            with _git_failures(args, None):
                self._proc = held.enter_context(procs.start(
                    argv, input=self._input, env=env, stdout=self._files[0],
                    stderr=self._files[1]))
            # wait() ends the group (when still running) and closes the files; an error
            # here, at once
            self._close = held.pop_all().close

    def wait(self, timeout: float | None = None) -> Result:
        try:
            with _git_failures(self._args, timeout):
                procs.wait(self._proc, self.argv, input=self._input, timeout=timeout)
            texts = []
            for f in self._files:
                f.seek(0)
                texts.append(_decode(f.read()))
        finally:
            self._close()
        return Result(self.argv, self._proc.returncode, texts[0], texts[1])


def start_git(args: Sequence[str | os.PathLike[str]], *, repo: Path | None = None,
              env: dict[str, str] | None = None, input: str | None = None) -> Started:
    """``run_git(..., spool=True, check=False)`` in two steps: git starts now, and
    ``Started.wait()`` waits for it (a caller can tell others it is under way first)."""
    return Started(args, _argv(args, repo), env or git_env(), input)


def run_git_bytes(args: Sequence[str | os.PathLike[str]], *, repo: Path | None = None,
                  env: dict[str, str] | None = None, input: bytes = b"") -> bytes:
    """``run_git`` for bytes in and out (``cat-file --batch``, ``fast-import`` streams);
    a non-zero exit raises GitError."""
    argv = _argv(args, repo)
    with _git_failures(args, None):
        done = procs.run(argv, input=input, env=env or git_env())
    if done.returncode != 0:
        raise Result(argv, done.returncode, "", _decode(done.stderr)).failure()
    return done.stdout or b""


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


def refuse_option(value: str, what: str) -> str:
    """A user-supplied ref, range, path or URL must never be read by git as an option."""
    if value.startswith("-"):
        raise InputError(f"{what} {value!r} starts with '-': not a ref, path or URL "
                         "(refused so git cannot read it as an option)")
    return value


def resolve_commit(repo: Path, ref: str) -> str | None:
    refuse_option(ref, "ref")
    r = run_git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
                repo=repo, check=False)
    return r.stdout.strip() if r.returncode == 0 else None


_REF_KINDS = (("refs/tags/", "tag"), ("refs/heads/", "branch"), ("refs/remotes/", "remote"))


@dataclass(frozen=True)
class Ref:
    """What a user's ref resolved to: the commit, and the tag or branch it named."""

    commit: str
    kind: str  # tag | branch | remote | commit (an id, or an expression such as HEAD~2)
    name: str | None = None


def resolve_ref(repo: Path, ref: str, *, what: str = "ref") -> Ref | None:
    """Resolve a tag, branch or commit; None when it is none of them.

    A name that is both a tag and a branch (on different commits) is refused, naming
    both, where git would pick one silently. A short id is a commit, never a name.
    """
    refuse_option(ref, what)
    out = run_git(["for-each-ref", "--format=%(refname)%00%(objectname)%00%(*objectname)",
                   *(prefix + ref for prefix, _ in _REF_KINDS)], repo=repo).stdout
    named: dict[str, tuple[str, str]] = {}
    for line in out.splitlines():
        full, obj, peeled = line.split("\0")
        for prefix, kind in _REF_KINDS:
            if full == prefix + ref:
                named[full] = (kind, peeled or obj)
    commits = {c for _, c in named.values()}
    if len(commits) > 1:
        raise InputError(f"{what} {ref!r} is ambiguous: " + " and ".join(
            f"{full} ({c[:12]})" for full, (_, c) in sorted(named.items()))
            + "; pass the full ref name or the commit id")
    commit = resolve_commit(repo, ref)
    if commit is None:
        return None
    for prefix, kind in _REF_KINDS:
        if prefix + ref in named:
            return Ref(commit, kind, ref)
    return Ref(commit, "commit")


def commit_and_tree(repo: Path, commit: str) -> tuple[Path, str] | None:
    """(git dir, tree id) of ``commit`` in one git process; None if the commit is missing."""
    # ^{commit} first: a tree id is no pin (its ^{tree} would be itself)
    r = run_git(["rev-parse", "--absolute-git-dir", "--verify", "--quiet",
                 f"{commit}^{{commit}}^{{tree}}"], repo=repo, check=False)
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
    return run_git(["rev-parse", "--verify", "--end-of-options", f"{commit}^{{tree}}"],
                   repo=repo).stdout.strip()


def is_ancestor(repo: Path, ancestor: str, descendant: str) -> bool:
    r = run_git(["merge-base", "--is-ancestor", "--end-of-options", ancestor, descendant],
                repo=repo, check=False)
    return r.returncode == 0


def first_parent_path(repo: Path, old: str, new: str) -> list[str]:
    """Commits on new's first-parent line after ``old``, oldest first."""
    out = run_git(["rev-list", "--first-parent", "--reverse", "--end-of-options",
                   f"{old}..{new}"], repo=repo).stdout
    return out.split()


def subject(repo: Path, commit: str) -> str:
    """``commit``'s subject, printable (an upstream's text: shown, never parsed)."""
    from patchctl.untrusted import printable

    return printable(run_git(["log", "-1", "--format=%s", "--end-of-options", commit],
                             repo=repo).stdout.strip())


def tree_symlinks(repo: Path, tree: str, *,
                  cache_dir: Path | None = None) -> tuple[frozenset[str], int]:
    """Every symbolic link in the tree ``tree`` (a tree id), and the git processes that
    took (0 or 1). A tree id names its contents for good, so the answer is kept in the
    cache dir (``<cache>/symlinks/<tree>``: the paths, NUL-separated) and each tree is
    listed once."""
    from patchctl import fsutil

    if not OBJECT_ID.fullmatch(tree):
        raise ValueError(f"not a tree id: {tree!r}")
    kept = (cache_dir or fsutil.cache_dir()) / "symlinks" / tree
    try:
        text = kept.read_text(encoding="utf-8", errors="surrogateescape")
    except (OSError, UnicodeDecodeError):
        pass
    else:
        return frozenset(p for p in text.split("\0") if p), 0
    out = run_git(["ls-tree", "-r", "-z", "--full-tree", "--end-of-options", tree],
                  repo=repo).stdout
    links = frozenset(e.split("\t", 1)[1] for e in out.split("\0") if e.startswith("120000 "))
    with contextlib.suppress(OSError):  # a read-only cache: listed again next time
        fsutil.atomic_write(kept, "\0".join(sorted(links)).encode("utf-8", "surrogateescape"))
    return links, 1
