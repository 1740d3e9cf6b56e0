"""``patchctl ci github``: the GitHub Actions workflows for a stack, from templates.

Two files, rendered from ``templates/*.yml.j2`` (jinja2 with ``{= =}`` for
values, so GitHub's own ``${{ }}`` passes through untouched):

- ``patchctl-stack.yml``: on push and pull request, ``lock --check`` and
  ``verify --format github --junit`` (uploaded), then a matrix over the lanes,
  each running ``patchctl ci run --lane LANE`` on its runner;
- ``patchctl-canary.yml``: on a schedule and on demand, ``rebase-pin`` at the
  upstream's tip with ``--check --bisect --json``, summarized by
  ``patchctl ci summary`` against the previous run's report.

Every value printed into them passes ``workflow_value`` (one line, no control character,
no ``${{``: Actions would evaluate it), and a value a step uses reaches its shell through
``env:``, double-quoted, never inside a ``run:`` script.

Output is a pure function of the options: the same command writes the same
bytes, and the header names that command so anyone can regenerate or check it.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchctl import __version__, fsutil
from patchctl.ci.lanes import LANES, lane_named
from patchctl.errors import InputError
from patchctl.model import schemas
from patchctl.untrusted import printable, shorten

STACK_FILE, CANARY_FILE = "patchctl-stack.yml", "patchctl-canary.yml"
DEFAULT_OUT = ".github/workflows"
DEFAULT_LANES = ("cpu",)
DEFAULT_CRON = "17 5 * * *"
PYTHON = "3.12"

_PATH = re.compile(r"^[A-Za-z0-9._/-]+$")
_LABEL = re.compile(r"^[A-Za-z0-9._-]+$")
_CRON_FIELD = re.compile(r"^[A-Za-z0-9*/,-]+$")


def workflow_value(what: str, value: str) -> str:
    """``value``, if it may stand in a generated workflow's text: one line without control
    characters (a line break would add YAML of its own) and without ``${{``, which GitHub
    Actions evaluates wherever it stands (expression injection: ``${{ secrets.X }}`` in a
    title, ``${{ github.event.head_commit.message }}`` in a ``run:`` script). Every value
    the templates print passes here; ``what`` names where it came from, for the error."""
    if printable(value) != value or "\t" in value:
        raise InputError(f"{what} '{shorten(value)}' holds a line break or control "
                         "character, which a generated workflow must not contain; use one "
                         "plain line")
    if "${{" in value:
        raise InputError(f"{what} '{shorten(value)}' holds '${{{{', which GitHub Actions "
                         "would evaluate as an expression in the generated workflow; "
                         "remove it")
    return value


NO_DEFAULT_INSTALL = (
    "--install is required here: say where CI runners get patchctl, e.g. a git URL pinned "
    "to a commit ('patchctl @ git+https://HOST/OWNER/patchctl@COMMIT') or a wheel committed "
    "to this repository ('./ci/patchctl-{version}-py3-none-any.whl'); there is no safe "
    "default: the name patchctl on PyPI is not this project's, and whoever registers it "
    "would run their code in your CI")


def default_install(root: Path, project: str) -> str | None:
    """What runners install when ``--install`` is not given: the repository itself when it
    is patchctl's own checkout (its pyproject.toml names the project patchctl), as a path
    from ``project``, where the step runs. Anywhere else None: there is no safe default,
    since a bare requirement (``patchctl==X``) would take whatever PyPI holds under a name
    that is not this project's (``NO_DEFAULT_INSTALL`` says so)."""
    import tomllib

    try:
        meta = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    table = meta.get("project")
    name = table.get("name") if isinstance(table, dict) else None
    if not isinstance(name, str) or re.sub(r"[-_.]+", "-", name).lower() != "patchctl":
        return None
    return "." if project == "." else "/".join(".." for _ in project.split("/"))


@dataclass(frozen=True)
class Options:
    project: str = "."  # the project, relative to the repository root (posix)
    out: str = DEFAULT_OUT
    lanes: tuple[str, ...] = DEFAULT_LANES
    runners: dict[str, tuple[str, ...]] = field(default_factory=dict)  # lane -> labels
    canary_cron: str = DEFAULT_CRON
    canary_issue: bool = False
    install: str | None = None  # a pip requirement; None: not given, and no safe default
    name: str = "upstream"  # the pin's name, for the tracking issue's title

    def command(self) -> str:
        """The canonical command that writes these files (defaults left out; --install,
        which has no default everywhere, always in)."""
        argv = ["patchctl"]
        if self.project != ".":
            argv += ["-C", self.project]
        argv += ["ci", "github"]
        if self.out != DEFAULT_OUT:
            argv += ["--out", self.out]
        if self.lanes != DEFAULT_LANES:
            argv += ["--lanes", ",".join(self.lanes)]
        for lane in sorted(self.runners):
            argv += ["--runner", f"{lane}={','.join(self.runners[lane])}"]
        if self.canary_cron != DEFAULT_CRON:
            argv += ["--canary-cron", self.canary_cron]
        if self.canary_issue:
            argv += ["--canary-issue"]
        if self.install is not None:
            argv += ["--install", self.install]
        return shlex.join(argv)


def parse_lanes(text: str) -> tuple[str, ...]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise InputError("--lanes needs at least one lane, e.g. --lanes cpu,cuda")
    for n in names:
        lane_named(n)
    if len(set(names)) != len(names):
        raise InputError(f"--lanes names a lane twice: {text}")
    return tuple(names)


def parse_runner(text: str) -> tuple[str, tuple[str, ...]]:
    """``LANE=LABEL[,LABEL...]``: the runs-on labels of a lane (e.g. self-hosted GPU labels)."""
    lane, eq, labels = text.partition("=")
    parts = tuple(x.strip() for x in labels.split(",") if x.strip())
    if not eq or not parts:
        raise InputError(f"--runner {text!r}: expected LANE=LABEL[,LABEL...], "
                         "e.g. cuda=self-hosted,linux,cuda")
    lane_named(lane.strip())
    bad = [x for x in parts if not _LABEL.match(x)]
    if bad:
        raise InputError(f"--runner {text!r}: {bad[0]!r} is not a runner label "
                         "(letters, digits, '.', '_', '-')")
    return lane.strip(), parts


def check_options(o: Options) -> None:
    for what, value in (("-C project path", o.project), ("--out", o.out),
                        ("--install", o.install or ""), ("--canary-cron", o.canary_cron),
                        ("the pin's name (stack/upstream.toml)", o.name),
                        *(("--lanes", lane) for lane in o.lanes),
                        *((f"--runner {lane}", label) for lane, labels in o.runners.items()
                          for label in labels)):
        workflow_value(what, value)
    if not _PATH.match(o.project) or ".." in o.project.split("/"):
        raise InputError(f"project path {o.project!r} must be inside the repository and use "
                         "only letters, digits, '.', '_', '-' and '/'")
    fields = o.canary_cron.split()
    if len(fields) != 5 or not all(_CRON_FIELD.match(f) for f in fields):
        raise InputError(f"--canary-cron {o.canary_cron!r} is not a 5-field cron schedule "
                         "(minute hour day month weekday), e.g. '17 5 * * *'")
    if o.install is not None and not o.install.strip():
        raise InputError("--install needs one pip requirement, e.g. 'patchctl @ "
                         "git+https://HOST/OWNER/patchctl@COMMIT' or '.'")
    unused = sorted(set(o.runners) - set(o.lanes))
    if unused:
        raise InputError(f"--runner names lane {unused[0]!r}, which --lanes does not include")
    if o.install is None:  # last: an error in the options given is said first
        raise InputError(NO_DEFAULT_INSTALL.format(version=__version__))


def render(o: Options) -> dict[str, str]:
    """File name -> text, for both workflows."""
    import jinja2

    check_options(o)
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("patchctl.ci", "templates"),
        variable_start_string="{=", variable_end_string="=}",
        comment_start_string="{##", comment_end_string="##}",
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined, autoescape=False,
        # What every {= =} prints, after its filters: check_options named the options
        # already, this holds for anything that reaches the text.
        finalize=lambda v: workflow_value("a generated value", str(v)))
    # JSON strings are valid YAML double-quoted scalars: every inserted value is quoted.
    # Values a step uses (a requirement, a title) reach its shell through `env:` only.
    env.filters["q"] = lambda v: json.dumps(str(v))
    env.filters["tojson"] = lambda v: json.dumps(v)
    state = ".patchctl" if o.project == "." else f"{o.project}/.patchctl"
    pin_file = "stack/upstream.toml" if o.project == "." else f"{o.project}/stack/upstream.toml"
    lanes = [{"name": n, "runner": list(o.runners.get(n, LANES[n].runner))} for n in o.lanes]
    ctx = {"command": o.command(), "workdir": "" if o.project == "." else o.project,
           "state": state, "pin_file": pin_file, "python": PYTHON, "install": o.install,
           "lanes": lanes, "vulkan": "vulkan" in o.lanes, "cron": o.canary_cron,
           "issue": o.canary_issue, "name": o.name}
    return {STACK_FILE: env.get_template("stack.yml.j2").render(ctx),
            CANARY_FILE: env.get_template("canary.yml.j2").render(ctx)}


@dataclass
class WriteResult:
    out: str
    files: dict[str, str]  # name -> written | unchanged | stale | current
    command: str

    @property
    def ok(self) -> bool:
        return "stale" not in self.files.values()

    def to_dict(self) -> dict[str, Any]:
        return {"schema": schemas.CI_GITHUB, "ok": self.ok, "out": self.out,
                "files": self.files, "command": self.command}


def write(o: Options, out: Path, *, check: bool = False) -> WriteResult:
    """Write the workflows into ``out`` (only files whose text changes), or with
    ``check`` only say which are stale."""
    files = render(o)
    states: dict[str, str] = {}
    for name, text in files.items():
        path = out / name
        try:
            current = path.read_text(encoding="utf-8") == text
        except (FileNotFoundError, UnicodeDecodeError):
            current = False
        if check:
            states[name] = "current" if current else "stale"
        elif current:
            states[name] = "unchanged"
        else:
            fsutil.atomic_write(path, text)
            states[name] = "written"
    return WriteResult(out=str(out), files=states, command=o.command())
