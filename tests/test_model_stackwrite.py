"""stackwrite: every change to stack/ is checked first, then swapped in whole."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from patchctl.errors import InputError
from patchctl.model import stackwrite
from patchctl.model.stack import Stack
from tests.builders import Upstream, make_project
from tests.conftest import CliResult

KILLER = Path(__file__).with_name("killer.py")


@pytest.fixture
def two(tmp_path: Path, upstream: Upstream, patches) -> tuple[Path, Path]:
    """A project with the first two standard patches, and the third as a file to import."""
    project = make_project(tmp_path / "project", upstream, patches[:2])
    source = tmp_path / "third.patch"
    source.write_text(patches[2][1])
    return project, source


def _leftovers(project: Path) -> list[str]:
    return sorted(p.name for p in project.iterdir() if p.name.startswith(".stack."))


def _one_line(r, code: int, fragment: str) -> None:
    assert r.code == code, (r.code, r.out, r.err)
    assert len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err, r.err
    assert fragment in r.err, r.err


@pytest.mark.parametrize("link", ["series", "stack.lock", "patches"])
def test_symlinks_in_the_stack_are_never_written_through(cli, two, tmp_path: Path,
                                                         link: str) -> None:
    """Regression: import/refresh/rebase-pin wrote through a symlinked series, lock or
    patches/ into files outside the project, before the changed-meanwhile check."""
    project, source = two
    outside = tmp_path / f"outside-{link}"
    real = project / "stack" / link
    (shutil.copytree if real.is_dir() else shutil.copy2)(real, outside)
    if real.is_dir():
        shutil.rmtree(real)
    else:
        real.unlink()
    real.symlink_to(outside)
    before = stackwrite.snapshot(project / "stack")
    kept = {p: p.read_bytes() for p in ([outside] if outside.is_file() else
                                         sorted(outside.iterdir()))}
    r = cli("-C", str(project), "import", str(source))
    _one_line(r, 2, "is a symbolic link; patchctl never writes through one")
    assert {p: p.read_bytes() for p in kept} == kept
    assert not outside.is_dir() or sorted(outside.iterdir()) == sorted(kept)
    assert stackwrite.snapshot(project / "stack") == before
    assert _leftovers(project) == []


def test_symlinked_pin_file_is_refused_before_anything_is_written(two, tmp_path: Path) -> None:
    """Regression: a symlinked upstream.toml was rewritten outside the project."""
    project, _ = two
    pin = project / "stack/upstream.toml"
    outside = tmp_path / "pin.toml"
    outside.write_bytes(pin.read_bytes())
    pin.unlink()
    pin.symlink_to(outside)
    text = outside.read_bytes()
    with pytest.raises(InputError, match="symbolic link"):
        stackwrite.replace_stack(Stack(project / "stack"), {"upstream.toml": b"x = 1\n",
                                                            "stack.lock": b""})
    assert outside.read_bytes() == text
    assert (project / "stack/stack.lock").read_bytes() != b""


def test_a_fifo_in_the_stack_is_refused_not_waited_on(two) -> None:
    """Regression: a FIFO in stack/ made import (its snapshot) block forever."""
    project, source = two
    os.mkfifo(project / "stack/junk")
    r = subprocess.run([sys.executable, "-m", "patchctl", "-C", str(project), "import",
                        str(source)], capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 2, r.stderr
    assert "junk is a named pipe (FIFO), not a regular file" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_ctrl_c_at_every_step_of_import(two) -> None:
    """SIGINT before each rename/rmtree/exchange of `import`: exit 130 with one line, or
    done (exit 0); stack/ old or new; nothing left beside it that the next run keeps.

    Regression: Ctrl-C during the cleanup after the swap gave a traceback and left
    the old stack's copy beside stack/.
    """
    project, source = two
    old = stackwrite.snapshot(project / "stack")
    states = set()
    for n in range(1, 40):
        shutil.rmtree(project / ".patchctl", ignore_errors=True)
        r = subprocess.run([sys.executable, str(KILLER), str(n), "-C", str(project), "import",
                            str(source)], capture_output=True, text=True, check=False,
                           env={**os.environ, "KILLER_SIGNAL": "SIGINT"})
        assert "Traceback" not in r.stderr, (n, r.stderr)
        assert r.returncode in (0, 130), (n, r.stderr)
        now = stackwrite.snapshot(project / "stack")
        if r.returncode == 130:
            assert "patchctl: interrupted" in r.stderr
        if now == old:
            states.add("old")
        else:
            assert "0003-tiny-declare-tiny_square.patch" in (project / "stack/series").read_text()
            states.add("new")
            assert _leftovers(project) == [], n
            if r.returncode == 0 and "KILLER-COUNT" in r.stderr and \
                    int(r.stderr.split("KILLER-COUNT ")[1].split()[0]) < n:
                break  # n is past the last mutation: every point was tried
            _restore(project, old)
    assert states == {"old", "new"}


def _restore(project: Path, old: dict[str, str]) -> None:
    series = project / "stack/series"
    series.write_text("".join(ln + "\n" for ln in series.read_text().splitlines()
                              if not ln.startswith("0003-")))
    (project / "stack/patches/0003-tiny-declare-tiny_square.patch").unlink()
    from patchctl.model.fingerprint import make_lock
    from patchctl.model.stack import render_lock

    stack = Stack(project / "stack")
    stack.lock_path.write_text(render_lock(make_lock(stack.pin(), stack.patches())))
    assert stackwrite.snapshot(project / "stack") == old


# -- a read-only stack: exit 3, one line naming the path -----------------------------------------


def _cli_bound_by_permissions(cli):
    """The CLI as a user whom file permissions bind. Root ignores them (as CI runs), so
    there it runs as a subprocess without the capabilities that override them."""
    if os.geteuid() != 0:
        return cli
    if shutil.which("setpriv") is None:
        pytest.skip("root ignores file permissions and setpriv (util-linux) is missing")

    def run(*args: str) -> CliResult:
        drop = "-dac_override,-dac_read_search,-fowner"
        p = subprocess.run(["setpriv", "--bounding-set", drop, sys.executable, "-m",
                            "patchctl", *args], capture_output=True, text=True, check=False)
        return CliResult(p.returncode, p.stdout, p.stderr)

    return run


@pytest.mark.parametrize("command", ["import", "lock", "refresh"])
def test_read_only_stack_is_an_environment_error(cli, two, command: str) -> None:
    """Regression: a read-only stack/ gave a traceback and exit 1 (import, refresh, lock).
    As root the command runs without CAP_DAC_OVERRIDE, so the test runs in CI too."""
    project, source = two
    lock = project / "stack/stack.lock"
    text = lock.read_text()
    lock.write_text(re.sub(r'fingerprint = "[0-9a-f]+"', 'fingerprint = "' + "0" * 64 + '"', text))
    if command == "refresh":
        assert cli("-C", str(project), "edit", "1").code == 0
        work = project / ".patchctl/edit/work/src/util.c"
        work.write_text(work.read_text() + "/* more */\n")
    args = {"import": ["import", str(source)], "lock": ["lock"], "refresh": ["refresh"]}[command]
    before = stackwrite.snapshot(project / "stack")
    bound = _cli_bound_by_permissions(cli)
    os.chmod(project / "stack", 0o555)
    try:
        r = bound("-C", str(project), *args)
    finally:
        os.chmod(project / "stack", 0o755)
    _one_line(r, 3, f"{project / 'stack'}: read-only (Permission denied)")
    assert stackwrite.snapshot(project / "stack") == before
    assert _leftovers(project) == []


def test_junit_into_a_read_only_directory_names_the_file(cli, two, tmp_path: Path) -> None:
    """A read-only target for `verify --junit FILE` named
    patchctl's temp file beside it (.FILE.PID.xxx.tmp) in the error, not FILE."""
    project, _ = two
    ro = tmp_path / "ro"
    ro.mkdir()
    bound = _cli_bound_by_permissions(cli)
    os.chmod(ro, 0o555)
    try:
        r = bound("-C", str(project), "verify", "--junit", str(ro / "report.xml"))
    finally:
        os.chmod(ro, 0o755)
    _one_line(r, 3, f"patchctl: error: {ro / 'report.xml'}: Permission denied")
    assert ".tmp" not in r.err and list(ro.iterdir()) == []


