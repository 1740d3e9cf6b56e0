from __future__ import annotations

from dataclasses import asdict

import click

from patchctl.burden import MAX_DAYS
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
@click.option("--days", type=click.IntRange(min=0, max=MAX_DAYS), default=90, show_default=True,
              help=DAYS_HELP)
@click.option("--commits", "-v", "show_commits", is_flag=True,
              help="List each patch's upstream commits (id and subject).")
@click.option("--hunks", "show_hunks", is_flag=True,
              help="Also list each hunk that stands on a commit of the window, and which: "
                   "where a patch's burden sits (not cached).")
@upstream_option
@json_option
@quiet_option
@click.pass_context
def burden(ctx: click.Context, days: int, show_commits: bool, show_hunks: bool,
           upstream: str | None, as_json: bool) -> int:
    """What carrying each patch costs: the upstream commits of the N days before the pin
    that last changed the lines its hunks stand on.

    Context and removed lines, followed back through the earlier patches to the pin and
    blamed there (a file the stack adds costs nothing): had the stack been made N days
    ago, each such commit would have been a conflict or a three-way merge. Also each
    patch's files and its library and test lines (test_paths in the pin file, default
    tests/), and the stack's distinct commits. A measure, not a check: exit 0; a patch
    with a hunk that does not match the pin is not counted, and a note names the hunk.
    """
    from patchctl.burden import render
    from patchctl.burden.engine import burden as run_burden
    from patchctl.burden.engine import hunk_burden

    stack = stack_of(ctx)
    repo = resolve_upstream(upstream, stack.pin(), stack)
    report = run_burden(stack, repo, days=days, progress=progress)
    hunks = hunk_burden(stack, repo, days=days) if show_hunks else None
    end_progress()
    if as_json:
        data = report.to_dict()
        if hunks is not None:
            data["hunks"] = [asdict(h) for h in hunks[0]]
        emit_json(data)
    else:
        click.echo(render.burden_text(report, commits=show_commits), nl=False)
        if hunks is not None:
            click.echo(render.hunks_text(*hunks), nl=False)
    return 0
