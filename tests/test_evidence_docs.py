"""The evidence handoffs (evidence/DGR-*/README.md) quote commands that still run.

Each line starting with `$ ` in a ```sh block is a quoted command. In a
```sh ci block it is run for real (they are cheap and offline); every other
one is checked as far as CI can without llama.cpp or minutes of build:

- `patchctl ...`: click parses it (every subcommand and option still exists),
  by running it with --help inserted before any `--`;
- `pytest ...`: it still collects at least one test (`--collect-only`);
- `cmake/ctest --preset P`: P is still a preset of native/;
- `.../worker ...`: every flag is still in the worker's usage text;
- anything else: the program is installed.

Every `evidence/...json` record a handoff cites exists, ended as expected,
and its log still has the sha256 the record names.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "evidence" / "DGR-029" / "README.md", REPO / "evidence" / "DGR-068" / "README.md"]
_BLOCK = re.compile(r"^```(sh(?: ci)?)\n(.*?)^```", re.MULTILINE | re.DOTALL)
_ENV = re.compile(r"^[A-Z_][A-Z0-9_]*=")


def quoted(doc: Path) -> list[tuple[str, bool]]:
    """(command, run for real) for every `$ ` line, continuation lines joined."""
    out = []
    for kind, body in _BLOCK.findall(doc.read_text()):
        body = body.replace("\\\n", " ")
        for line in body.splitlines():
            if line.startswith("$ "):
                out.append((line[2:].strip(), kind == "sh ci"))
    return out


def all_commands() -> list[tuple[str, str, bool]]:
    return [(doc.parent.name, cmd, real) for doc in DOCS for cmd, real in quoted(doc)]


def test_each_handoff_quotes_commands_and_runs_some_for_real() -> None:
    for doc in DOCS:
        commands = quoted(doc)
        assert len(commands) >= 5, doc
        assert any(real for _, real in commands), f"{doc}: no ```sh ci block"
        text = doc.read_text()
        for heading in ("## Changed files", "## Commands and results", "## Limitations",
                        "## Dependency handoff"):
            assert heading in text, f"{doc}: missing {heading}"


def _argv(command: str) -> tuple[dict[str, str], list[str]]:
    words = shlex.split(command)
    env = {}
    while words and _ENV.match(words[0]):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    return env, words


def _check(cli, argv: list[str], real: bool) -> None:
    prog = Path(argv[0]).name
    if prog == "patchctl":
        args = argv[1:]
        if real:
            r = cli(*args)
            assert r.code == 0, f"{' '.join(argv)}\n{r.out}{r.err}"
            return
        cut = args.index("--") if "--" in args else len(args)
        r = cli(*args[:cut], "--help")
        assert r.code == 0, f"{' '.join(argv)} no longer parses: {r.err}"
        if cut < len(args):  # `record ... -- CMD`: CMD is quoted too
            _check(cli, args[cut + 1:], False)
    elif prog == "pytest":
        proc = subprocess.run([sys.executable, "-m", "pytest", *argv[1:], "--collect-only", "-q",
                               "-p", "no:cacheprovider"], cwd=REPO, capture_output=True,
                              text=True, timeout=300, check=False,
                              env={**os.environ, "PATH": os.pathsep.join(
                                  [str(Path(sys.executable).parent), os.environ["PATH"]])})
        counts = re.findall(r"(\d+)(?:/\d+)? tests? (?:collected|selected)", proc.stdout)
        # A command quoted with its own -q gets -qq's form: one `path: N` line per module.
        counts = counts or [str(sum(int(n) for n in re.findall(r"^\S+\.py: (\d+)$",
                                                              proc.stdout, re.MULTILINE)))]
        assert proc.returncode == 0 and counts and int(counts[-1]) > 0, \
            f"{' '.join(argv)} collects nothing:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
    elif prog in ("cmake", "ctest") and "--preset" in argv:
        presets = json.loads((REPO / "native" / "CMakePresets.json").read_text())
        names = {p["name"] for kind in ("configurePresets", "buildPresets", "testPresets")
                 for p in presets.get(kind, [])}
        assert argv[argv.index("--preset") + 1] in names, " ".join(argv)
    elif prog == "worker":
        usage = (REPO / "native" / "src" / "worker" / "main.cpp").read_text()
        usage = usage.split("kUsage =", 1)[1].split(";", 1)[0]
        for flag in (a for a in argv[1:] if a.startswith("--")):
            assert flag in usage, f"worker {flag} is gone: {' '.join(argv)}"
    else:
        assert shutil.which(argv[0]) or shutil.which(prog), f"{argv[0]} is not installed"


@pytest.mark.parametrize(("doc", "command", "real"), all_commands(),
                         ids=[f"{d}:{c[:60]}" for d, c, _ in all_commands()])
def test_quoted_command_still_runs(cli, doc: str, command: str, real: bool,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    env, argv = _argv(command)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(REPO)
    try:
        _check(cli, argv, real)
    finally:
        monkeypatch.undo()  # back to the original directory before the cwd check


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.parent.name)
def test_cited_records_exist_and_match_their_logs(doc: Path) -> None:
    cited = sorted(set(re.findall(r"evidence/[\w./-]+\.json", doc.read_text())))
    assert cited, f"{doc} cites no evidence record"
    for rel in cited:
        path = REPO / rel
        assert path.is_file(), f"{doc.parent.name} cites {rel}, which does not exist"
        record = json.loads(path.read_text())
        assert record["as_expected"], rel
        log = path.parent / record["output_file"]
        assert hashlib.sha256(log.read_bytes()).hexdigest() == record["output_sha256"], rel
