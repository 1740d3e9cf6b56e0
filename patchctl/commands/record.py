from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from patchctl.commands._common import project_dir
from patchctl.errors import InputError


@click.command(context_settings={"ignore_unknown_options": True})
@click.option("--name", required=True, help="Record name: evidence/NAME.json and NAME.log.")
@click.option("--expect", type=click.Choice(["pass", "fail"]), default="pass", show_default=True,
              help="`fail` for a negative control: exit 0 when the command fails.")
@click.option("--evidence-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Default: <project>/evidence.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.pass_context
def record(ctx: click.Context, name: str, expect: str, evidence_dir: Path | None,
           command: tuple[str, ...]) -> int:
    """Run COMMAND and write its evidence record: argv, tools, pin, fingerprint, output.

    Use `--` before COMMAND. Exits 0 when the command ended as expected.
    """
    from patchctl.evidence import run_and_record

    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise InputError(f"--name {name!r}: use letters, digits, '.', '_' and '-'")
    project = project_dir(ctx)
    rec = run_and_record(name, list(command), evidence_dir=evidence_dir or project / "evidence",
                         project=project, expect=expect,
                         echo=lambda b: sys.stdout.buffer.write(b) and sys.stdout.flush())
    verdict = "as expected" if rec.as_expected else "NOT as expected"
    click.echo(f"recorded {name}: exit {rec.exit_code} ({verdict}), {rec.seconds} s", err=True)
    return 0 if rec.as_expected else 1
