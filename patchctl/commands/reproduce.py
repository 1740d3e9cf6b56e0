from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from patchctl.commands._common import (
    complete_patch,
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
from patchctl.untrusted import printable

if TYPE_CHECKING:  # imported lazily at run time
    from patchctl.reproducers.reproduce import ReproduceReport


@click.command()
@click.argument("names", nargs=-1, metavar="[NAME]...", shell_complete=complete_patch)
@upstream_option
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Parallel compile jobs "
              "(default: ninja's).")
@click.option("--keep", is_flag=True, help="Stop at the first unexpected step and keep the "
              "source and build trees as it left them, for inspection.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Source and build trees, logs.  [default: <project>/.patchctl/reproduce]")
@click.option("--exclude", multiple=True, metavar="GLOB",
              help="Leave upstream paths out of the source tree (e.g. 'models/*.gguf', for a "
              "mirror that lacks them).")
@click.option("--isolate", is_flag=True, help="One build tree per reproducer (no shared CMake "
              "cache; the upstream library is compiled once per reproducer).")
@json_option
@quiet_option
@click.pass_context
def reproduce(ctx: click.Context, names: tuple[str, ...], upstream: str | None,
              jobs: int | None, keep: bool, cache_dir: Path | None, exclude: tuple[str, ...],
              isolate: bool, as_json: bool) -> int:
    """Build each patch's reproducer: it must fail before the patch and pass after it.

    NAME is a patch file name, its number, @N, a unique part of a name, or a
    concern (default: every patch with a `Reproducer:` trailer). Needs cmake
    >= 3.21, ninja and a compiler (`pip install cmake ninja`). Writes
    evidence/reproduce-<name>.json and .log; a run of named patches writes
    reproduce-<name>--<patch>.json per patch instead, leaving the other records alone.
    Exit 0 when every reproducer fails before and passes after, 1 otherwise.

    Progress goes to stderr, per step (preparing the source tree, configuring,
    building, running the test, and each step's result with its time): on a
    terminal in one line, elsewhere (a pipe, a log) a line per step once the
    run has taken 2 s; --quiet (or --json, off a terminal) leaves it out.
    """
    from patchctl.reproducers.reproduce import reproduce as run_reproduce
    from patchctl.reproducers.reproduce import write_evidence

    project = project_dir(ctx)
    stack = stack_of(ctx)
    repo = resolve_upstream(upstream, stack.pin(), stack)
    try:
        report = run_reproduce(stack, repo, project=project, names=names, cache_dir=cache_dir,
                               jobs=jobs, exclude=list(exclude), isolate=isolate, keep=keep,
                               progress=progress)
    finally:
        end_progress()
    if report.patches:
        argv = ["patchctl", "-C", str(project), "reproduce", *names]
        argv += [f"--exclude={g}" for g in exclude] + (["--isolate"] if isolate else [])
        argv += ([f"--jobs={jobs}"] if jobs else []) + (["--keep"] if keep else [])
        write_evidence(report, project / "evidence", argv, per_patch=bool(names))
    if as_json:
        emit_json(report.to_dict())
    else:
        _render(report)
    return exit_for(report.ok)


def _render(report: ReproduceReport) -> None:
    from patchctl.reproducers.reproduce import PROVEN

    click.echo(f"{printable(report.name)} @ {report.pin[:12]}, "
               f"fingerprint {report.fingerprint[:16]}: "
               f"{len(report.patches)} reproducer(s)"
               + ("" if report.shared_build else " (isolated build trees)"))
    if not report.patches:
        click.echo("no patch names a reproducer (add a `Reproducer:` trailer)")
        return
    for r in report.patches:
        click.echo(f"  {r.index:>3}  {r.name}  {r.reproducer}  {r.outcome}")
        for s in (r.before, r.after):
            secs = sum(s.seconds.values())
            click.echo(f"         {s.role:<6} pin+{s.prefix:<3} {s.verdict:<16} {secs:7.2f} s "
                       f"{'cold' if s.cold else 'incremental':<11} compiled {s.compiled} "
                       f"({s.upstream_compiled} upstream)")
        if r.outcome != PROVEN:
            bad = r.before if r.before.passed else r.after
            if bad.reason:  # configure or the build failed: what CMake or the compiler said
                click.echo(f"           {bad.verdict}: {bad.reason}")
            shown = bad.ctest_output.strip().splitlines() or ([] if bad.reason else
                                                             ["(no test output)"])
            for line in shown[-15:]:
                click.echo(f"           | {line}")
            if bad.log:
                click.echo(f"           log: {bad.log}")
    d = report.to_dict()["seconds"]
    proven = sum(1 for r in report.patches if r.outcome == PROVEN)
    click.echo(f"{proven}/{len(report.patches)} proven in {d['total']:.2f} s "
               f"(cold steps {d['cold_steps']:.2f} s, incremental steps "
               f"{d['incremental_steps']:.2f} s)"
               + ("; stopped at the first unexpected step (--keep)" if report.stopped_early
                  else ""))
    for record in report.records:
        click.echo(f"evidence: {record}")
