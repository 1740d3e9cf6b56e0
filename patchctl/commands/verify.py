from __future__ import annotations

from pathlib import Path

import click

from patchctl.commands._common import (
    emit_json,
    end_progress,
    exit_for,
    json_option,
    progress,
    project_dir,
    quiet_option,
    resolve_upstream,
    stack_of,
    upstream_option,
)


@click.command()
@upstream_option
@json_option
@quiet_option
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write a JUnit XML report to FILE.")
@click.option("--format", "fmt", type=click.Choice(["text", "github"]), default="text",
              show_default=True, help="`github` prints GitHub Actions ::error annotations.")
@click.option("--strict", is_flag=True, help="Offsets and lint warnings fail too.")
@click.pass_context
def verify(ctx: click.Context, upstream: str | None, as_json: bool, junit: Path | None,
           fmt: str, strict: bool) -> int:
    """Prove at the exact pin that each patch applies and reverses cleanly (fuzz 0).

    Index-only: the pin's tree is read into a temporary index, so nothing is
    checked out. Exit 0 when clean, 1 when the stack has findings.
    """
    from patchctl.model.stackwrite import stack_read_lock
    from patchctl.verify import render
    from patchctl.verify.engine import verify as run_verify

    stack = stack_of(ctx)
    repo = resolve_upstream(upstream, stack.pin(), stack, checked=False)
    with stack_read_lock(project_dir(ctx), wait=progress):  # one consistent stack
        report = run_verify(stack, repo, strict=strict, progress=progress)
    end_progress()
    if junit:
        from patchctl.fsutil import atomic_write

        atomic_write(junit, render.verify_junit(report))
    if as_json:
        emit_json(report.to_dict())
    elif fmt == "github":
        click.echo(render.verify_github(report), nl=False)
    else:
        click.echo(render.verify_text(report), nl=False)
    return exit_for(report.ok)
