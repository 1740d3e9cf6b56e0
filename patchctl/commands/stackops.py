from __future__ import annotations

from typing import TYPE_CHECKING

import click

from patchctl.commands._common import (
    complete_patch,
    emit_json,
    json_option,
    project_dir,
    renumber_hint,
    resolve_upstream,
    stack_of,
    upstream_option,
)

if TYPE_CHECKING:  # imported lazily at run time
    from patchctl.authoring.rearrange import StackOpResult


def _report(result: StackOpResult, as_json: bool) -> None:
    if as_json:
        emit_json(result.to_dict())
        return
    closed_edit(result.closed_edit)
    click.echo(f"{result.message}; lock {result.fingerprint[:16]}")


def closed_edit(said: str) -> None:
    """A verb that rewrote the stack closed the open edit (``close_clean_edit``): say so on
    stderr, where `edit --reset` says what it discarded, since a build may point there."""
    if said:
        click.echo(said, err=True)


@click.command()
@click.argument("name", shell_complete=complete_patch)
@click.option("--keep-file", is_flag=True, help="Leave the patch file in patches/ (only the "
              "series entry goes).")
@click.option("--force", is_flag=True, help="Delete even when a later patch no longer applies "
              "without it (not checked).")
@upstream_option
@json_option
@click.pass_context
def delete(ctx: click.Context, name: str, keep_file: bool, force: bool, upstream: str | None,
           as_json: bool) -> None:
    """Remove patch NAME from the series and delete its file.

    Refused (nothing written) when a later patch no longer applies at the pin
    without it, checked index-only; --force skips the check. The lock is
    rewritten. NAME is a file name, its number (9 for 0009-...), @N (the N-th in
    `patchctl series`) or a unique part of a name.
    """
    from patchctl.authoring.rearrange import delete as run_delete

    stack = stack_of(ctx)
    repo = None if force else resolve_upstream(upstream, stack.pin(), stack)
    _report(run_delete(project_dir(ctx), stack, repo, name, keep_file=keep_file), as_json)


@click.command()
@click.argument("name", shell_complete=complete_patch)
@click.argument("new")
@json_option
@click.pass_context
def rename(ctx: click.Context, name: str, new: str, as_json: bool) -> None:
    """Rename patch NAME's file to NEW (`.patch` is added when missing).

    The patch's bytes and place in the series stay; the lock is rewritten.
    """
    from patchctl.authoring.rearrange import rename as run_rename

    _report(run_rename(project_dir(ctx), stack_of(ctx), name, new), as_json)


@click.command()
@click.argument("name", shell_complete=complete_patch)
@click.option("--before", metavar="OTHER", shell_complete=complete_patch,
              help="Put NAME right before OTHER.")
@click.option("--after", metavar="OTHER", shell_complete=complete_patch,
              help="Put NAME right after OTHER.")
@click.option("--to", type=click.IntRange(min=1), metavar="N",
              help="Put NAME at position N (1 = first).")
@upstream_option
@json_option
@click.pass_context
def move(ctx: click.Context, name: str, before: str | None, after: str | None, to: int | None,
         upstream: str | None, as_json: bool) -> None:
    """Move patch NAME in the series: --before OTHER, --after OTHER or --to N.

    The new order must apply at the pin: it is checked index-only first, and
    refused, naming the patch and hunk that fail, with nothing written.
    """
    from patchctl.authoring.rearrange import move as run_move

    stack = stack_of(ctx)
    repo = resolve_upstream(upstream, stack.pin(), stack)
    result = run_move(project_dir(ctx), stack, repo, name, before=before, after=after, to=to)
    _report(result, as_json)
    if not as_json:
        renumber_hint(result.series)


@click.command()
@json_option
@click.pass_context
def renumber(ctx: click.Context, as_json: bool) -> None:
    """Rename each patch file whose leading NNNN- number is not its position in the series.

    After `patchctl move` (or `refresh --all`) the numbers no longer follow the series:
    each such file gets the same name with its position, zero-padded to 4 digits (or
    to the widest number the stack uses), all in one transaction. Bytes, order, strip
    levels and trailers stay; names without a number are kept (and said so); the lock
    is rewritten. Prints OLD -> NEW per file.
    """
    from patchctl.authoring.rearrange import renumber as run_renumber

    result = run_renumber(project_dir(ctx), stack_of(ctx))
    if as_json:
        emit_json(result.to_dict())
        return
    closed_edit(result.closed_edit)
    for old, new in result.renamed:
        click.echo(f"{old} -> {new}")
    for name in result.unnumbered:
        click.echo(f"{name}: kept (no NNNN- number)")
    click.echo(f"{result.message}; lock {result.fingerprint[:16]}")


@click.command()
@click.argument("name", shell_complete=complete_patch)
@click.option("--into", "into", required=True, metavar="OTHER", shell_complete=complete_patch,
              help="The adjacent patch that absorbs NAME.")
