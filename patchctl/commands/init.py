from __future__ import annotations

import click

from patchctl.commands._common import project_dir
from patchctl.untrusted import printable


@click.command()
@click.option("--upstream", "url", required=True, metavar="URL|PATH",
              help="Clone URL of the upstream (recorded in the pin file), or a local clone.")
@click.option("--pin", required=True, metavar="COMMIT",
              help="Full 40-hex commit. A tag or branch is resolved when the upstream is "
              "reachable and recorded as `tag`; it never stands as the pin itself.")
@click.option("--name", help="Upstream name (default: from the URL).")
@click.option("--url", "record_url", metavar="URL",
              help="URL to record in the pin file when --upstream is a local path.")
@click.pass_context
def init(ctx: click.Context, url: str, pin: str, name: str | None, record_url: str | None) -> None:
    """Create an empty stack (series, pin file, lock) in the project."""
    from patchctl.authoring.init_import import init_stack

    result = init_stack(project_dir(ctx), url=url, pin=pin, name=name, record_url=record_url)
    click.echo(f"created {result.stack.root}: {printable(result.pin.name)} @ {result.pin.commit}"
               + (f" ({result.pin.tag})" if result.pin.tag else ""))
    if not result.checked:
        click.echo(f"warning: upstream not reachable; the pin was not checked ({result.why})",
                   err=True)
