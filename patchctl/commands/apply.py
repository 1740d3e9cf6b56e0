from __future__ import annotations

from pathlib import Path

import click

from patchctl.commands._common import (
    emit_json,
    end_progress,
    json_option,
    progress,
    quiet_option,
    resolve_upstream,
    stack_of,
    upstream_option,
)
from patchctl.textout import count
from patchctl.untrusted import printable


@click.command()
@click.option("--into", "into", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory to hold pin + stack (created; replaced atomically). A symlink "
              "is followed: its target is replaced and the link kept. Never the project, "
              "the stack or the upstream.")
@upstream_option
@click.option("--commits", is_flag=True, help="Make DIR a git repo: the pin, then one commit "
              "per patch.")
@click.option("--exclude", multiple=True, metavar="GLOB",
              help="Leave out upstream paths (e.g. 'models/*.gguf'); recorded in the stamp.")
@click.option("--force", is_flag=True, help="Replace DIR even if it was edited or is not ours.")
@json_option
@quiet_option
@click.pass_context
def apply(ctx: click.Context, into: Path, upstream: str | None, commits: bool,
          exclude: tuple[str, ...], force: bool, as_json: bool) -> None:
    """Materialize the pinned upstream with the whole stack applied into DIR.

    DIR gets a `.patchctl-stamp` (pin, fingerprint, tree id, manifest, patches)
    that native/ checks at configure time. Re-running with the same stack is
    a no-op; a DIR edited by hand is refused unless --force.
    """
    from patchctl.reproducers.materialize import materialize

    stack = stack_of(ctx)
    repo = resolve_upstream(upstream, stack.pin(), stack)
    result = materialize(stack, repo, into, commits=commits, exclude=list(exclude), force=force,
                         progress=progress)
    end_progress()
    if as_json:
        emit_json(result.to_dict())
    else:
        verb = "up to date" if result.unchanged else "written"
        shown = f"{into} -> {result.into}" if into.is_symlink() else str(into)
        click.echo(f"{shown}: {verb} ({printable(result.stamp.name)} @ {result.stamp.pin[:12]} + "
                   f"{count(len(result.stamp.patches), 'patch')}, fingerprint "
                   f"{result.stamp.fingerprint[:16]}, tree {result.stamp.tree[:12]})")