def test_an_unwritable_place_is_an_environment_error(cli, two, tmp_path: Path) -> None:
    """Regression: an OSError (here `verify --junit` into a path under a regular file)
    gave a traceback and exit 1, which means "findings"; now exit 3 and one line."""
    project, _ = two
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    r = cli("-C", str(project), "verify", "--junit", str(blocker / "report.xml"))
    _one_line(r, 3, f"patchctl: error: {blocker}")



def test_state_journalled_with_a_swap_is_written_only_with_that_stack(two, tmp_path: Path) -> None:
    """replace_stack(then=): the state that names what a swap writes is journalled beside
    the stack before it. Recovery writes it when that stack is in place (killed just after
    the swap), drops it when the old stack is (killed before), and never writes a file
    outside the project's .patchctl however the journal names it."""
    project, _ = two
    stack = Stack(project / "stack")
    state = project / ".patchctl" / "edit" / "state.json"
    stackwrite.replace_stack(stack, {"series": b"# new\n"}, then={state: b"new\n"})
    assert state.read_text() == "new\n" and _leftovers(project) == []
    with pytest.raises(ValueError, match="not a state file"):
        stackwrite.replace_stack(stack, {"series": b"# x\n"}, then={tmp_path / "x": b""})
    journal = project / ".stack.patchctl-journal"
    digest = stackwrite._digest(stack.root)

    def recovered(stack_digest: str, files: dict[str, str]) -> None:
        journal.write_text(json.dumps({"schema": "patchctl.stack-journal/1",
                                       "stack": stack_digest, "files": files}))
        stackwrite.recover(stack.root)
        assert not journal.exists()

    # as a run killed just after its swap leaves it: recovery writes the state
    recovered(digest, {".patchctl/edit/state.json": "recovered\n"})
    assert state.read_text() == "recovered\n"
    # for a stack that was never swapped in (killed before the swap): dropped
    recovered("0" * 64, {".patchctl/edit/state.json": "stale\n"})
    assert state.read_text() == "recovered\n"
    # naming a file outside .patchctl (a hostile commit can add one): dropped whole
    recovered(digest, {"../outside": "x\n", ".patchctl/edit/state.json": "evil\n"})
    assert not (tmp_path / "outside").exists() and state.read_text() == "recovered\n"


