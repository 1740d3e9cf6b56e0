from __future__ import annotations

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

DAYS_HELP = "The window: the days before the pin's committer date."


@click.command()
@click.option("--days", type=click.IntRange(min=0), default=90, show_default=True,
              help=DAYS_HELP)
@click.option("--commits", "-v", "show_commits", is_flag=True,
              help="List each patch's upstream commits (id and subject).")
@upstream_option
@json_option
@quiet_option
@click.pass_context
def burden(ctx: click.Context, days: int, show_commits: bool, upstream: str | None,
           as_json: bool) -> int:
    """What carrying each patch costs: the upstream commits of the N days before the pin
    that last changed the lines its hunks stand on.

    Context and removed lines, followed back through the earlier patches to the pin and
    blamed there (a file the stack adds costs nothing): had the stack been made N days
    ago, each such commit would have been a conflict or a three-way merge. Also each
    patch's files and its library and test lines (test_paths in the pin file, default
    tests/), and the stack's distinct commits. A measure, not a check: exit 0.
    """
    from patchctl.burden import render
    from patchctl.burden.engine import burden as run_burden

    stack = stack_of(ctx)
    repo = resolve_upstream(upstream, stack.pin(), stack)
    report = run_burden(stack, repo, days=days, progress=progress)
    end_progress()
    if as_json:
        emit_json(report.to_dict())
    else:
        click.echo(render.burden_text(report, commits=show_commits), nl=False)
    return 0
