"""The upstream cache: URLs and bundles fetched once, the pin only, blobs lazily.

This is the only place GitPython is imported: its fetch progress parsing earns
the import cost here, and only here.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from patchctl.errors import EnvironmentFailure, InputError
from patchctl.gitrepo.core import (
    NETWORK_TIMEOUT_ENV,
    network_timeout,
    refuse_option,
    resolve_commit,
    run_git,
)
from patchctl.toolout import reason

# -- the upstream cache ---------------------------------------------------------------


def default_cache_dir() -> Path:
    from patchctl.fsutil import cache_dir

    return cache_dir()


def upstream_cache_dir(url: str, *, cache_dir: Path | None = None) -> Path:
    """Where ``cached_upstream`` keeps the bare clone of ``url`` (it may not exist yet)."""
    import hashlib

    key = hashlib.sha256(url.encode()).hexdigest()[:12]
    tail = url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git") or "upstream"
    return (cache_dir or default_cache_dir()) / "upstreams" / f"{tail}-{key}.git"


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
    repo = upstream_cache_dir(url, cache_dir=cache_dir)
    root = repo.parent
    if repo.is_dir() and resolve_commit(repo, commit):
        return repo
    root.mkdir(parents=True, exist_ok=True)
    if not repo.is_dir():
        run_git(["init", "--bare", "-q", "--", str(repo)])
        run_git(["remote", "add", "--", "origin", refuse_option(url, "upstream URL")], repo=repo)
    _fetch(repo, commit, progress)
    if not resolve_commit(repo, commit):
        raise InputError(f"commit {commit} is not in upstream {url}")
    return repo


def bundle_repo(bundle: Path, *, cache_dir: Path | None = None) -> Path:
    """A bare repo under the cache made from a git bundle file (offline upstreams), once
    per bundle content; InputError when the file is no bundle."""
    import hashlib

    try:
        with open(bundle, "rb") as f:
            key = hashlib.file_digest(f, "sha256").hexdigest()[:16]
    except OSError as e:
        raise InputError(f"upstream {bundle}: cannot read: {e.strerror}") from e
    repo = (cache_dir or default_cache_dir()) / "bundles" / f"{bundle.stem}-{key}.git"
    if not (repo / "HEAD").is_file():
        tmp = repo.with_name(repo.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.parent.mkdir(parents=True, exist_ok=True)
        r = run_git(["clone", "-q", "--bare", "--", str(bundle.resolve()), str(tmp)],
                    check=False)
        if r.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise InputError(f"upstream {bundle} is neither a git repository nor a git bundle")
        shutil.rmtree(repo, ignore_errors=True)
        os.replace(tmp, repo)
    return repo


def cached_bundle(bundle: Path, commit: str, *, cache_dir: Path | None = None) -> Path:
    """``bundle_repo``, which must hold ``commit``."""
    repo = bundle_repo(bundle, cache_dir=cache_dir)
    if not resolve_commit(repo, commit):
        raise InputError(f"commit {commit} is not in upstream bundle {bundle}")
    return repo


def _fetch(repo: Path, commit: str, progress: Callable[[str], None] | None) -> None:
    import git  # GitPython: for its fetch progress parsing

    class _Progress(git.RemoteProgress):
        def update(self, op_code: int, cur_count: str | float,
                   max_count: str | float | None = None, message: str = "") -> None:
            if progress and max_count:
                progress(f"fetching: {self._cur_line}")

    handle = git.Repo(repo)
    try:
        # A stalled transfer (under 1 byte/s for a minute) fails instead of hanging.
        # The user's config is read here on purpose (proxies, credentials, insteadOf);
        # the fixed values of every other git call still apply.
        quiet = {"LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0", "GIT_HTTP_LOW_SPEED_LIMIT": "1",
                 "GIT_HTTP_LOW_SPEED_TIME": "60"}
        timeout = network_timeout()
        with handle.git.custom_environment(**quiet):
            try:
                handle.remotes.origin.fetch(
                    commit, filter="blob:none", no_tags=True, progress=_Progress(),
                    kill_after_timeout=timeout,
                )
            except git.GitCommandError as e:
                if "not our ref" in str(e) or "couldn't find remote ref" in str(e).lower():
                    raise InputError(f"commit {commit} is not in upstream "
                                     f"{handle.remotes.origin.url}") from e
                if "timed out" in str(e.stderr):
                    raise EnvironmentFailure(
                        f"fetching {commit} from {handle.remotes.origin.url} made no end in "
                        f"{timeout:g} s (a stalled server?); check the network, or raise "
                        f"{NETWORK_TIMEOUT_ENV}") from e
                # GitPython quotes git's stderr as "\n  stderr: '...'".
                said = str(e.stderr).strip().removeprefix("stderr: ").strip("'")
                raise EnvironmentFailure(
                    f"cannot fetch {commit} from {handle.remotes.origin.url}: "
                    f"{reason(said)}; check the URL and network, or pass --upstream PATH"
                ) from e
    finally:
        handle.close()
