"""``patchctl ci``: workflows for GitHub Actions, a lane run locally, the canary's pieces."""

from __future__ import annotations

import os
from pathlib import Path

import click

from patchctl.ci.workflows import DEFAULT_CRON, DEFAULT_LANES, DEFAULT_OUT
from patchctl.commands._common import (
    complete_ref,
    emit_json,
    end_progress,
    exit_for,
    is_url,
    json_option,
    project_dir,
    quiet_option,
    resolve_upstream,
    shown_path,
    stack_of,
    upstream_option,
)
from patchctl.errors import InputError, StackError
from patchctl.model import schemas


@click.group()
def ci() -> None:
    """CI for the stack: GitHub Actions workflows, lanes, the upstream canary.

    `ci github` writes the workflows; each lane there runs `ci run --lane L`,
    which runs the same steps on this machine.
    """


@ci.command()
@click.option("--out", default=DEFAULT_OUT, show_default=True,
              type=click.Path(file_okay=False, path_type=str),
              help="Directory for the workflow files (relative to the repository root, "
              "the current directory).")
@click.option("--lanes", "lanes_text", default=",".join(DEFAULT_LANES), show_default=True,
              metavar="LANE,...",
              help="Lanes of the matrix: cpu, cuda, vulkan, metal.")
@click.option("--runner", "runners", multiple=True, metavar="LANE=LABEL[,LABEL...]",
              help="runs-on labels of a lane, e.g. cuda=self-hosted,linux,cuda "
              "(defaults: cpu ubuntu-latest, metal macos-14, cuda and vulkan self-hosted).")
@click.option("--canary-cron", default=DEFAULT_CRON, show_default=True, metavar="CRON",
              help="When the upstream canary runs (UTC cron).")
@click.option("--canary-issue", is_flag=True,
              help="The canary opens, updates and closes one tracking issue with the gh CLI.")
@click.option("--install", metavar="REQUIREMENT",
              help="How runners install patchctl: a pip requirement, run in the project "
              "directory, e.g. a git URL pinned to a commit ('patchctl @ "
              "git+https://HOST/OWNER/patchctl@COMMIT') or a wheel in the repository. "
              "Required, except in patchctl's own checkout, where it defaults to that "
              "checkout: a bare name would install whatever PyPI holds as patchctl, "
              "which is not this project.")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if a file is stale.")
@json_option
@click.pass_context
def github(ctx: click.Context, out: str, lanes_text: str, runners: tuple[str, ...],
           canary_cron: str, canary_issue: bool, install: str | None, check: bool,
           as_json: bool) -> int:
    """Write the GitHub Actions workflows: stack check + lane matrix, and the canary.

    Run it at the repository root; -C names the project (holding stack/) inside
    it. The output is deterministic and its header names this command.
    """
    from patchctl.ci import workflows

    project = project_dir(ctx)
    rel = os.path.relpath(project.absolute(), Path.cwd())
    if rel == ".." or rel.startswith("../") or os.path.isabs(rel):
        raise InputError(f"project {project} is outside the current directory; run "
                         "`patchctl ci github` at the repository root")
    stack = stack_of(ctx)
    runner_map = dict(workflows.parse_runner(r) for r in runners)
    workflows.workflow_value("--out", out)  # as given: the header shows it normalised
    where = Path(rel).as_posix()
    opts = workflows.Options(
        project=where, out=shown_path(Path(out), Path.cwd()),
        lanes=workflows.parse_lanes(lanes_text), runners=runner_map,
        canary_cron=" ".join(canary_cron.split()), canary_issue=canary_issue,
        install=install if install is not None else workflows.default_install(Path.cwd(), where),
        name=stack.pin().name)
    result = workflows.write(opts, Path(out), check=check)
    if as_json:
        emit_json(result.to_dict())
    else:
        for name, state in result.files.items():
            click.echo(f"{Path(out) / name}: {state}")
        if not result.ok:
            click.echo(f"regenerate with: {result.command}")
    return exit_for(result.ok)


@ci.command()
@click.option("--lane", default="cpu", show_default=True,
              help="cpu, cuda, vulkan or metal.")
@upstream_option
@click.option("--work", type=click.Path(file_okay=False, path_type=Path),
              help="Where the applied tree, the native build and logs go.  "
              "[default: <project>/.patchctl/ci/<lane>]")
@click.option("--exclude", multiple=True, metavar="GLOB",
              help="Leave upstream paths out of the applied tree (passed to apply and "
              "reproduce).")
