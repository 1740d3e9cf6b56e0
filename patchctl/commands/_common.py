"""What several commands share: finding the stack, the upstream, progress output."""

from __future__ import annotations

import json
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


def project_dir(ctx: click.Context) -> Path:
    return Path(ctx.obj["project"]) if ctx.obj else Path(".")


def stack_of(ctx: click.Context) -> Stack:
    return find_stack(project_dir(ctx))


def resolve_upstream(spec: str | None, pin: Pin) -> Path:
    """A local git directory holding the pin: the given path, or the cached clone of a URL."""
    from patchctl import gitrepo

    spec = spec or pin.url
    if _URL.match(spec) and not Path(spec).exists():
        return gitrepo.cached_upstream(spec, pin.commit, progress=progress)
    return gitrepo.git_dir(Path(spec).expanduser())


def progress(message: str) -> None:
    """Progress goes to stderr, and only to a terminal, so pipes and --json stay clean."""
    if sys.stderr.isatty() and not os.environ.get("PATCHCTL_QUIET"):
        click.echo(f"\r\033[K{message}", err=True, nl=False)


def end_progress() -> None:
    if sys.stderr.isatty() and not os.environ.get("PATCHCTL_QUIET"):
        click.echo("\r\033[K", err=True, nl=False)


def emit_json(data: object) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True, default=str))


def exit_for(ok: bool) -> int:
    return EXIT_OK if ok else EXIT_FINDINGS
