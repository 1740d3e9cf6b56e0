"""The upstream cache: URLs and bundles fetched once, the pin only, blobs lazily
(from a server that speaks git's protocol: ``network``)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from patchctl.errors import InputError
from patchctl.gitrepo import network
from patchctl.gitrepo.core import refuse_option, resolve_commit, run_git

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
        _new_cache_repo(repo, url)
    _fetch(repo, url, commit, progress)
    if not resolve_commit(repo, commit):
        raise InputError(f"commit {commit} is not in upstream {url}")
    return repo


def _new_cache_repo(repo: Path, url: str) -> None:
    run_git(["init", "--bare", "-q", "--", str(repo)])
    run_git(["remote", "add", "--", "origin", refuse_option(url, "upstream URL")], repo=repo)


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


def _fetch(repo: Path, url: str, commit: str,
           progress: Callable[[str], None] | None) -> None:
    """Fetch ``commit`` into the cache repository ``repo``: as a partial clone (blobs
    lazily) from a server that speaks git's protocol, whole from a plain HTTP one, which a
    partial clone must never fetch from (``network``)."""
    plain = network.answers_plain_http(url)
    if plain and network.is_partial(repo):
        # made when the server still spoke git's protocol: start again, whole
        shutil.rmtree(repo)
        _new_cache_repo(repo, url)
    if not network.fetch(repo, url, [commit], partial=not plain, progress=progress):
        raise InputError(f"commit {commit} is not in upstream {url}")
