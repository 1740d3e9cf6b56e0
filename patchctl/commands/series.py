from __future__ import annotations

import click

from patchctl.commands._common import emit_json, json_option, stack_of
from patchctl.model import schemas
from patchctl.textout import count, table
from patchctl.untrusted import printable


@click.command()
@json_option
@click.pass_context
def series(ctx: click.Context, as_json: bool) -> None:
    """List the stack in apply order with each patch's concern, status and size."""
    stack = stack_of(ctx)
    pin = stack.pin()
    patches = stack.patches()
    rows = []
    for i, p in enumerate(patches, start=1):
        rows.append({
            "index": i, "file": p.name, "strip": p.strip, "subject": p.subject,
            "concern": p.concern, "upstream_status": p.upstream_status,
            "reproducer": p.reproducer, "files": len(p.files), "added": p.added,
            "removed": p.removed,
        })
    if as_json:
        emit_json({"schema": schemas.SERIES, "name": pin.name, "pin": pin.commit,
                   "patches": rows})
        return
    click.echo(f"{printable(pin.name)} @ {pin.commit[:12]}: {count(len(rows), 'patch')}")
    if rows:
        cells = [[str(i), p.name, p.concern or "-",
                  f"{count(len(p.files), 'file')} +{p.added} -{p.removed}",
                  p.upstream_status or "-"]  # the long one last
                 for i, p in enumerate(patches, start=1)]
        click.echo("\n".join(table(cells, ["#", "patch", "concern", "size", "status"])))
