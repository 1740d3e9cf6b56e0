"""Crash safety: SIGKILL every writing command at many points, then check the invariant.

For each scenario (apply --into, import, refresh, edit, rebase-pin, rebase-pin
--continue) a fresh project is set up per trial, the command runs under
``tests/killer.py`` and is SIGKILLed just before its Nth rename/replace/rmtree/
exchange (every N in turn), or after a seeded random delay. Then:

* every watched file (the whole of ``stack/``, and DIR for apply) is exactly
  the old or exactly the new version: the digest of the tree equals one of two;
* the next plain run of the same command recovers with no manual step and ends
  at the new version, and nothing is left beside ``stack/`` or DIR.

The default suite runs every mutation point and a few timed kills per scenario
(over 100 trials in all); ``-m slow`` adds many more timed kills.
"""

from __future__ import annotations

import os
import random
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.builders import Upstream, commit_all, git, make_project, replace_in, system_config_off
from tests.corpus import FINDINGS, OK, USAGE, check, tree_digest
from tests.system_packages import LIBRARIES, needs

KILLER = Path(__file__).with_name("killer.py")


@dataclass
class Scenario:
    name: str
    # (trial dir, cli) -> (project, argv after -C PROJECT, watched dirs)
    setup: Callable[..., tuple[Path, list[str], list[Path]]]
    # what the next plain run may answer (exit codes); it must end at the new version
    rerun_codes: tuple[int, ...] = (OK,)
    rerun: list[str] | None = None  # another command to recover with (default: argv again)


