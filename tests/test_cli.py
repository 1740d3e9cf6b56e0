"""The CLI surface: init, series, lock, fingerprint, apply, record, help and errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.builders import Upstream

# Modules `--help` must not load: unidiff (third-party, imported by
# patchctl's commands) and patchctl's own command machinery.
HEAVY = ("unidiff", "patchctl.gitrepo", "patchctl.model.stack", "patchctl.verify.engine",
         "patchctl.rebase.engine", "patchctl.reproducers.materialize",
         "patchctl.authoring.init_import", "patchctl.authoring.edit")


def _loaded_after(code: str) -> list[str]:
    probe = (f"import json, sys\n{code}\n"
             f"print('LOADED', json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.split("LOADED ", 1)[1])


def test_help_lists_commands_without_heavy_imports() -> None:
    """`patchctl --help` loads none of HEAVY.

    Regression: this test checked jinja2 and requests, which nothing in patchctl
    imports, so it could not fail. Now it checks modules patchctl does import,
    and first proves the probe sees them when a command runs.
    """
    import ast

    package = Path(__file__).parent.parent / "patchctl"
    sources = [ast.parse(p.read_text()) for p in package.rglob("*.py")]
    imported = {a.name for t in sources for n in ast.walk(t) if isinstance(n, ast.Import)
                for a in n.names} | {n.module for t in sources for n in ast.walk(t)
                                     if isinstance(n, ast.ImportFrom) and n.module}
    assert {"unidiff"} <= {m.split(".")[0] for m in imported}
    running = _loaded_after("from patchctl.cli import main\n"
                            "import patchctl.commands.verify, patchctl.verify.engine\n"
                            "import patchctl.model.patchfile, patchctl.rebase.engine\n"
                            "import patchctl.authoring.init_import\n"
                            "import patchctl.reproducers.materialize, patchctl.authoring.edit\n"
                            "import unidiff")
    assert running == list(HEAVY)  # the probe sees each of them once loaded
    code = ("from patchctl.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "verify" in out and "rebase-pin" in out
    assert _loaded_after(code) == []


def test_init_creates_an_empty_clean_stack(cli, tmp_path: Path, upstream: Upstream) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    r = cli("-C", str(project), "init", "--upstream", str(upstream.path), "--pin", "master")
    assert r.code == 0, r.err
    pin = (project / "stack/upstream.toml").read_text()
    assert f'commit = "{upstream.head}"' in pin
    assert 'tag = "master"' in pin
    assert cli("-C", str(project), "verify").code == 0
    again = cli("-C", str(project), "init", "--upstream", str(upstream.path), "--pin", "master")
    assert again.code == 2 and "already exists" in again.err


def test_init_rejects_a_pin_not_in_the_upstream(cli, tmp_path, upstream) -> None:
    r = cli("-C", str(tmp_path), "init", "--upstream", str(upstream.path), "--pin", "f" * 40)
    assert r.code == 2
    assert "is not a commit in upstream" in r.err
    assert not (tmp_path / "stack").exists()


def test_init_offline_url_keeps_a_full_pin(cli, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATCHCTL_CACHE_DIR", str(tmp_path / "cache"))
    r = cli("-C", str(tmp_path), "init", "--upstream", f"file://{tmp_path}/none.git",
            "--pin", "a" * 40, "--name", "up")
    assert r.code == 0
    assert "was not checked" in r.err
    bad = cli("-C", str(tmp_path / "x"), "init", "--upstream", f"file://{tmp_path}/none.git",
              "--pin", "b9000")
    assert bad.code == 2 and "40-hex" in bad.err


def test_series_json(cli, project) -> None:
    r = cli("-C", str(project), "series", "--json")
    data = json.loads(r.out)
    assert [p["concern"] for p in data["patches"]] == ["square", "bump", "square"]
    assert data["patches"][0]["reproducer"] == "reproducers/square"


def _column_starts(lines: list[str], cells: list[str]) -> set[int]:
    """Where each line's cell (one per line) starts."""
    return {line.index(f"  {cell}  ") for line, cell in zip(lines, cells, strict=True)}


def test_series_text_is_aligned_and_counts_agree(cli, project) -> None:
    """`series` printed its columns unaligned (verify's are), and "1 files"."""
    lines = cli("-C", str(project), "series").out.splitlines()
    assert lines[0].endswith(": 3 patches")
    assert lines[1].split() == ["#", "patch", "concern", "size", "status"]
    assert len(_column_starts(lines[1:], ["concern", "square", "bump", "square"])) == 1
    assert "1 file +" in lines[2] and "1 files" not in "\n".join(lines)


