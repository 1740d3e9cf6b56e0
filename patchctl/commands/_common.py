"""What several commands share: finding the stack, the upstream, progress output."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import click

from patchctl.errors import EXIT_FINDINGS, EXIT_OK
from patchctl.stack import Pin, Stack, find_stack

upstream_option = click.option(
    "--upstream",
    metavar="PATH|URL",
    envvar="PATCHCTL_UPSTREAM",
    help="A local clone (bare or not; partial clones work) or a URL to fetch into the cache. "
    "Default: the pin file's URL, cloned once into the cache.  [env: PATCHCTL_UPSTREAM]",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON (stable schema).")

_URL = re.compile(r"^([a-z][a-z0-9+.-]*://|[\w.-]+@[\w.-]+:)", re.IGNORECASE)


def is_url(spec: str) -> bool:
    """A URL or scp-like address (fetched into the cache), not a local path."""
    return bool(_URL.match(spec)) and not Path(spec).expanduser().exists()


def project_dir(ctx: click.Context) -> Path:
    return Path(ctx.obj["project"]) if ctx.obj else Path(".")


def stack_of(ctx: click.Context) -> Stack:
    return find_stack(project_dir(ctx))


def resolve_upstream(spec: str | None, pin: Pin, stack: Stack | None = None, *,
                     checked: bool = True) -> Path:
    """A local git directory holding the pin.

    ``spec`` (or the pin file's URL) is a local clone, a git bundle, or a URL;
    bundles and URLs are fetched once into the cache. A relative path in the
    pin file is relative to the project directory. Without ``checked``, a local
    clone is returned as given, not yet asked for its git directory: for a caller
    whose first git call does that anyway (verify's ``gitrepo.commit_and_tree``).
    """
    from patchctl import gitrepo

    if spec is None:
        spec = pin.url
        if stack is not None and not _URL.match(spec) and not Path(spec).is_absolute():
            spec = str(stack.root.parent / spec)
    path = Path(spec).expanduser()
    if is_url(spec):
        return gitrepo.cached_upstream(spec, pin.commit, progress=progress)
    if path.is_file():
        return gitrepo.cached_bundle(path, pin.commit)
    return gitrepo.git_dir(path) if checked else path


def _completion_project(ctx: click.Context) -> Path:
    return Path(ctx.find_root().params.get("project") or ".")


def complete_patch(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Shell completion: the series' patch names starting with (else containing) the word."""
    try:
        names = [e.name for e in find_stack(_completion_project(ctx)).series()]
    except Exception:  # completion must never print a traceback into the shell
        return []
    starts = [n for n in names if n.startswith(incomplete)]
    return starts or [n for n in names if incomplete in n]


def complete_ref(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Shell completion: branches and tags of the upstream, when it is here already
    (a local clone, a bundle, or a URL already in the cache; never fetched)."""
    from patchctl import gitrepo

    try:
        stack = find_stack(_completion_project(ctx))
        pin = stack.pin()
        spec = ctx.params.get("upstream") or os.environ.get("PATCHCTL_UPSTREAM")
        if spec is None and _URL.match(pin.url):
            repo = gitrepo.upstream_cache_dir(pin.url)
            if not repo.is_dir():
                return []
        else:
            repo = resolve_upstream(spec, pin, stack)
        return [r for r in gitrepo.ref_names(repo) if r.startswith(incomplete)]
    except Exception:  # completion must never print a traceback into the shell
        return []


def progress(message: str) -> None:
    """Progress goes to stderr, and only to a terminal, so pipes and --json stay clean."""
    if sys.stderr.isatty() and not os.environ.get("PATCHCTL_QUIET"):
        click.echo(f"\r\033[K{message}", err=True, nl=False)


def end_progress() -> None:
    if sys.stderr.isatty() and not os.environ.get("PATCHCTL_QUIET"):
        click.echo("\r\033[K", err=True, nl=False)


def emit_json(data: object) -> None:
    import json

    click.echo(json.dumps(data, indent=2, sort_keys=True, default=str))


def exit_for(ok: bool) -> int:
    return EXIT_OK if ok else EXIT_FINDINGS