def _killer(project: Path, argv: list[str], n: int, *, signal_name: str = "SIGKILL",
            env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    env = {**os.environ, **(env or {}), "KILLER_SIGNAL": signal_name}
    return subprocess.Popen([sys.executable, str(KILLER), str(n), "-C", str(project), *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _state(watched: list[Path]) -> list[dict[str, str]]:
    return [tree_digest(p) for p in watched]


def _leftovers(watched: list[Path]) -> list[str]:
    return sorted(p.name for w in watched for p in w.parent.iterdir()
                  if p.name.startswith(f".{w.name}.patchctl-") and not p.name.endswith("-lock"))


# -- scenarios -------------------------------------------------------------------------------


def _apply(tmp: Path, cli, up: Upstream, patches) -> tuple[Path, list[str], list[Path]]:
    project = make_project(tmp / "p", up, patches[:2])
    into = tmp / "tree"
    check(cli("-C", str(project), "apply", "--into", str(into)), OK)
    project = make_project(tmp / "p", up, patches)  # now three patches: DIR must change
    return project, ["apply", "--into", str(into)], [project / "stack", into]


def _import(tmp: Path, cli, up: Upstream, patches) -> tuple[Path, list[str], list[Path]]:
    project = make_project(tmp / "p", up, patches[:2])
    source = tmp / patches[2][0]
    source.write_text(patches[2][1])
    return project, ["import", str(source)], [project / "stack"]


def _refresh(tmp: Path, cli, up: Upstream, patches) -> tuple[Path, list[str], list[Path]]:
    project = make_project(tmp / "p", up, patches)
    check(cli("-C", str(project), "edit", "0002"), OK)
    replace_in(project / ".patchctl/edit/work/src/tiny.c", "x * 4 + 1;", "x * 4 + 2;")
    return project, ["refresh"], [project / "stack"]


def _edit(tmp: Path, cli, up: Upstream, patches) -> tuple[Path, list[str], list[Path]]:
    project = make_project(tmp / "p", up, patches)
    return project, ["edit", "0003"], [project / "stack"]


def _rebase(tmp: Path, cli, up: Upstream, patches) -> tuple[Path, list[str], list[Path]]:
    project = make_project(tmp / "p", up, patches)
    return project, ["rebase-pin", "later"], [project / "stack"]


def _continue(tmp: Path, cli, up: Upstream, patches) -> tuple[Path, list[str], list[Path]]:
    from tests.rebase_history import PATCH_NAMES

    project = make_project(tmp / "p", up, patches)
    r = cli("-C", str(project), "rebase-pin", "master", "--drop-upstream")
    check(r, FINDINGS, "stopped")
    work = project / ".patchctl/rebase/work"
    text = (work / "src/tiny.c").read_text()
    start, end = text.index("<<<<<<<"), text.index(">>>>>>>")
    (work / "src/tiny.c").write_text(text[:start] + "        y -= 19;\n" +
                                     text[text.index("\n", end) + 1:])
    git(work, "add", "src/tiny.c")
    # The history also holds a patch a merge leaves without part of its change: that
    # resolution's --continue stops again there, and the one killed takes it as it stands.
    check(cli("-C", str(project), "rebase-pin", "--continue"), FINDINGS, "judge it")
    assert PATCH_NAMES
    return project, ["rebase-pin", "--continue"], [project / "stack"]


SCENARIOS = [
    Scenario("apply-into", _apply),
    # killed after the swap, the patch is in: importing it again is refused, at the new stack
    Scenario("import", _import, rerun_codes=(OK, USAGE)),
    # killed after the swap, the edit may be over: "nothing to refresh", at the new stack
    Scenario("refresh", _refresh, rerun_codes=(OK, USAGE)),
    Scenario("edit", _edit),
    Scenario("rebase-pin", _rebase, rerun_codes=(OK,)),
    Scenario("rebase-pin-continue", _continue, rerun_codes=(OK, USAGE)),
]


@pytest.fixture(scope="module")
def _worlds(tmp_path_factory: pytest.TempPathFactory):
    """The upstreams: tiny with a later commit `later` (README only), and the rebase history."""
    from tests.builders import make_upstream, standard_patches
    from tests.rebase_history import make_history

    root = tmp_path_factory.mktemp("kill")
    with system_config_off():
        up = make_upstream(root / "tiny")
        patches = standard_patches(up, root / "scratch")
        (up.path / "README.md").write_text("# tiny\n\nLater.\n")
        git(up.path, "tag", "later", commit_all(up.path, "docs : later (#4)"))
        history = make_history(root / "history")
    return (up, patches), (history.upstream, history.patches)


def _world(scenario: Scenario, worlds):
    return worlds[1] if scenario.name == "rebase-pin-continue" else worlds[0]


def _new_version(scenario: Scenario, cli, tmp: Path, worlds) -> tuple[list[dict], float]:
    """What a run that is never killed leaves, and how long it takes as a subprocess."""
    up, patches = _world(scenario, worlds)
    project, argv, watched = scenario.setup(tmp, cli, up, patches)
    started = time.monotonic()
    proc = _killer(project, argv, 0)
    _out, err = proc.communicate()
    elapsed = time.monotonic() - started
    assert proc.returncode in (OK, FINDINGS), err
    points = int(err.rsplit("KILLER-COUNT ", 1)[1].split()[0])
    return [_state(watched), points], elapsed


def _trial(scenario: Scenario, cli, tmp: Path, worlds, new: list[dict], *,
           point: int = 0, delay: float = 0.0) -> str:
    """One killed run and its recovery; returns "old", "new" or "done" (not killed)."""
    up, patches = _world(scenario, worlds)
    project, argv, watched = scenario.setup(tmp, cli, up, patches)
    old = _state(watched)
    proc = _killer(project, argv, point)
    if delay:
        time.sleep(delay)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate()
    if proc.returncode != -signal.SIGKILL:
        assert proc.returncode in (OK, FINDINGS), err
        assert _state(watched) == new
        return "done"
    after = _state(watched)
    assert after in (old, new), f"{scenario.name}: a kill at {point or delay} left a mix"
    r = cli("-C", str(project), *(scenario.rerun or argv))
    check(r, scenario.rerun_codes)
    if scenario.rerun is None:
        assert _state(watched) == new, f"{scenario.name}: the next run did not recover"
    else:
        assert _state(watched) in (old, new)
    assert _leftovers(watched) == [], _leftovers(watched)
    check(cli("-C", str(project), "verify"), OK)
    return "new" if after == new else "old"


TRIALS: dict[str, int] = {}


def _run_all(scenario: Scenario, cli, tmp_path: Path, worlds, timed: int) -> None:
    (new, points), elapsed = _new_version(scenario, cli, tmp_path / "ref", worlds)
    outcomes = []
    for n in range(1, points + 1):
        outcomes.append(_trial(scenario, cli, tmp_path / f"n{n}", worlds, new, point=n))
    rng = random.Random(f"{scenario.name}-{timed}")
    for i in range(timed):
        outcomes.append(_trial(scenario, cli, tmp_path / f"t{i}", worlds, new,
                               delay=rng.uniform(0.05, max(0.1, elapsed))))
    killed = [o for o in outcomes if o != "done"]
    TRIALS[scenario.name] = TRIALS.get(scenario.name, 0) + len(killed)
    print(f"KILL-TRIALS {scenario.name}: {len(killed)} killed ({points} mutation points, "
          f"{timed} timed), {outcomes.count('old')} left old, {outcomes.count('new')} new")
    assert points >= 1 and len(killed) >= points


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_kill_at_every_point(cli, scenario: Scenario, tmp_path: Path, _worlds) -> None:
    _run_all(scenario, cli, tmp_path, _worlds, timed=15)


@pytest.mark.slow
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_kill_at_random_times(cli, scenario: Scenario, tmp_path: Path, _worlds) -> None:
    _run_all(scenario, cli, tmp_path, _worlds, timed=int(os.environ.get("KILL_TRIALS", "10")))


# -- concurrent runs and stale locks --------------------------------------------------------


@pytest.mark.parametrize("second", [["import", "{SRC}"], ["refresh"], ["edit", "0001"],
                                    ["rebase-pin", "later"], ["new", "x", "--concern", "c",
                                                              "--scope", "x"]])
def test_a_second_writer_is_refused_and_a_killed_one_leaves_no_lock(
        cli, tmp_path: Path, _worlds, second: list[str]) -> None:
    """A writer stopped (SIGSTOP) mid-run holds the stack: a second writer is refused
    at once with one line naming the holder; killed, it leaves a lock file that the
    next run detects as stale and takes over, and the stack is old or new."""
    (up, patches), _ = _worlds
    _, argv, _ = _import(tmp_path / "ref", cli, up, patches)
    counted = _killer(tmp_path / "ref/p", argv, 0)
    last = int(counted.communicate()[1].rsplit("KILLER-COUNT ", 1)[1].split()[0])
    project, argv, watched = _import(tmp_path, cli, up, patches)
    src = argv[1]
    old = _state(watched)
    # stopped before its last mutation (the temp dir's removal): still under the lock
    holder = _killer(project, argv, last, signal_name="SIGSTOP")
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # wait until it stopped itself
            with open(f"/proc/{holder.pid}/stat") as f:
                if f.read().split(") ", 1)[1].startswith("T"):
                    break
            time.sleep(0.02)
        else:
            raise AssertionError("the holder never stopped")
        args = [a.replace("{SRC}", src) for a in second]
        r = cli("-C", str(project), *args)
        check(r, 3, "busy")
        assert str(holder.pid) in r.err
        stopped = _state(watched)
    finally:
        holder.kill()
        holder.communicate()
    assert (project / ".patchctl/lock").exists()  # left behind by the killed holder
    r = cli("-C", str(project), *argv)
    if stopped == old:
        check(r, OK)
    else:  # it had swapped the new stack in: importing again is refused, nothing changes
        check(r, USAGE)
        assert _state(watched) == stopped
    assert _leftovers(watched) == []
    check(cli("-C", str(project), "verify"), OK)


def test_a_rerun_waits_for_the_git_init_a_killed_edit_left_running(cli, tmp_path: Path,
                                                                  _worlds) -> None:
    """Bug (a timed kill of `edit`, once in CI): SIGKILL ends patchctl but not the git it
    started, in a group of its own; the rerun found the work tree's repository created
    but not yet filled by the killed run's `git init`, still running, and refused it ("git
    cannot read the repository of the edit work tree"). Here that `git init` is slow on
    purpose: patchctl is killed while it runs, and the rerun waits for it, then makes the
    work tree."""
    real_git = shutil.which("git")
    assert real_git
    started = tmp_path / "init-started"
    slow = tmp_path / "bin/git"
    slow.parent.mkdir()
    slow.write_text(
        "#!/bin/sh\n"
        "# git init that creates the repository's directory, then takes its time to fill it\n"
        'for arg; do [ "$arg" = init ] && init=1; last=$arg; done\n'
        'if [ -n "$init" ]; then mkdir -p "$last/.git"; : > "$STARTED"; sleep 0.5; fi\n'
        f'exec {shlex.quote(real_git)} "$@"\n')
    slow.chmod(0o755)
    (up, patches), _ = _worlds
    project, argv, watched = _edit(tmp_path, cli, up, patches)
    old = _state(watched)
    proc = _killer(project, argv, 0, env={"STARTED": str(started),
                                          "PATH": f"{slow.parent}{os.pathsep}{os.environ['PATH']}"})
    deadline = time.monotonic() + 30
    while not started.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.01)
    proc.kill()
    proc.communicate()
    r = cli("-C", str(project), *argv)
    check(r, OK)
    assert _state(watched) == old  # edit writes no stack file
    assert (project / ".patchctl/edit/state.json").is_file()
    check(cli("-C", str(project), "verify"), OK)


def test_a_lock_file_naming_a_dead_pid_is_no_lock(cli, tmp_path: Path, _worlds) -> None:
    """A lock file left by a process that no longer exists (its pid reused or gone) does
    not block: only a live holder of the lock counts."""
    (up, patches), _ = _worlds
    project, argv, _ = _import(tmp_path, cli, up, patches)
    lock = project / ".patchctl/lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("999999999\n")
    check(cli("-C", str(project), *argv), OK)


def test_a_writer_clears_what_a_killed_one_left_beside_the_stack(cli, tmp_path: Path,
                                                                 _worlds) -> None:
    """Bug: a writer killed after staging its copy of stack/ left `.stack.patchctl-new-*`
    beside it until some later command rewrote the stack; a run that then wrote nothing
    (refresh with no edit, rebase-pin to the pin it is at) left it there for good."""
    (up, patches), _ = _worlds
    project = make_project(tmp_path / "p", up, patches)
    staged = project / ".stack.patchctl-new-killed"
    staged.mkdir()
    (staged / "series").write_text("half-written\n")
    check(cli("-C", str(project), "refresh"), USAGE, "nothing to refresh")
    assert not staged.exists()


def test_kill_harness_counts() -> None:
    """Runs last in this module: the default suite made at least 100 kill trials in all."""
    ran = {n: c for n, c in TRIALS.items()}
    if len(ran) < len(SCENARIOS):
        pytest.skip("only part of the kill harness ran")
    print(f"KILL-TRIALS total {sum(ran.values())}: {ran}")
    assert sum(ran.values()) >= 100, ran



# -- release build (slow: each trial is a real worker build) ---------------------------------


@pytest.mark.slow
@needs(*LIBRARIES)
def test_kill_release_build(tmp_path: Path) -> None:
    """`release build` killed before the archive is renamed into --out leaves no archive
    there; killed after, the archive is whole and byte-identical to an unkilled build's
    (the build is reproducible). Bug: a kill between writing and renaming left a partial
    `.<archive>.XXXX.tmp` in --out for good; the next write now removes it."""
    from tests.test_release import HAVE_TOOLS, make_checkout, tool_env

    if not HAVE_TOOLS:
        pytest.skip("cmake and ninja are needed")
    home = tmp_path / "home"
    home.mkdir()
    env = tool_env(home)
    with system_config_off(GIT_CONFIG_GLOBAL=env["GIT_CONFIG_GLOBAL"]):
        checkout = make_checkout(tmp_path / "checkout")
    tree = tmp_path / "tree"
    subprocess.run([sys.executable, "-m", "patchctl", "-C", str(checkout), "apply", "--into",
                    str(tree)], env=env, check=True, capture_output=True)

    def build(n: int, out: Path, delay: float = 0.0) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, str(KILLER), str(n), "-C", str(checkout), "release", "build",
                "--tree", str(tree), "--upstream-target", "tiny", "--out", str(out)]
        proc = subprocess.Popen(argv, env={**env, "KILLER_SIGNAL": "SIGKILL"}, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if delay:
            time.sleep(delay)
            proc.kill()
        out_text, err = proc.communicate()
        return subprocess.CompletedProcess(argv, proc.returncode, out_text, err)

    started = time.monotonic()
    ref = build(0, tmp_path / "ref")
    elapsed = time.monotonic() - started
    assert ref.returncode == 0, ref.stderr
    points = int(ref.stderr.rsplit("KILLER-COUNT ", 1)[1].split()[0])
    (archive,) = (tmp_path / "ref").iterdir()
    new = archive.read_bytes()
    outcomes = []
    out = tmp_path / "out"  # one --out for every trial: each run finds what the last left
    for n, delay in ((points - 1, 0.0), (0, elapsed / 3), (points, 0.0)):
        run = build(n, out, delay)
        assert run.returncode == -signal.SIGKILL, run.stderr
        files = sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) \
            if out.exists() else []
        assert files in ([], [archive.name]), files
        if files:
            assert (out / archive.name).read_bytes() == new
        outcomes.append("new" if files else "old")
    # the last run removed the temp file the first kill left (its writer is dead)
    assert sorted(p.name for p in out.iterdir()) == [archive.name]
    TRIALS["release-build"] = len(outcomes)
    print(f"KILL-TRIALS release-build: {len(outcomes)} killed: {outcomes}")
    assert outcomes[0] == "old" and outcomes[2] == "new"


def test_a_write_removes_the_temp_file_a_killed_writer_left(tmp_path: Path) -> None:
    """Bug: SIGKILL between an atomic write and its rename left `.NAME.XXXX.tmp` beside the
    file for good (seen in `release build --out`); the next write of NAME removes the temp
    files of writers that are gone, and keeps a live writer's."""
    from patchctl import fsutil

    target = tmp_path / "stack.lock"
    dead = tmp_path / ".stack.lock.999999999.abcd.tmp"
    live = tmp_path / f".stack.lock.{os.getpid()}.efgh.tmp"
    dead.write_text("half")
    live.write_text("in flight")
    fsutil.atomic_write(target, "new\n")
    assert target.read_text() == "new\n"
    assert not dead.exists() and live.exists()
