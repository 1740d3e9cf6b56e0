"""The command line: parse, call, render, exit. Nothing else lives here.

Subcommands live in ``patchctl/commands/<name>.py`` and are imported only when
run, so ``patchctl --help`` never pays for git, jinja2 or requests. Errors are
turned into one line and an exit code in exactly one place: ``main``.
"""

from __future__ import annotations

import gc
import importlib
import sys
import time

import click

from patchctl import __version__
from patchctl.errors import (
    EXIT_ENVIRONMENT,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    PatchctlError,
    redact,
)

# name -> (module:attribute, one-line help). Order is the order of `--help`.
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("patchctl.commands.init:init", "Create an empty stack pinned to an upstream commit."),
    "series": ("patchctl.commands.series:series", "List the stack: concern, status, size."),
    "verify": ("patchctl.commands.verify:verify",
               "Prove at the pin that every patch applies and reverses at fuzz 0."),
    "burden": ("patchctl.commands.burden:burden",
               "Upstream commits of the last N days on the lines each patch stands on."),
    "lock": ("patchctl.commands.lock:lock", "Rewrite stack/stack.lock from the stack."),
    "fingerprint": ("patchctl.commands.lock:fingerprint_cmd",
                    "Print the stack fingerprint (text, --json or --cmake)."),
    "apply": ("patchctl.commands.apply:apply", "Materialize pin + stack into a directory."),
    "rebase-pin": ("patchctl.commands.rebase:rebase_pin",
                   "Move the stack to a new upstream commit; say what broke and where."),
    "import": ("patchctl.commands.authoring:import_cmd",
               "Import patches from format-patch files, an mbox, a quilt series or commits."),
    "new": ("patchctl.commands.authoring:new", "Start a new empty patch at the end of the series."),
    "edit": ("patchctl.commands.authoring:edit",
             "Open a worktree at the pin with patches up to NAME applied as commits "
             "(--close: close it)."),
    "refresh": ("patchctl.commands.authoring:refresh",
                "Regenerate a patch (--all: the stack up to it) from its edit worktree."),
    "delete": ("patchctl.commands.stackops:delete", "Remove a patch from the series."),
    "rename": ("patchctl.commands.stackops:rename", "Rename a patch's file."),
    "renumber": ("patchctl.commands.stackops:renumber",
                 "Rename patch files so their NNNN- numbers follow the series order."),
    "move": ("patchctl.commands.stackops:move",
             "Reorder: move a patch before or after another, or to a position."),
    "fold": ("patchctl.commands.stackops:fold", "Squash a patch into the adjacent one."),
    "split": ("patchctl.commands.stackops:split",
              "Carve some files of a patch out into a new patch after it."),
    "diff": ("patchctl.commands.stackops:diff_cmd",
             "Print a patch's diff at the pin, or the open edit's changes."),
    "header": ("patchctl.commands.stackops:header",
               "Print a patch's trailers, or set one (validated as verify does)."),
    "export": ("patchctl.commands.authoring:export",
               "Write the stack as an mbox, format-patch files, a quilt series or plain "
               "diffs to submit."),
    "reproduce": ("patchctl.commands.reproduce:reproduce",
                  "Build each patch's reproducer: it must fail before and pass after."),
    "draft-outreach": ("patchctl.commands.outreach:draft_outreach",
                       "Write a fact brief for the person who proposes a patch upstream."),
    "upstream-status": ("patchctl.commands.outreach:upstream_status",
                        "Report Upstream-Status: counts, age, landed or superseded upstream."),
    "release": ("patchctl.commands.release:release",
                "Build and verify reproducible worker packages (release build / verify)."),
    "record": ("patchctl.commands.record:record",
               "Run a command and keep its evidence record under evidence/."),
    "ci": ("patchctl.commands.ci:ci",
           "CI: GitHub Actions workflows, a lane run locally, the upstream canary."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module, _, attr = entry[0].partition(":")
        command: click.Command = getattr(importlib.import_module(module), attr)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, help_) for name, (_, help_) in COMMANDS.items()])


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="patchctl")
@click.option("-C", "--project", "project", type=click.Path(file_okay=False, path_type=str),
              default=".", show_default=True, help="Project directory holding stack/.")
@click.pass_context
def cli(ctx: click.Context, project: str) -> None:
    """patchctl keeps a narrow, provable patch stack against a pinned upstream commit.

    Exit codes: 0 clean, 1 the stack has findings, 2 usage or bad input,
    3 environment or tool failure, 130 interrupted.
    """
    ctx.obj = {"project": project, "started": time.monotonic()}  # progress counts from here


def main(argv: list[str] | None = None) -> None:
    try:
        code = cli.main(args=argv, prog_name="patchctl", standalone_mode=False)
    except PatchctlError as e:
        click.echo(f"patchctl: error: {redact(str(e))}", err=True)
        sys.exit(e.exit_code)
    except click.exceptions.Abort:
        click.echo("patchctl: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except click.ClickException as e:
        e.show()
        sys.exit(EXIT_USAGE if e.exit_code == 2 else e.exit_code)
    except KeyboardInterrupt:
        click.echo("patchctl: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except OSError as e:  # the environment (permissions, disk, a vanished file): one line
        where = f"{e.filename}: " if e.filename else ""
        click.echo(f"patchctl: error: {where}{e.strerror or e}; check the path and retry",
                   err=True)
        sys.exit(EXIT_ENVIRONMENT)
    sys.exit(code if isinstance(code, int) else 0)


def run() -> None:
    """The console script: ``main`` on the process's own command line. The process ends
    right after, so what it made is frozen out of the interpreter's last full garbage
    collection, which would only walk objects that exit frees anyway (~10 ms after a
    2,000-patch verify)."""
    from patchctl.procs import terminate_on_sigterm

    terminate_on_sigterm()  # the process groups patchctl started end with it
    try:
        main()
    finally:
        gc.freeze()