@click.option("--list", "list_only", is_flag=True, help="Print the steps; run nothing.")
@json_option
@click.pass_context
def run(ctx: click.Context, lane: str, upstream: str | None, work: Path | None,
        exclude: tuple[str, ...], list_only: bool, as_json: bool) -> int:
    """Run one lane's steps here, exactly as the workflow's lane job does.

    verify, apply --into, the native configure/build/CTest (when the project
    has native/CMakeLists.txt) and reproduce (when a patch names a reproducer);
    a step that does not apply is skipped with its reason, the first failure
    stops the lane. Exit 0 when every step passed or was skipped, 1 otherwise.
    """
    from patchctl.ci import lanes

    the_lane = lanes.lane_named(lane)
    project = project_dir(ctx)
    stack = stack_of(ctx)
    work = (work or lanes.default_work(project, the_lane)).absolute()
    github_mode = os.environ.get("GITHUB_ACTIONS") == "true"
    steps = lanes.plan(project, stack, the_lane, work=work, upstream=upstream, exclude=exclude)
    if list_only:
        if as_json:
            emit_json({"schema": schemas.CI_PLAN, "lane": the_lane.name, "work": str(work),
                       "steps": [{"name": s.name, "command": s.display(), "skip": s.skip}
                                 for s in steps]})
        else:
            for s in steps:
                click.echo(f"{s.name:<10} " + (f"skipped: {s.skip}" if s.skip else s.display()))
        return 0

    def echo(text: str) -> None:
        click.echo(text, nl=False, err=as_json)

    result = lanes.run(the_lane, steps, project=project, work=work, echo=echo,
                       github=github_mode)
    if as_json:
        emit_json(result.to_dict())
    else:
        click.echo(f"lane {the_lane.name}: {'passed' if result.ok else 'FAILED'} "
                   f"in {result.seconds:.1f} s")
        for s in result.steps:
            why = f"  ({s.skip})" if s.skip else (f"  {s.seconds:.2f} s" if s.log else "")
            click.echo(f"  {s.name:<10} {s.status}{why}")
    return exit_for(result.ok)


@ci.command()
@click.argument("ref", default="HEAD", shell_complete=complete_ref)
@upstream_option
@quiet_option
@click.pass_context
def tip(ctx: click.Context, ref: str, upstream: str | None) -> None:
    """Print the upstream commit REF names now (default HEAD: the default branch).

    With the pin file's URL (or --upstream URL) it is fetched into the cache
    clone, so `rebase-pin <printed commit>` finds it there.
    """
    from patchctl.ci.canary import upstream_tip

    stack = stack_of(ctx)
    pin = stack.pin()
    repo = resolve_upstream(upstream, pin, stack)
    commit = upstream_tip(repo, ref, fetch=is_url(upstream or pin.url))
    end_progress()
    click.echo(commit)


@ci.command()
@click.argument("report", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--previous", type=click.Path(dir_okay=False, path_type=Path),
              help="The previous run's report; missing: compare with the pin.")
@click.option("--status", "status_file", type=click.Path(dir_okay=False, path_type=Path),
              help="An `upstream-status --ref TIP --json` report: which patches upstream "
              "superseded. Missing: not shown.")
@click.option("--markdown", "markdown_out", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the Markdown summary to FILE.")
@click.option("--outputs", type=click.Path(dir_okay=False, path_type=Path),
              help="Append broken=, new=, fixed=, landed= lines to FILE ($GITHUB_OUTPUT).")
@click.option("--url", help="Upstream URL for commit links.  [default: the pin file's]")
@json_option
@click.pass_context
def summary(ctx: click.Context, report: Path, previous: Path | None,
            status_file: Path | None, markdown_out: Path | None, outputs: Path | None,
            url: str | None, as_json: bool) -> int:
    """Summarize a `rebase-pin --check --bisect --json` REPORT as Markdown.

    Each patch's grade, the first upstream commit that broke it, landed
    patches, and (with --status) superseded ones. Exit 1 only when a patch is
    newly broken: grade conflict now, and not in the previous report.
    """
    from patchctl.ci import canary
    from patchctl.fsutil import atomic_write

    data = canary.load_report(report)
    prev = None
    if previous is not None:
        if previous.exists():
            prev = canary.load_report(previous, what="previous report")
        else:
            click.echo(f"no previous report at {previous}: comparing with the pin", err=True)
    status = None
    if status_file is not None:
        if status_file.exists():
            status = canary.load_status(status_file)
        else:
            click.echo(f"no upstream-status report at {status_file}: superseded patches "
                       "not shown", err=True)
    name = None
    try:
        pin = stack_of(ctx).pin()
        name, url = pin.name, url or pin.url
    except StackError:
        pass  # a report read away from its project: no name, links only with --url
    result = canary.compare(data, prev, status=status, name=name, url=url)
    text = canary.markdown(result)
    if markdown_out:
        atomic_write(markdown_out, text)
    if outputs:
        with open(outputs, "a", encoding="utf-8") as f:
            f.write(result.outputs())
    if as_json:
        emit_json(result.to_dict())
    else:
        click.echo(text, nl=False)
    return exit_for(result.ok)