def test_upstream_help_names_bundles_everywhere(cli) -> None:
    """`--help` of `rebase-pin` and `draft-outreach` did not say that
    --upstream takes a git bundle (the README does); one help text for every command."""
    from patchctl.commands._common import UPSTREAM_HELP

    assert "git bundle" in UPSTREAM_HELP
    for command in ("rebase-pin", "draft-outreach", "apply", "verify", "reproduce", "edit"):
        r = cli(command, "--help")
        assert r.code == 0 and "PATH|BUNDLE|URL" in r.out, command
        assert "git bundle" in " ".join(r.out.split()), command


def test_counted_nouns_agree() -> None:
    """"pending 1 days", "1 files": one helper for every counted noun."""
    from patchctl.textout import count, plural

    assert [count(n, "day") for n in (0, 1, 2)] == ["0 days", "1 day", "2 days"]
    assert count(1, "patch") == "1 patch" and count(3, "patch") == "3 patches"
    assert count(2, "entry") == "2 entries" and count(2, "key") == "2 keys"
    assert plural(2, "git call") == "git calls" and count(2, "datum", "data") == "2 data"


def test_fingerprint_forms_agree_with_the_lock(cli, project) -> None:
    lock = (project / "stack/stack.lock").read_text()
    fp = cli("-C", str(project), "fingerprint").out.strip()
    assert f'fingerprint = "{fp}"' in lock
    data = json.loads(cli("-C", str(project), "fingerprint", "--json").out)
    assert data["fingerprint"] == fp and data["short"] == fp[:16]
    assert data["patches"][0]["file"] == "0001-util-add-tiny_square.patch"
    cmake = cli("-C", str(project), "fingerprint", "--cmake").out
    assert f'set(PATCHCTL_FINGERPRINT "{fp}")' in cmake
    assert cli("-C", str(project), "lock", "--check").code == 0


