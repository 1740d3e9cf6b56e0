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
    renumber_hint,
    resolve_upstream,
    stack_of,
    upstream_option,
)
from patchctl.textout import count

if TYPE_CHECKING:  # imported lazily at run time
    from patchctl.authoring.edit import EditResult


@click.command("import")
@click.argument("sources", nargs=-1, required=True, metavar="SOURCE...")
@click.option("--concern", metavar="C", help="`Concern:` for patches that have none "
              "(default: a slug of the subject).")
@click.option("--from-repo", type=click.Path(exists=True, file_okay=False, path_type=Path),
              metavar="PATH", help="Take SOURCEs as commit ranges (A..B) or commits of the git "
              "repository at PATH.")
@click.option("--force", is_flag=True, help="Overwrite a file in stack/patches/ that the "
              "series does not list (by default the import is refused, naming it).")
@upstream_option
@json_option
@quiet_option
@click.pass_context
def import_cmd(ctx: click.Context, sources: tuple[str, ...], concern: str | None,
               from_repo: Path | None, force: bool, upstream: str | None,
               as_json: bool) -> None:
    """Append patches to the series: format-patch files, an mbox, a quilt series
    directory (debian/patches/series too), or commits (--from-repo PATH RANGE).

    Each must apply on top of the stack at the pin; missing trailers get safe
    defaults (Upstream-Status: Pending, Concern, Scope = the files it touches)
    and are reported. All or nothing; the lock is rewritten.
    """
    from patchctl.authoring.init_import import import_patches

    stack = stack_of(ctx)
    repo = resolve_upstream(upstream, stack.pin(), stack)
    result = import_patches(project_dir(ctx), stack, repo, list(sources), concern=concern,
                            from_repo=from_repo, force=force, progress=progress)
    end_progress()
    if as_json:
        emit_json(result.to_dict())
        return
    for p in result.patches:
        click.echo(f"imported {p.file} ({p.grade}) from {p.source}")
        for added in p.added:
            click.echo(f"    added {added}")
    click.echo(f"{count(len(result.patches), 'patch')} imported; lock {result.fingerprint[:16]}")


@click.command()
@click.argument("name")
@click.option("--concern", required=True, metavar="C", help="The patch's one concern (a slug).")
@click.option("--scope", "scope", multiple=True, required=True, metavar="GLOB",
              help="A path glob the patch may touch; repeat for more.")
@click.option("--subject", help="Subject line (default: NAME).")
@click.option("--assisted-by", "assisted_by", multiple=True, metavar="TOOL",
              help="Record machine assistance as an `Assisted-by: TOOL [globs]` trailer "
              "(never Co-authored-by); draft-outreach lists it for the submitter's disclosure.")
@click.option("--message", "-m", "message", default="", metavar="TEXT",
              help="The patch's body (the text between subject and trailers).")
@click.option("--trailer", "trailers", multiple=True, metavar="KEY=VALUE",
              help="Add a trailer (e.g. Reproducer=reproducers/x, Upstream-Status=Submitted "
              "[url]), checked as verify checks it; repeat for more.")
@click.option("--reset", is_flag=True, help="Discard an open edit that was not refreshed.")
@click.option("--full", is_flag=True, help="Write every file the upstream has into the "
              "work tree, to build it there (by default, on an upstream that lacks some "
              "blobs, it holds the files the stack touches and the patch's Scope).")
@upstream_option
@json_option
@click.pass_context
def new(ctx: click.Context, name: str, concern: str, scope: tuple[str, ...],
        subject: str | None, assisted_by: tuple[str, ...], message: str,
        trailers: tuple[str, ...], reset: bool, full: bool, upstream: str | None,
        as_json: bool) -> None:
    """Start a new patch after the last one: opens the edit work tree with the whole stack
    applied (the Scope's files included); make the change there, then `patchctl refresh`
    writes the patch. NAME may carry the next number (0004-foo)."""
    from patchctl.authoring.edit import new_patch

    pairs = []
    for t in trailers:
        key, sep, value = t.partition("=")
        if not sep:
            raise click.BadParameter(f"{t!r} is not KEY=VALUE", param_hint="--trailer")
        pairs.append((key.strip(), value))
    stack = stack_of(ctx)
    repo = resolve_upstream(upstream, stack.pin(), stack)
    result = new_patch(project_dir(ctx), stack, repo, name, concern=concern, scope=list(scope),
                       subject=subject, reset=reset, assisted_by=assisted_by, body=message,
                       trailers=pairs, full=full)
    _edit_report(result, as_json)


