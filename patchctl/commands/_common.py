"""What several commands share: finding the stack, the upstream, progress output."""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

import click

from patchctl.errors import EXIT_FINDINGS, EXIT_OK, InputError
from patchctl.model.stack import Pin, Stack, find_stack

# the one --upstream of every command that reads the upstream (resolve_upstream reads it)
UPSTREAM_HELP = ("The upstream: a local clone (bare or not; partial clones work), a git bundle "
                 "(read into the cache once), or a URL to fetch into the cache. Default: the pin "
                 "file's URL, cloned once into the cache.  [env: PATCHCTL_UPSTREAM]")
upstream_option = click.option(
    "--upstream", metavar="PATH|BUNDLE|URL", envvar="PATCHCTL_UPSTREAM", help=UPSTREAM_HELP)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON (stable schema).")

_URL = re.compile(r"^([a-z][a-z0-9+.-]*://|[\w.-]+@[\w.-]+:)", re.IGNORECASE)


def is_url(spec: str) -> bool:
    """A URL or scp-like address (fetched into the cache), not a local path."""
    return bool(_URL.match(spec)) and not Path(spec).expanduser().exists()


def project_dir(ctx: click.Context) -> Path:
    return Path(ctx.obj["project"]) if ctx.obj else Path(".")


def shown_path(path: Path, base: Path) -> str:
    """``path`` as a generated file's header or manifest names it: relative to ``base``
    (the repository root or the project) when it lies inside, so the same command from
    two clones writes the same bytes; else as given."""
    rel = os.path.relpath(path.absolute(), base.absolute())
    if rel == ".." or rel.startswith("../") or os.path.isabs(rel):
        return Path(path).as_posix()
    return Path(rel).as_posix()


def stack_of(ctx: click.Context) -> Stack:
    return find_stack(project_dir(ctx))


def resolve_upstream(spec: str | None, pin: Pin, stack: Stack | None = None, *,
                     checked: bool = True) -> Path:
    """A local git directory holding the pin.

    ``spec`` (or the pin file's URL) is a local clone, a git bundle, or a URL;
    bundles and URLs are fetched once into the cache. A relative path in the
    pin file is relative to the project directory. Without ``checked``, a local
    clone is returned as given, not yet asked for its git directory: for a caller
    whose first git call does that anyway (verify's ``gitrepo.commit_and_tree``).
    """
    from patchctl import gitrepo

    if spec is None:
        spec = pin.url
        if stack is not None and not _URL.match(spec) and not Path(spec).is_absolute():
            spec = str(stack.root.parent / spec)
    path = Path(spec).expanduser()
    if is_url(spec):
        return gitrepo.cached_upstream(spec, pin.commit, progress=progress)
    if path.is_file():
        return gitrepo.cached_bundle(path, pin.commit)
    return gitrepo.git_dir(path) if checked else path


def _completion_project(ctx: click.Context) -> Path:
    return Path(ctx.find_root().params.get("project") or ".")


