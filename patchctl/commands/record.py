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
@click.option("--backend", default="cpu", show_default=True,
              help="Backend the run used (cpu, cuda, ...); its driver is recorded with it.")
@click.option("--worker", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="The worker binary the run used: its embedded identity (runtime pin, "
              "stack fingerprint, lane, toolchain) goes into the record.")
@click.option("--artifact", "artifact_paths", multiple=True, metavar="FILE",
              type=click.Path(dir_okay=False, path_type=Path),
              help="A model or other input: its sha256 and size are recorded (repeatable).")
@click.option("--split", "split_paths", multiple=True, metavar="FILE",
              type=click.Path(dir_okay=False, path_type=Path),
              help="One split of a split model: its sha256 and size are recorded (repeatable).")
@click.option("--metrics", type=click.Path(dir_okay=False, path_type=Path),
              help="A JSON file the command writes; stored raw in the record.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.pass_context
def record(ctx: click.Context, name: str, expect: str, evidence_dir: Path | None,
           backend: str, worker: Path | None, artifact_paths: tuple[Path, ...],
           split_paths: tuple[Path, ...], metrics: Path | None,
           command: tuple[str, ...]) -> int:
    """Run COMMAND and write its evidence record.

    The record holds the command, its output's sha256, the tools, the stack's
    pin and fingerprint, the host (CPU model, cores, memory, GPUs and driver,
    network), the backend, and with the options the worker's identity,
    artifact and split hashes and raw metrics. Use `--` before COMMAND. Exits
    0 when the command ended as expected.
    """
    from patchctl.records.evidence import artifact_entry, run_and_record

    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise InputError(f"--name {name!r}: use letters, digits, '.', '_' and '-'")
    project = project_dir(ctx)
    artifacts = [artifact_entry("artifact", p) for p in artifact_paths]
    artifacts += [artifact_entry("split", p) for p in split_paths]
    rec = run_and_record(name, list(command), evidence_dir=evidence_dir or project / "evidence",
                         project=project, expect=expect, backend=backend, worker=worker,
                         artifacts=artifacts, metrics=metrics,
                         echo=lambda b: sys.stdout.buffer.write(b) and sys.stdout.flush())
    verdict = "as expected" if rec.as_expected else "NOT as expected"
    click.echo(f"recorded {name}: exit {rec.exit_code} ({verdict}), {rec.seconds} s", err=True)
    return 0 if rec.as_expected else 1