@click.command()
@click.argument("name", required=False, shell_complete=complete_patch)
@click.option("--reset", is_flag=True, help="Discard the open edit (refreshed or not, "
              "or left by an older patchctl), saying what it discards.")
@click.option("--close", is_flag=True, help="Close the open edit instead of opening one "
              "(no NAME; needs no upstream): refused while it holds changes not yet "
              "refreshed, unless --reset discards them.")
@click.option("--full", is_flag=True, help="Write every file the upstream has into the "
              "work tree, to build it there (by default, on an upstream that lacks some "
              "blobs, it holds the files the stack touches and the patch's Scope).")
@upstream_option
@json_option
@click.pass_context
def edit(ctx: click.Context, name: str | None, reset: bool, close: bool, full: bool,
         upstream: str | None, as_json: bool) -> None:
    """Open a work tree at the pin with the patches up to NAME applied as commits.

    Change the files there (commit or not), then `patchctl refresh`. NAME is a
    file name, its number (9 for 0009-...), @N (the N-th in `patchctl series`) or a
    unique part of a name. Each commit's message holds its patch's subject, body and
    trailers: restructure them with `git rebase -i` there, then `patchctl refresh --all`.

    `edit --close` removes the open edit's work tree, as the verbs that rewrite the
    stack do: only when it holds nothing unrefreshed (and no git work of yours), or,
    with --reset, whatever it holds, saying what it discarded.
    """
    from patchctl.errors import InputError

    if close:
        if name is not None or full or upstream is not None:
            raise InputError("--close takes no NAME, --full or --upstream: it closes "
                                   "the open edit, whichever patch it is of")
        _close_edit(ctx, reset, as_json)
        return
    if name is None:
        raise InputError("missing NAME: the patch to edit (or --close, to close the "
                               "open edit)")
    from patchctl.authoring.edit import edit_patch

    stack = stack_of(ctx)
    repo = resolve_upstream(upstream, stack.pin(), stack)
    result = edit_patch(project_dir(ctx), stack, repo, name, reset=reset, full=full)
    _edit_report(result, as_json)


def _close_edit(ctx: click.Context, discard: bool, as_json: bool) -> None:
    from patchctl.authoring.edit import close_edit

    result = close_edit(project_dir(ctx), discard=discard)
    if as_json:
        emit_json(result.to_dict())
    else:
        click.echo(result.message)


def _edit_report(result: EditResult, as_json: bool) -> None:
    if as_json:
        emit_json(result.to_dict())
        return
    if result.discarded:
        click.echo(f"discarded {result.discarded}", err=True)
    what = "new patch" if result.new else "patch"
    click.echo(f"{result.work}: the pin + {count(len(result.applied), 'patch')} as commits")
    click.echo(f"edit the {what} {result.target} there, then run `patchctl refresh`")


@click.command()
@click.argument("name", required=False, shell_complete=complete_patch)
@click.option("--all", "all_", is_flag=True, help="Rewrite every patch up to the edited one "
              "from the work tree's commits since the pin (commit your changes first).")