def complete_patch(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Shell completion: the series' patch names starting with (else containing) the word."""
    try:
        names = [e.name for e in find_stack(_completion_project(ctx)).series()]
    except Exception:  # completion must never print a traceback into the shell
        return []
    starts = [n for n in names if n.startswith(incomplete)]
    return starts or [n for n in names if incomplete in n]


def complete_ref(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Shell completion: branches and tags of the upstream, when it is here already
    (a local clone, a bundle, or a URL already in the cache; never fetched)."""
    from patchctl import gitrepo

    try:
        stack = find_stack(_completion_project(ctx))
        spec = ctx.params.get("upstream") or os.environ.get("PATCHCTL_UPSTREAM")
        repo = upstream_at_hand(spec, stack.pin(), stack)
        if repo is None:
            return []
        return [r for r in gitrepo.ref_names(repo) if r.startswith(incomplete)]
    except Exception:  # completion must never print a traceback into the shell
        return []


def upstream_at_hand(spec: str | None, pin: Pin, stack: Stack) -> Path | None:
    """``resolve_upstream`` where that fetches nothing: ``spec`` given, or the pin file's URL
    a local path or already cloned into the cache; None when it would have to fetch."""
    from patchctl import gitrepo

    if spec is None and _URL.match(pin.url):
        repo = gitrepo.upstream_cache_dir(pin.url)
        return repo if repo.is_dir() else None
    return resolve_upstream(spec, pin, stack)


# -- progress: the one way a command reports long work ---------------------------------------

TTY, LINES, OFF = "tty", "lines", "off"
PROGRESS_ENV, QUIET_ENV = "PATCHCTL_PROGRESS", "PATCHCTL_QUIET"
_DIGITS = re.compile(r"\d+")
_REPORTER = "patchctl.progress"  # the invocation's Progress, in click's context meta
_QUIET = "patchctl.quiet"


class Progress:
    """Progress of long work on stderr; stdout (the report, --json) never sees it.

    ``tty``: one line rewritten in place. ``lines`` (a pipe, a CI log, `patchctl
    record`): a line per step, each with the time since the command started; a
    message that only moves a counter ("building 12/340") again at most every
    ``interval`` seconds, and (``delay``) nothing at all from work that ends within
    a couple of seconds. ``off``: nothing. Library code sees only a callable
    taking one message.
    """

    def __init__(self, mode: str, *, stream: TextIO | None = None, delay: float = 0.0,
                 interval: float = 15.0, started: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.mode, self.delay, self.interval, self.clock = mode, delay, interval, clock
        self.stream = stream
        self.started = clock() if started is None else started
        self._key: str | None = None  # the last line's message, its counters blanked
        self._at = 0.0  # when that line was written
        self._shown = False  # a tty line is up

    def __call__(self, message: str) -> None:
        if self.mode == OFF:
            return
        now = self.clock()
        stamp = _elapsed(now - self.started)
        out = self.stream or sys.stderr
        if self.mode == TTY:
            width = shutil.get_terminal_size((80, 24)).columns - 1
            out.write(f"\r\033[K{f'[{stamp}] {message}'[:width]}")
            out.flush()
            self._shown = True
            return
        key = _DIGITS.sub("#", message)
        if now - self.started < self.delay or \
                (key == self._key and now - self._at < self.interval):
            return
        self._key, self._at = key, now
        out.write(f"patchctl: [{stamp}] {message}\n")
        out.flush()

    def done(self) -> None:
        """Clear a tty line (the report follows); lines stay as they are."""
        if self._shown:
            out = self.stream or sys.stderr
            out.write("\r\033[K")
            out.flush()
            self._shown = False


def _elapsed(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m // 60}:{m % 60:02d}:{s:02d}" if m >= 60 else f"{m}:{s:02d}"


def progress_mode(*, quiet: bool, as_json: bool, tty: bool) -> tuple[str, float]:
    """(mode, delay) for a command: --quiet or $PATCHCTL_QUIET, else $PATCHCTL_PROGRESS
    (auto, tty, lines or off), else a terminal's in-place line, or lines once the work
    has taken 2 s (none under --json: a script reads that output)."""
    asked = os.environ.get(PROGRESS_ENV, "auto").strip().lower() or "auto"
    if asked not in ("auto", TTY, LINES, OFF):
        raise InputError(f"{PROGRESS_ENV}={asked!r}: use auto, tty, lines or off")
    if quiet or os.environ.get(QUIET_ENV):
        return OFF, 0.0
    if asked != "auto":
        return asked, 0.0
    if tty:
        return TTY, 0.0
    return (OFF, 0.0) if as_json else (LINES, 2.0)


def _remember_quiet(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    ctx.meta[_QUIET] = ctx.meta.get(_QUIET, False) or value
    return value


quiet_option = click.option(
    "--quiet", "-q", is_flag=True, expose_value=False, callback=_remember_quiet,
    help=f"No progress on stderr (also {QUIET_ENV}=1; {PROGRESS_ENV}=lines|tty|off chooses "
    "how it is shown).")


def reporter() -> Progress:
    """The running command's Progress (one per invocation, in click's context)."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:  # not inside a command (a thread, a library caller): nothing shown
        return Progress(OFF)
    found = ctx.meta.get(_REPORTER)
    if not isinstance(found, Progress):
        mode, delay = progress_mode(quiet=bool(ctx.meta.get(_QUIET)),
                                    as_json=bool(ctx.params.get("as_json")),
                                    tty=sys.stderr.isatty())
        started = ctx.obj.get("started") if isinstance(ctx.obj, dict) else None
        found = ctx.meta[_REPORTER] = Progress(mode, delay=delay, started=started)
    return found


def progress(message: str) -> None:
    """Report a step of long work (the callable commands hand to library code)."""
    reporter()(message)


def end_progress() -> None:
    """Clear the progress line, if the command showed one, before its report."""
    ctx = click.get_current_context(silent=True)
    shown = ctx.meta.get(_REPORTER) if ctx is not None else None
    if isinstance(shown, Progress):
        shown.done()


def emit_json(data: object) -> None:
    import json

    click.echo(json.dumps(data, indent=2, sort_keys=True, default=str))


def renumber_hint(series: Sequence[str]) -> None:
    """The last line of `move` and `refresh --all` when they leave the file numbers out of
    series order (patchctl never renumbers by itself)."""
    from patchctl.model.patchtext import renumbered

    if renumbered(series):
        click.echo("numbers out of series order: run `patchctl renumber`")


def exit_for(ok: bool) -> int:
    return EXIT_OK if ok else EXIT_FINDINGS
