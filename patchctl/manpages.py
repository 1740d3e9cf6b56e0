"""Man pages from the click help: ``patchctl.1`` and one ``patchctl-COMMAND.1`` per command
(and ``patchctl-GROUP-COMMAND.1`` per subcommand of a group such as ``ci``).

Run at build time (setup.py's ``install_data``) so the pages are installed with
the package under ``<prefix>/share/man/man1``, where ``man`` finds them for a
venv's ``bin/`` on PATH. Also runnable by hand: ``python -m patchctl.manpages DIR``.
click-man renders the pages; it walks ``Group.commands``, which patchctl's lazy
group leaves empty, so it is handed a group with every command loaded.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import click

SECTION = "1"


def write_pages(target: Path) -> list[Path]:
    """Write every page into ``target`` (created if missing); returns them, sorted."""
    from click_man.core import write_man_pages

    from patchctl import __version__
    from patchctl.cli import COMMANDS, cli

    ctx = click.Context(cli, info_name="patchctl")
    commands: dict[str, click.Command] = {}
    for name, (_, short) in COMMANDS.items():
        command = cli.get_command(ctx, name)
        if command is not None:
            command.short_help = command.short_help or short  # NAME line: the one-liner
            commands[name] = command
    for command in commands.values():
        _short_helps(command)
    group = click.Group("patchctl", commands=commands, params=cli.params, help=cli.help,
                        short_help="keep a narrow, provable patch stack against a pinned upstream")
    target.mkdir(parents=True, exist_ok=True)
    # Reproducible builds: the date comes from SOURCE_DATE_EPOCH when it is set.
    stamp = time.gmtime(int(os.environ.get("SOURCE_DATE_EPOCH", time.time())))
    write_man_pages("patchctl", group, version=__version__, target_dir=str(target),
                    date=time.strftime("%Y-%m-%d", stamp))
    return sorted(target.glob(f"patchctl*.{SECTION}"))


def _short_helps(command: click.Command) -> None:
    """A subcommand's NAME line: click's own short help (click-man's fallback is deprecated)."""
    for sub in getattr(command, "commands", {}).values():
        sub.short_help = sub.short_help or sub.get_short_help_str(limit=60)
        _short_helps(sub)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.exit("usage: python -m patchctl.manpages DIR")
    for page in write_pages(Path(args[0])):
        print(page)


if __name__ == "__main__":
    main()
