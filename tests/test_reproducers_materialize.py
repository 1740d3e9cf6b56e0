"""`patchctl apply --into DIR`: no-op re-runs, hand edits, and crashes at every step."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from patchctl.reproducers.materialize import manifest, read_stamp
from tests.builders import Upstream, drop_blob, make_project, make_upstream, special_file

KILLER = Path(__file__).with_name("killer.py")


def _apply(cli, project: Path, into: Path, *extra: str):
    return cli("-C", str(project), "apply", "--into", str(into), "--json", *extra)


def _complete(into: Path) -> str:
    """DIR is a whole `apply` result (its files match its stamp); returns its fingerprint."""
    assert into.is_dir(), f"{into} vanished"
    stamp = read_stamp(into)
    assert stamp is not None, f"{into} has no stamp: half-written"
    assert manifest(into) == stamp.manifest, f"{into} does not match its stamp: half-written"
    return stamp.fingerprint


def test_rerun_is_a_noop(cli, project: Path, tmp_path: Path) -> None:
    into = tmp_path / "tree"
    first = _apply(cli, project, into)
    assert first.code == 0, first.err
    assert json.loads(first.out)["unchanged"] is False
    inode, mtime = into.stat().st_ino, (into / "src/util.c").stat().st_mtime_ns
    again = _apply(cli, project, into)
    assert again.code == 0
    assert json.loads(again.out)["unchanged"] is True
    assert into.stat().st_ino == inode
    assert (into / "src/util.c").stat().st_mtime_ns == mtime


def test_hand_edited_dir_is_refused_unless_force(cli, project: Path, tmp_path: Path) -> None:
    into = tmp_path / "tree"
    assert _apply(cli, project, into).code == 0
    edited = into / "src/tiny.c"
    edited.write_text(edited.read_text() + "/* local hack */\n")
    r = _apply(cli, project, into)
    assert r.code == 2
    assert "was edited after `patchctl apply` stamped it" in r.err
    assert len(r.err.strip().splitlines()) == 1
    assert "local hack" in edited.read_text()
    forced = _apply(cli, project, into, "--force")
    assert forced.code == 0, forced.err
    assert "local hack" not in edited.read_text()
    _complete(into)


def test_foreign_dir_is_refused(cli, project: Path, tmp_path: Path) -> None:
    into = tmp_path / "tree"
    into.mkdir()
    (into / "mine.txt").write_text("keep me\n")
    r = _apply(cli, project, into)
    assert r.code == 2 and "not made by `patchctl apply`" in r.err
    assert (into / "mine.txt").read_text() == "keep me\n"


@pytest.fixture
def two_stacks(tmp_path: Path, upstream: Upstream, patches) -> tuple[Path, Path]:
    """Two projects over one upstream whose results differ (3 and 2 patches)."""
    return (make_project(tmp_path / "a", upstream, patches),
            make_project(tmp_path / "b", upstream, patches[:2]))


def _killed_apply(project: Path, into: Path, n: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(KILLER), str(n), "-C", str(project), "apply",
                           "--into", str(into)], capture_output=True, text=True, check=False)


def test_kill_at_every_step_leaves_old_or_new(cli, two_stacks, tmp_path: Path) -> None:
    """SIGKILL before each rename/replace/rmtree/exchange of `apply`: DIR is always whole.

    Regression: the swap renamed DIR away before renaming the new tree in, so a
    kill between the two left no DIR at all (now one atomic exchange).
    """
    a, b = two_stacks
    into = tmp_path / "tree"
    assert _apply(cli, b, tmp_path / "b-tree").code == 0
    assert _apply(cli, a, into).code == 0
    fps = {_complete(into), _complete(tmp_path / "b-tree")}
    target = {a: b, b: a}
    source = a
    killed = 0
    for n in range(1, 50):
        source = target[source]  # alternate, so every run really changes DIR
        before = _complete(into)
        run = _killed_apply(source, into, n)
        if run.returncode == 0:
            break  # n is past the last mutation: every point was tried
        assert run.returncode == -signal.SIGKILL, (n, run.stderr)
        killed += 1
        after = _complete(into)
        assert after in {before, *fps}, n
        # The next run recovers whatever the killed one left beside DIR.
        assert _apply(cli, source, into).code == 0
        assert _complete(into) in fps
    assert killed >= 3
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".tree.")]
    assert leftovers == []  # nothing beside DIR: the lock file lives in the cache


def test_kill_after_random_delays(two_stacks, tmp_path: Path) -> None:
    """SIGKILL `patchctl apply` as a subprocess after various delays: DIR is old or new.

    Regression: this test ended in `assert seen`, true after any run, so it could
    not fail. Now every run must leave DIR whole and equal to the old or the new
    result (never a third state), and the next run must recover what it left.
    """
    a, b = two_stacks
    into = tmp_path / "tree"
    fps = {}
    for name, project in (("a", a), ("b", b)):
        subprocess.run([sys.executable, "-m", "patchctl", "-C", str(project), "apply", "--into",
                        str(into), "--force"], check=True, capture_output=True)
        fps[name] = _complete(into)
    assert fps["a"] != fps["b"]
    for i, delay in enumerate((0.05, 0.12, 0.16, 0.19, 0.22, 0.25, 0.3, 0.4)):
        source, new = (a, fps["a"]) if i % 2 == 0 else (b, fps["b"])
        before = _complete(into)
        assert before != new
        proc = subprocess.Popen([sys.executable, "-m", "patchctl", "-C", str(source), "apply",
                                 "--into", str(into), "--force"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert _complete(into) in {before, new}, delay
        # Whatever the kill left beside DIR, the next run finishes the job.
        subprocess.run([sys.executable, "-m", "patchctl", "-C", str(source), "apply", "--into",
                        str(into), "--force"], check=True, capture_output=True)
        assert _complete(into) == new
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tree.")] == []


# -- DIRs that must not be replaced, links, modes, special files -----------------------------


def test_into_the_project_or_the_upstream_is_refused(cli, project: Path, upstream: Upstream,
                                                     tmp_path: Path) -> None:
    """Regression: `apply --into . --force` replaced the whole project, stack/ and .git too."""
    from patchctl.model.stackwrite import snapshot

    before = snapshot(project)
    for into, what in ((project, "the project"), (tmp_path, "the project"),
                       (project / "stack", "the stack"), (upstream.path, "the upstream")):
        r = _apply(cli, project, into, "--force", "--upstream", str(upstream.path))
        assert r.code == 2, (into, r.err)
        assert f"would replace {what}" in r.err and len(r.err.strip().splitlines()) == 1
    assert snapshot(project) == before
    assert (upstream.path / ".git/HEAD").exists()


def test_into_a_folder_inside_the_stack_or_git_is_refused(cli, project: Path,
                                                         upstream: Upstream) -> None:
    """`export --force stack/patches` and `apply --into
    stack/patches --force` replaced the patches with their output; `.git/x` was accepted
    too. One rule for every verb that replaces a directory."""
    from patchctl.model.stackwrite import snapshot

    before = snapshot(project / "stack")
    for inside, what in ((project / "stack/patches", "the stack"),
                         (project / ".git/x", "the project's .git")):
        for args in (("apply", "--into", str(inside), "--upstream", str(upstream.path)),
                     ("export", "--format", "quilt", str(inside))):
            r = cli("-C", str(project), *args, "--force")
            assert r.code == 2, (args, r.err)
            assert f"inside {what}" in r.err or f"would replace {what}" in r.err, r.err
            assert len(r.err.strip().splitlines()) == 1
    assert snapshot(project / "stack") == before
    assert not (project / ".git/x").exists()


def test_a_symlink_dir_is_followed(cli, project: Path, tmp_path: Path) -> None:
    """Regression: a symlink DIR was replaced by a real directory, and a dangling
    `.DIR.patchctl-new-*` was left while it printed "written". Now the link is followed
    (its target replaced, the link kept) and the output says so."""
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    r = cli("-C", str(project), "apply", "--into", str(link))
    assert r.code == 0, r.err
    assert f"{link} -> {real}: written" in r.out
    assert link.is_symlink() and os.readlink(link) == str(real)
    _complete(real)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_result_mode_follows_the_umask(cli, project: Path, tmp_path: Path) -> None:
    """Regression: the result was always mode 0700."""
    old = os.umask(0o022)
    try:
        assert _apply(cli, project, tmp_path / "tree").code == 0
    finally:
        os.umask(old)
    assert (tmp_path / "tree").stat().st_mode & 0o777 == 0o755


@pytest.mark.parametrize("kind", ["fifo", "socket"])
def test_special_file_in_a_stamped_dir(cli, project: Path, tmp_path: Path, kind: str) -> None:
    """Regression: a FIFO in a stamped DIR made `apply` block forever (the manifest read
    it); a socket gave a traceback. Now refused with one line; --force replaces DIR."""
    into = tmp_path / "tree"
    assert _apply(cli, project, into).code == 0
    with special_file(into / "src" / "special", kind) as special:
        r = subprocess.run([sys.executable, "-m", "patchctl", "-C", str(project), "apply",
                            "--into", str(into)], capture_output=True, text=True, timeout=120,
                           check=False)
        assert r.returncode == 2, r.stderr
        assert f"{special} is a " in r.stderr and "Traceback" not in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
        forced = _apply(cli, project, into, "--force")
        assert forced.code == 0, forced.err
        assert not os.path.lexists(special)
        _complete(into)


# -- an upstream that lacks some blobs ------------------------------------------


def _lacking_docs(tmp_path: Path, patches) -> Path:
    """A project on an upstream that lacks the blobs of docs/page0000.md and page0001.md
    (a snapshot, a pruned partial clone); the stack touches neither."""
    up = make_upstream(tmp_path / "up", n_docs=2)
    for path in ("docs/page0000.md", "docs/page0001.md"):
        drop_blob(up, path)
    return make_project(tmp_path / "project", up, patches)


def _names_the_missing_docs(r) -> None:
    assert r.code == 2 and r.err.count("\n") == 1 and "Traceback" not in r.err, r.err
    assert "the upstream lacks the contents of 2 files to write: docs/page0000.md, " \
        "docs/page0001.md" in r.err, r.err
    assert "pass --exclude 'docs/**' to leave them out" in r.err and "sha1" not in r.err


def test_apply_names_the_files_an_upstream_lacks_and_the_exclude(cli, tmp_path: Path,
                                                                  patches) -> None:
    """On an upstream lacking some blobs, `apply --into` stopped with git's raw
    "unable to read sha1 file of docs/..." (exit 3); it names the files and the
    --exclude that leaves them out, and writes nothing."""
    project = _lacking_docs(tmp_path, patches)
    into = tmp_path / "tree"
    for extra in ((), ("--commits",)):
        _names_the_missing_docs(cli("-C", str(project), "apply", "--into", str(into), *extra))
        assert not into.exists()
    r = _apply(cli, project, into, "--exclude", "docs/**")
    assert r.code == 0, r.err
    assert _complete(into) and (into / "src/util.c").is_file() and not (into / "docs").exists()


def test_reproduce_names_the_files_an_upstream_lacks_and_the_exclude(cli, tmp_path: Path,
                                                                      patches) -> None:
    """`reproduce` on an upstream lacking some blobs stopped with git's raw
    "unable to read sha1 file of ..." when it wrote the source tree; it names the files
    and the --exclude to pass, as apply does (before any build)."""
    import shutil

    if not (shutil.which("cmake") and shutil.which("ninja")):
        pytest.skip("reproduce looks for cmake and ninja first")
    project = _lacking_docs(tmp_path, patches)
    (project / "reproducers/square").mkdir(parents=True)
    (project / "reproducers/square/CMakeLists.txt").write_text("project(square C)\n")
    _names_the_missing_docs(cli("-C", str(project), "reproduce", "1"))


def test_apply_on_a_partial_clone_that_cannot_fetch_offers_no_exclude(
        cli, tmp_path: Path, upstream: Upstream) -> None:
    """A blobless clone whose promisor remote is gone lacks every file (with a
    stack that changes none: otherwise that patch fails first); leaving them all out with
    --exclude is no answer, so only an upstream that has them is offered."""
    from tests.builders import git

    git(tmp_path, "clone", "-q", "--bare", "--filter=blob:none", f"file://{upstream.path}",
        "partial.git")
    git(tmp_path / "partial.git", "remote", "set-url", "origin", str(tmp_path / "gone"))
    project = make_project(tmp_path / "project", upstream, [])
    r = cli("-C", str(project), "apply", "--into", str(tmp_path / "tree"), "--upstream",
            str(tmp_path / "partial.git"))
    assert r.code == 2 and r.err.count("\n") == 1, r.err
    assert "lacks the contents of every file to write (5: CMakeLists.txt, README.md, " \
        "include/tiny.h, and 2 more)" in r.err, r.err
    assert "--exclude" not in r.err and "an --upstream that has them" in r.err
    assert not (tmp_path / "tree").exists()


def test_a_pin_name_with_a_newline_is_stamped_and_read_back(cli, project: Path,
                                                            tmp_path: Path) -> None:
    """The stamp copied the pin name unescaped, so the next `apply --into`
    refused its own stamp as not TOML."""
    pin = project / "stack/upstream.toml"
    pin.write_text(pin.read_text().replace('name = "', 'name = "up\\nstream\\"', 1))
    assert cli("-C", str(project), "lock").code == 0
    into = tmp_path / "tree"
    first = _apply(cli, project, into)
    assert first.code == 0, first.err
    stamp = read_stamp(into)
    assert stamp is not None and stamp.name == 'up\nstream"tiny'
    again = _apply(cli, project, into)
    assert again.code == 0, again.err
    assert json.loads(again.out)["unchanged"] is True


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(), patches=st.lists(st.text(min_size=1), max_size=3),
       exclude=st.lists(st.text(min_size=1), max_size=2))
def test_property_text_values_round_trip_through_the_stamp(tmp_path: Path, name: str,
                                                           patches: list[str],
                                                           exclude: list[str]) -> None:
    """Any text in the stamp's values reads back as it was written."""
    from patchctl import fsutil
    from patchctl.reproducers.materialize import STAMP, Stamp

    stamp = Stamp(name=name, pin="a" * 40, fingerprint="f" * 64, tree="b" * 40,
                  manifest="c" * 64, patches=tuple(patches), exclude=tuple(exclude))
    fsutil.atomic_write(tmp_path / STAMP, stamp.render())
    assert read_stamp(tmp_path) == stamp
    assert len(stamp.render().splitlines()) == 9 + bool(exclude)  # a line per key