@upstream_option
@json_option
@click.pass_context
def fold(ctx: click.Context, name: str, into: str, upstream: str | None, as_json: bool) -> None:
    """Squash patch NAME into the adjacent patch OTHER.

    The result takes OTHER's place, file name, header and trailers; its Scope
    is the union of both. Patches that are not next to each other are refused
    (`patchctl move` one first).
    """
    from patchctl.authoring.regenerate import fold as run_fold

    stack = stack_of(ctx)
    repo = resolve_upstream(upstream, stack.pin(), stack)
    _report(run_fold(project_dir(ctx), stack, repo, name, into=into), as_json)


@click.command()
@click.argument("name", shell_complete=complete_patch)
@click.option("--paths", "globs", multiple=True, required=True, metavar="GLOB",
              help="Carve out the files matching GLOB (as in Scope:); repeat, or separate "
              "globs with spaces or commas, for more.")
@click.option("--name", "new_name", metavar="FILE", help="File name of the new patch "
              "(default: the next number and a slug of its subject).")
@click.option("--subject", help="Subject of the new patch (default: NAME's, with the globs).")
@click.option("--concern", metavar="C", help="Concern of the new patch (default: NAME's).")
@upstream_option
@json_option
@click.pass_context
def split(ctx: click.Context, name: str, globs: tuple[str, ...], new_name: str | None,
          subject: str | None, concern: str | None, upstream: str | None,
          as_json: bool) -> None:
    """Carve the files of patch NAME that match --paths out into a new patch right after it.

    The new patch keeps NAME's author, body and trailers, with Scope set to the
    globs. Refused when the globs match no file, or every file (the remainder
    would be empty).
    """
    from patchctl.authoring.regenerate import split as run_split

    stack = stack_of(ctx)
    repo = resolve_upstream(upstream, stack.pin(), stack)
    patterns = [g for value in globs for g in value.replace(",", " ").split()]
    _report(run_split(project_dir(ctx), stack, repo, name, globs=patterns,
                      new_name=new_name, subject=subject, concern=concern), as_json)


@click.command("diff")
@click.argument("name", required=False, shell_complete=complete_patch)
@click.option("--stat", is_flag=True, help="Print the diffstat before the diff.")
@upstream_option
@json_option
@click.pass_context
def diff_cmd(ctx: click.Context, name: str | None, stat: bool, upstream: str | None,
             as_json: bool) -> None:
    """Print patch NAME's diff as it applies at the pin (regenerated from the trees).

    Without NAME: the open edit's changes since it was opened or last refreshed.
    """
    from patchctl.authoring.regenerate import diff as run_diff

    stack = stack_of(ctx)
    repo = resolve_upstream(upstream, stack.pin(), stack) if name is not None else None
    result = run_diff(project_dir(ctx), stack, repo, name)
    if as_json:
        emit_json(result.to_dict())
        return
    click.echo((result.stat + "\n" if stat and result.stat else "") + result.diff, nl=False)


def _settings(values: tuple[str, ...]) -> list[tuple[str, str]]:
    from patchctl.errors import InputError

    out = []
    for v in values:
        key, eq, value = v.partition("=")
        if not eq:
            raise InputError(f"--set {v!r}: use KEY=VALUE, e.g. "
                             "--set 'Upstream-Status=Submitted [url]'")
        out.append((key.strip(), value))
    return out


@click.command()
@click.argument("name", shell_complete=complete_patch)
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE",
              help="Set a trailer (replacing every KEY: line); repeat for more.")
@click.option("--unset", multiple=True, metavar="KEY", help="Remove every KEY: trailer.")
@click.option("--get", metavar="KEY", help="Print only KEY's values, one per line (exit 1 "
              "when there is none; --json prints the whole header).")
@click.option("-m", "--message", metavar="TEXT", help="Replace the patch's body (the text "
              "between subject and trailers); '' removes it.")
@json_option
@click.pass_context
def header(ctx: click.Context, name: str, settings: tuple[str, ...],
           unset: tuple[str, ...], get: str | None, message: str | None,
           as_json: bool) -> int:
    """Print patch NAME's subject, author and trailers, or change trailers or the body.

    A change is validated as `patchctl verify` validates it (for example
    `--set 'Upstream-Status=Submitted [url]'`) and refused when it adds an
    error; the diff and so the fingerprint stay. Exit 1 when --get finds nothing.
    """
    from patchctl.authoring.rearrange import read_header, set_header

    stack = stack_of(ctx)
    changes = [*_settings(settings), *((k, None) for k in unset)]
    result = (set_header(project_dir(ctx), stack, name, changes, body=message)
              if changes or message is not None else read_header(stack, name))
    values = [v for k, v in result.trailers if get is not None and k.lower() == get.lower()]
    if as_json:
        emit_json(result.to_dict())
        return 1 if get is not None and not values else 0
    closed_edit(result.closed_edit)
    if get is not None:
        for v in values:
            click.echo(v)
        return 0 if values else 1
    click.echo(f"{result.file}{' (changed)' if result.changed else ''}")
    click.echo(f"Subject: {result.subject}")
    click.echo(f"From: {result.author}")
    for key, value in result.trailers:
        click.echo(f"{key}: {value}")
    for w in result.warnings:
        click.echo(f"warning: {w}", err=True)
    return 0