def test_what_a_killed_writer_started_holds_the_lock_until_it_ends(tmp_path: Path) -> None:
    """Bug: SIGKILL ends a writer but not the git it started (a group of its own), and the
    next writer took the lock at once and worked beside it: `edit` rerun after a killed
    `edit` found the work tree's repository still being made by the killed run's `git
    init` and refused ("git cannot read the repository of the edit work tree"). Every
    process a writer starts now holds the lock too: the next writer waits for it, then
    says so in one line, and takes the lock once it has ended."""
    from patchctl.errors import BusyError

    script = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from patchctl import procs\n"
        "from patchctl.model import stackwrite\n"
        "with stackwrite.stack_lock(Path(sys.argv[1]), 'edit'):\n"
        "    with procs.start(['sleep', '30']) as child:\n"
        "        print(child.pid, flush=True)\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    writer = subprocess.run([sys.executable, "-c", script, str(tmp_path)], text=True,
                            stdout=subprocess.PIPE, check=False)
    assert writer.returncode == -signal.SIGKILL
    orphan = int(writer.stdout)
    try:
        with (pytest.raises(BusyError, match="is gone, but a process it started still holds"),
              stackwrite.stack_lock(tmp_path, "edit")):
            pass
    finally:
        os.kill(orphan, signal.SIGKILL)  # the test's own sleep, left running by the killed writer
    with stackwrite.stack_lock(tmp_path, "edit"):  # waits the moment its end takes
        pass