@json_option
@click.pass_context
def refresh(ctx: click.Context, name: str | None, all_: bool, as_json: bool) -> int:
    """Regenerate the edited patch from its work tree, keeping header and trailers.

    Output is deterministic: refreshing without a change leaves the file
    byte-identical. The lock is rewritten. Exit 1 when a later patch no longer
    applies on top of the refreshed one.

    --all: after a `git rebase -i` in the work tree (reword, reorder, split, squash, insert,
    drop; commit everything), each commit since the pin becomes a patch, matched by subject.

    A matched patch keeps its file name, author, date and trailers; its body becomes the
    commit's, and `Key: value` lines ending the message set trailers (checked as `header
    --set` checks them; one the message leaves out stays). An unmatched commit becomes a
    new patch (defaults filled as import fills them); an unmatched patch is dropped. All or
    nothing: refused when a later patch would no longer apply. The edit stays open.
    """
    if all_:
        if name is not None:
            raise click.UsageError("--all rewrites every patch up to the edited one; "
                                   "give no NAME")
        _refresh_all(ctx, as_json)
        return 0
    from patchctl.authoring.edit import refresh_patch

    result = refresh_patch(project_dir(ctx), stack_of(ctx), name)
    if as_json:
        emit_json(result.to_dict())
    else:
        click.echo(f"{result.file}: {result.change}; lock {result.fingerprint[:16]}")
        if result.interdiff:
            click.echo(result.interdiff, nl=False)
        for f in result.outside_scope:
            click.echo(f"warning: {f} is outside the patch's Scope", err=True)
        for p in result.later_failing:
            click.echo(f"warning: {p} no longer applies on top of it; edit it next", err=True)
    return exit_for(not result.later_failing)


def _refresh_all(ctx: click.Context, as_json: bool) -> None:
    from patchctl.authoring.restack import DROPPED, NEW, refresh_all

    result = refresh_all(project_dir(ctx), stack_of(ctx))
    if as_json:
        emit_json(result.to_dict())
        return
    for e in result.patches:
        if e.status == DROPPED:
            click.echo(f"{e.file}: dropped (was #{e.was})")
            continue
        what = "new" if e.status == NEW else ", ".join(e.changes) or "kept"
        where = f"#{e.now}" if e.was in (None, e.now) else f"#{e.was} -> #{e.now}"
        click.echo(f"{e.file}: {what} ({where})")
        for line in [*(f"set {k}" for k in e.set_trailers), *(f"added {a}" for a in e.added)]:
            click.echo(f"    {line}")
        if e.interdiff:
            click.echo(e.interdiff, nl=False)
        for f in e.outside_scope:
            click.echo(f"warning: {f} is outside the Scope of {e.file}", err=True)
    made = sum(e.status != DROPPED for e in result.patches)
    click.echo(f"{count(made, 'patch')} from the work tree's commits; the edit now ends "
               f"at {result.target}; lock {result.fingerprint[:16]}")
    renumber_hint(result.series)


@click.command()
@click.option("--format", "fmt",
              type=click.Choice(["mbox", "format-patch", "quilt", "upstream"]),
              required=True, help="mbox / format-patch: for `git am`; quilt: a series "
              "directory for `quilt push -a`; upstream: the plain diffs a person submits "
              "(no commit message, trailers or author).")
@click.argument("dest", type=click.Path(path_type=Path), metavar="DIR")
@click.option("--force", is_flag=True, help="Replace DIR if it is not empty.")
@json_option
@click.pass_context
def export(ctx: click.Context, fmt: str, dest: Path, force: bool, as_json: bool) -> None:
    """Write the stack into DIR as an mbox (DIR/stack.mbox), format-patch files, a quilt
    series (DIR/series + patches; use QUILT_PATCHES=DIR), or plain diffs to submit upstream
    (DIR/NNNN-name.diff + README.txt: the diff alone, for `git apply` in order at the pin;
    the commit message and PR text are the submitter's to write).

    DIR is assembled beside itself and swapped in whole; a symlink DIR is followed (its
    target is replaced, the link kept), and DIR may not be or hold the project."""
    from patchctl.authoring.export import export_stack

    result = export_stack(stack_of(ctx), fmt, dest, force=force)
    if as_json:
        emit_json(result.to_dict())
    else:
        click.echo(f"{result.dest}: {count(result.patches, 'patch')} as {result.format} "
                   f"({', '.join(result.files[:3])}{', ...' if len(result.files) > 3 else ''})")