def test_apply_into_materializes_and_stamps(cli, tmp_path, project, upstream) -> None:
    into = tmp_path / "tree"
    r = cli("-C", str(project), "apply", "--into", str(into), "--upstream", str(upstream.path),
            "--json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert "tiny_square" in (into / "src/util.c").read_text()
    assert "tiny_square" in (into / "include/tiny.h").read_text()
    stamp = (into / ".patchctl-stamp").read_text()
    assert f'tree = "{data["stamp"]["tree"]}"' in stamp
    again = cli("-C", str(project), "apply", "--into", str(into), "--upstream",
                str(upstream.path), "--json")
    assert json.loads(again.out)["unchanged"] is True
    # the manifest is what `sha256sum` over the sorted file list gives
    files = sorted(p.relative_to(into).as_posix() for p in into.rglob("*")
                   if p.is_file() and p.name != ".patchctl-stamp")
    listing = subprocess.run(["sha256sum", *files], cwd=into, capture_output=True, text=True,
                             check=True).stdout
    total = subprocess.run(["sha256sum"], input=listing, capture_output=True, text=True,
                           check=True).stdout.split()[0]
    assert data["stamp"]["manifest"] == total


def test_apply_commits_history(cli, tmp_path, project, upstream) -> None:
    into = tmp_path / "repo"
    assert cli("-C", str(project), "apply", "--into", str(into), "--upstream",
               str(upstream.path), "--commits").code == 0
    log = subprocess.run(["git", "-C", str(into), "log", "--format=%s"], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert log[:3] == ["tiny : declare tiny_square", "tiny : bump op 02",
                       "util : add tiny_square"]
    base_tree = subprocess.run(["git", "-C", str(into), "rev-parse", "HEAD~3^{tree}"],
                               capture_output=True, text=True, check=True).stdout.strip()
    assert base_tree == upstream.tree(upstream.commits["base"])


def test_record_writes_evidence(cli, tmp_path, project) -> None:
    ev = tmp_path / "ev"
    r = cli("-C", str(project), "record", "--name", "demo", "--evidence-dir", str(ev), "--",
            sys.executable, "-c", "print('hello from the run')")
    assert r.code == 0
    rec = json.loads((ev / "demo.json").read_text())
    assert rec["exit_code"] == 0 and rec["as_expected"] is True
    assert rec["stack"]["pin"] == (project / "stack/upstream.toml").read_text().split(
        'commit = "')[1][:40]
    assert "git" in rec["tools"]
    assert (ev / "demo.log").read_text() == "hello from the run\n"
    neg = cli("-C", str(project), "record", "--name", "neg", "--expect", "fail",
              "--evidence-dir", str(ev), "--", sys.executable, "-c", "raise SystemExit(3)")
    assert neg.code == 0
    assert json.loads((ev / "neg.json").read_text())["exit_code"] == 3


def test_example_project_verifies_offline(cli) -> None:
    example = Path(__file__).resolve().parent.parent / "examples" / "tiny"
    r = cli("-C", str(example), "verify")
    assert r.code == 0, r.out + r.err
    assert "result: OK" in r.out


def test_apply_exclude_leaves_paths_out(cli, tmp_path, project, upstream) -> None:
    """Regression: --exclude failed with "must be run in a work tree" on a non-bare clone."""
    into = tmp_path / "tree"
    r = cli("-C", str(project), "apply", "--into", str(into), "--upstream", str(upstream.path),
            "--exclude", "README.md", "--exclude", "docs/**")
    assert r.code == 0, r.err
    assert not (into / "README.md").exists()
    assert (into / "src/util.c").exists()
    assert 'exclude = ["README.md", "docs/**"]' in (into / ".patchctl-stamp").read_text()
    r = cli("-C", str(project), "apply", "--into", str(tmp_path / "t2"), "--upstream",
            str(upstream.path), "--exclude", "src/t*.c")
    assert r.code == 2
    assert "--exclude src/t*.c would leave out src/tiny.c" in r.err
    assert not (tmp_path / "t2").exists()


# -- shell completion (click's) ----------------------------------------------------------


def _complete(project: Path, *words: str, shell: str = "bash") -> list[str]:
    """What the shell hook gets back for ``patchctl -C PROJECT WORDS...`` (last word partial)."""
    import os
    import subprocess
    import sys

    line = ["patchctl", "-C", str(project), *words]
    env = {**os.environ, "_PATCHCTL_COMPLETE": f"{shell}_complete",
           "COMP_WORDS": " ".join(line), "COMP_CWORD": str(len(line) - 1)}
    r = subprocess.run([sys.executable, "-m", "patchctl"], env=env, capture_output=True,
                       text=True, check=False)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    return [ln.split(",", 1)[1] for ln in r.stdout.splitlines() if ln]


def test_completion_of_patch_names(project: Path) -> None:
    names = ["0001-util-add-tiny_square.patch", "0002-tiny-bump-op-02.patch",
             "0003-tiny-declare-square.patch"]
    assert _complete(project, "edit", "") == names
    assert _complete(project, "move", "0002", "--after", "0") == names
    assert _complete(project, "fold", "3", "--into", "0001") == names[:1]
    assert _complete(project, "header", "square") == [names[0], names[2]]  # a part of a name
    assert _complete(project, "reproduce", "0001-util-add-tiny_square.patch", "0003") == \
        names[2:]
    assert _complete(project, "del") == ["delete"]
    assert _complete(project.parent / "nowhere", "edit", "") == []  # no stack: nothing, quietly


def test_completion_of_refs(project: Path, upstream: Upstream) -> None:
    from tests.builders import git

    git(upstream.path, "tag", "v1.0", upstream.commits["readme"])
    assert _complete(project, "rebase-pin", "") == ["master", "v1.0"]
    assert _complete(project, "rebase-pin", "v") == ["v1.0"]
    assert _complete(project, "ci", "tip", "v") == ["v1.0"]
    assert _complete(project, "upstream-status", "--ref", "ma") == ["master"]
    assert _complete(project, "draft-outreach", "--onto", "v") == ["v1.0"]


def test_completion_scripts_for_each_shell() -> None:
    import os
    import subprocess
    import sys

    for shell, marker in (("bash", "complete -o nosort -F _patchctl_completion patchctl"),
                          ("zsh", "#compdef patchctl"), ("fish", "complete --no-files")):
        r = subprocess.run([sys.executable, "-m", "patchctl"], capture_output=True, text=True,
                           env={**os.environ, "_PATCHCTL_COMPLETE": f"{shell}_source"},
                           check=False)
        assert r.returncode == 0 and marker in r.stdout, (shell, r.stdout[:200])


def test_progress_off_a_terminal_is_a_line_per_step_with_the_time() -> None:
    """Bug: off a terminal progress was dropped altogether, so long work (reproduce's
    builds) was silent for minutes. A log now gets a line per step with the time since
    the start, a moving counter at most every `interval` seconds, and nothing from work
    that ends within `delay`."""
    import io

    from patchctl.commands._common import LINES, Progress

    now = [100.0]
    out = io.StringIO()
    p = Progress(LINES, stream=out, delay=2.0, interval=15.0, started=100.0,
                 clock=lambda: now[0])
    step = "[1/2] 0001-a.patch before (pin + 0)"
    for t, msg in [(0.5, "computing the prefix trees"),  # within the delay: not shown
                   (2.5, f"{step}: configuring"), (3.0, f"{step}: building 1/90"),
                   (9.0, f"{step}: building 2/90"),  # the same step, a moment later
                   (19.0, f"{step}: building 50/90"), (65.0, f"{step}: fails at build in 62.5 s"),
                   (3700.0, "[2/2] 0001-a.patch after (pin + 1): preparing the source tree")]:
        now[0] = 100.0 + t
        p(msg)
    p.done()
    assert out.getvalue().splitlines() == [
        f"patchctl: [0:02] {step}: configuring", f"patchctl: [0:03] {step}: building 1/90",
        f"patchctl: [0:19] {step}: building 50/90",
        f"patchctl: [1:05] {step}: fails at build in 62.5 s",
        "patchctl: [1:01:40] [2/2] 0001-a.patch after (pin + 1): preparing the source tree"]


def test_progress_on_a_terminal_is_one_line_rewritten() -> None:
    import io

    from patchctl.commands._common import TTY, Progress

    out = io.StringIO()
    p = Progress(TTY, stream=out, started=0.0, clock=lambda: 75.0)
    p("building 3/9")
    p("building 4/9")
    p.done()
    assert out.getvalue() == ("\r\033[K[1:15] building 3/9\r\033[K[1:15] building 4/9"
                              "\r\033[K")


def test_progress_mode_follows_quiet_json_and_the_environment(monkeypatch) -> None:
    from patchctl.commands._common import LINES, OFF, TTY, progress_mode
    from patchctl.errors import InputError

    monkeypatch.delenv("PATCHCTL_QUIET")
    assert progress_mode(quiet=False, as_json=False, tty=True) == (TTY, 0.0)
    assert progress_mode(quiet=False, as_json=False, tty=False) == (LINES, 2.0)
    assert progress_mode(quiet=False, as_json=True, tty=False) == (OFF, 0.0)
    assert progress_mode(quiet=False, as_json=True, tty=True) == (TTY, 0.0)
    assert progress_mode(quiet=True, as_json=False, tty=True) == (OFF, 0.0)
    monkeypatch.setenv("PATCHCTL_PROGRESS", "lines")
    assert progress_mode(quiet=False, as_json=True, tty=True) == (LINES, 0.0)
    assert progress_mode(quiet=True, as_json=False, tty=True) == (OFF, 0.0)
    monkeypatch.setenv("PATCHCTL_QUIET", "1")
    assert progress_mode(quiet=False, as_json=False, tty=True) == (OFF, 0.0)
    monkeypatch.setenv("PATCHCTL_PROGRESS", "loud")
    with pytest.raises(InputError, match="PATCHCTL_PROGRESS='loud'"):
        progress_mode(quiet=False, as_json=False, tty=True)


def test_progress_goes_to_stderr_only(cli, project, upstream, monkeypatch) -> None:
    """With progress forced on, stdout (the report, --json) is exactly what it was;
    a bad PATCHCTL_PROGRESS is one line, exit 2."""
    monkeypatch.delenv("PATCHCTL_QUIET")
    quiet = cli("-C", str(project), "verify", "--upstream", str(upstream.path), "--json", "-q")
    assert quiet.code == 0 and quiet.err == ""
    monkeypatch.setenv("PATCHCTL_PROGRESS", "lines")
    r = cli("-C", str(project), "verify", "--upstream", str(upstream.path), "--json")
    assert r.code == 0 and "patchctl: [0:00] applying 3 patches" in r.err
    mask = {"seconds", "git_calls"}  # this run's own cost
    assert {k: v for k, v in json.loads(r.out).items() if k not in mask} == \
        {k: v for k, v in json.loads(quiet.out).items() if k not in mask}
    monkeypatch.setenv("PATCHCTL_PROGRESS", "loud")
    bad = cli("-C", str(project), "verify", "--upstream", str(upstream.path))
    assert bad.code == 2 and bad.err.count("\n") == 1 and "PATCHCTL_PROGRESS" in bad.err
