"""``patchctl burden`` on odd and hostile input: its cache read back as untrusted (wrong
types, a FIFO, a device, a huge file: a miss, computed and written anew, never a traceback
or a hang) and keyed by the upstream; shallow upstreams; windows that reach back before
1973 or absurdly far; root commits inside the window; patches that do not match the pin;
a patch of thousands of hunks in one file."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from patchctl.burden.cache import BurdenCache
from patchctl.burden.engine import burden
from patchctl.model.stack import find_stack
from tests.builders import (
    Upstream,
    commit_all,
    format_patch,
    git,
    make_project,
    system_config_off,
    write,
)

ROOT_DATE = "2025-01-01T00:00:00Z"
PIN_DATE = "2025-12-16T00:00:00Z"  # 90 days: since 2025-09-17


def _commit(repo: Path, files: dict[str, str], message: str, date: str) -> str:
    write(repo, files)
    return commit_all(repo, message, date=date)


def _lines(prefix: str, n: int, changed: dict[int, str] | None = None) -> str:
    return "".join((changed or {}).get(i, f"{prefix} line {i}") + "\n" for i in range(1, n + 1))


def small_upstream(root: Path) -> Upstream:
    """a.c and b.c from a root of 2025-01-01; line 9 of b.c changed in March (before a
    90-day window), a.c:5 and b.c:3 in December, then the pin (2025-12-16)."""
    up = root / "up"
    up.mkdir()
    git(up, "init", "-q", "-b", "master")
    c = {"root": _commit(up, {"a.c": _lines("a", 20), "b.c": _lines("b", 10)}, "root (#1)",
                         ROOT_DATE)}
    b = {9: "b line 9 old"}
    c["old"] = _commit(up, {"b.c": _lines("b", 10, b)}, "change b9 (#2)", "2025-03-01T00:00:00Z")
    c["a5"] = _commit(up, {"a.c": _lines("a", 20, {5: "a line 5 changed"})}, "change a5 (#10)",
                      "2025-12-01T00:00:00Z")
    b[3] = "b line 3 changed"
    c["b3"] = _commit(up, {"b.c": _lines("b", 10, b)}, "change b3 (#11)", "2025-12-15T00:00:00Z")
    c["base"] = _commit(up, {"a.c": _lines("a", 20, {5: "a line 5 changed"}) + "x\n"},
                        "pin (#12)", PIN_DATE)
    return Upstream(up, c)


def small_patches(up: Upstream, scratch: Path) -> list[tuple[str, str]]:
    """0001 edits a.c:5 (stands on a.c 2..8: a5 and the root), 0002 b.c:3 (b3, the root)."""
    out = []
    for name, path, old, new in (("0001-a5.patch", "a.c", "a line 5 changed", "a line 5 p1"),
                                 ("0002-b3.patch", "b.c", "b line 3 changed", "b line 3 p2")):
        def edit(w: Path, path: str = path, old: str = old, new: str = new) -> None:
            (w / path).write_text((w / path).read_text().replace(old, new))

        base = git(scratch, "rev-parse", "HEAD").strip() if scratch.exists() else \
            up.commits["base"]
        out.append((name, format_patch(up, base, edit, subject=name[5:-6], scratch=scratch,
                                       trailers={"Concern": name[5:-6],
                                                 "Upstream-Status": "Pending"})))
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Upstream, list[tuple[str, str]]]:
    root = tmp_path_factory.mktemp("burden-cache")
    with system_config_off():
        up = small_upstream(root)
        return up, small_patches(up, root / "scratch")


@pytest.fixture
def project(built, tmp_path: Path) -> Path:
    up, patches = built
    return make_project(tmp_path / "proj", up, patches)


def _stored(cache: Path) -> Path:
    (found,) = (cache / "parsed").glob("*.burden")
    return found


def _damage(how: str) -> Callable[[dict], None]:
    def edit(d: dict) -> None:
        if how == "int":
            d["commits"] = {c: 5 for c in d["commits"]}
        elif how == "badtime":
            d["commits"] = {c: ["s", "x"] for c in d["commits"]}
        elif how == "pathlist":
            d["paths"][next(iter(d["paths"]))] = [["a"]]
        elif how == "rowtypes":
            d["rows"] = {k: ["1", None, {}, 0, 0, 0, "c", 0] for k in d["rows"]}
        elif how == "top":
            d.clear()
            d["key"] = 7
    return edit


@pytest.mark.parametrize("how", ["int", "badtime", "pathlist", "rowtypes", "top"])
def test_a_cache_of_the_wrong_shape_is_a_miss_and_written_anew(built, project, cli,
                                                                tmp_path: Path, monkeypatch,
                                                                how: str) -> None:
    """A cache file whose key matched but whose commits, paths or rows had other types than
    the ones written (a number for a commit, a list for a path) ended `burden` and
    `upstream-status` in a Python traceback until the file was found and deleted."""
    up, _ = built
    cache = tmp_path / "cache"
    monkeypatch.setenv("PATCHCTL_CACHE_DIR", str(cache))
    good = cli("-C", str(project), "burden", "--upstream", str(up.path))
    assert good.code == 0, good.err
    stored = _stored(cache)
    clean = json.loads(stored.read_text())
    for command in ("burden", "upstream-status"):
        data = json.loads(json.dumps(clean))
        _damage(how)(data)
        stored.write_text(json.dumps(data))
        r = cli("-C", str(project), command, "--upstream", str(up.path))
        assert r.code == 0, r.err
        assert "Traceback" not in r.err and "burden not shown" not in r.err
        if command == "burden":
            assert r.out.splitlines()[1:] == good.out.splitlines()[1:]  # the first: timings
        assert json.loads(stored.read_text())["rows"] == clean["rows"]  # written anew


def test_a_fifo_or_a_device_at_the_cache_path_is_a_miss(built, project, tmp_path: Path) -> None:
    """A FIFO at the cache path hung `burden` and `upstream-status` for ever; a symlink to
    /dev/zero made them read without end (gigabytes in seconds). Each is now a miss: the
    row is computed and a regular file takes the path's place."""
    up, _ = built
    cache = tmp_path / "cache"
    good = burden(find_stack(project), up.path, cache_dir=cache)
    stored = _stored(cache)
    stored.unlink()
    os.mkfifo(stored)
    env = {**os.environ, "PATCHCTL_CACHE_DIR": str(cache)}
    for command in ("burden", "upstream-status"):
        r = subprocess.run([sys.executable, "-m", "patchctl", "-C", str(project), command,
                            "--upstream", str(up.path)], env=env, capture_output=True,
                           text=True, timeout=60, check=False)
        assert r.returncode == 0, r.stderr
        assert stored.is_file() and not stored.is_symlink()  # replaced by the cache
        stored.unlink()
        os.mkfifo(stored)
    stored.unlink()
    stored.symlink_to("/dev/zero")

    def small_memory() -> None:  # a read without end fails fast instead of filling the host
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    r = subprocess.run([sys.executable, "-m", "patchctl", "-C", str(project), "burden",
                        "--upstream", str(up.path), "--json"], env=env, capture_output=True,
                       text=True, timeout=60, check=False, preexec_fn=small_memory)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["total"] == good.total
    assert stored.is_file() and not stored.is_symlink()


def test_a_cache_file_that_is_a_symlink_or_too_large_is_not_read(built, project,
                                                                  tmp_path: Path) -> None:
    """What patchctl wrote itself is never a symlink, and never larger than a cap: a symlink
    to a good cache, and a huge file, are both misses."""
    up, _ = built
    cache = tmp_path / "cache"
    burden(find_stack(project), up.path, cache_dir=cache)
    stored = _stored(cache)
    elsewhere = tmp_path / "elsewhere.burden"
    stored.rename(elsewhere)
    stored.symlink_to(elsewhere)
    assert burden(find_stack(project), up.path, cache_dir=cache).cached == 0
    assert not stored.is_symlink()
    assert burden(find_stack(project), up.path, cache_dir=cache).cached == 2
    with stored.open("r+b") as f:  # sparse: no disk taken
        f.truncate(1 << 30)
    assert burden(find_stack(project), up.path, cache_dir=cache).cached == 0
    assert stored.stat().st_size < 1 << 20


def test_the_upstream_is_part_of_the_key(built, project, tmp_path: Path) -> None:
    """The key named the pin and the window but not the upstream: the numbers of one clone
    (a shallow one gave 0 commits) were read back for another. A shallow clone whose history
    reaches back past the window counts as a full clone does, but keeps its own rows."""
    up, _ = built
    cache = tmp_path / "cache"
    shallow = tmp_path / "shallow.git"
    git(tmp_path, "clone", "-q", "--bare", "--depth", "4", f"file://{up.path}", str(shallow))
    assert (shallow / "shallow").read_text().strip() == up.commits["old"]  # before the window
    first = burden(find_stack(project), shallow, cache_dir=cache)
    assert first.cached == 0
    full = burden(find_stack(project), up.path, cache_dir=cache)
    assert full.cached == 0  # another upstream: blamed again
    assert full.total == first.total == 2
    assert burden(find_stack(project), up.path, cache_dir=cache).cached == 2
    git(shallow, "fetch", "-q", "--unshallow")  # the same clone deepened: its key changes
    assert burden(find_stack(project), shallow, cache_dir=cache).cached == 0


def test_the_cache_takes_its_key_from_the_engine(tmp_path: Path) -> None:
    """The cache imported the engine to hash the engine's code (each imported the other):
    now the engine hands the cache its whole key, and another key is another cache."""
    a = BurdenCache(tmp_path, ["k", 1], cache_dir=tmp_path / "c")
    b = BurdenCache(tmp_path, ["k", 2], cache_dir=tmp_path / "c")
    assert a.key != b.key and a.path == b.path
    import ast

    from patchctl.burden import cache

    tree = ast.parse(Path(cache.__file__ or "").read_text(encoding="utf-8"))
    named = {f"{n.module}.{a.name}" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
             for a in n.names}
    assert not any(name.startswith("patchctl.burden.") for name in named), named


def test_a_shallow_upstream_cut_inside_the_window_is_refused(built, project, cli,
                                                            tmp_path: Path) -> None:
    """A `--depth 1` upstream (CI's default checkout) gave 0 commits for every patch, said
    nothing, and the cache kept the zeros for the full clone: now it is one line, exit 2,
    that says the clone is shallow and how to deepen it; upstream-status notes it and
    reports the statuses."""
    up, _ = built
    shallow = tmp_path / "shallow.git"
    git(tmp_path, "clone", "-q", "--bare", "--depth", "1", f"file://{up.path}", str(shallow))
    r = cli("-C", str(project), "burden", "--upstream", str(shallow))
    assert r.code == 2 and r.out == ""
    (line,) = r.err.splitlines()
    assert "is a shallow clone" in line and up.commits["base"][:12] in line
    assert "--unshallow" in line
    r = cli("-C", str(project), "upstream-status", "--upstream", str(shallow))
    assert r.code == 0 and "0001-a5.patch" in r.out
    assert "burden not shown: upstream" in r.err and "shallow clone" in r.err
    # a longer window reaches the cut of a deeper clone too
    deeper = tmp_path / "deeper.git"
    git(tmp_path, "clone", "-q", "--bare", "--depth", "4", f"file://{up.path}", str(deeper))
    assert cli("-C", str(project), "burden", "--upstream", str(deeper)).code == 0
    r = cli("-C", str(project), "burden", "--upstream", str(deeper), "--days", "300")
    assert r.code == 2 and up.commits["old"][:12] in r.err


def _commits(cli, project: Path, up: Upstream, *args: str) -> list[list[str]]:
    r = cli("-C", str(project), "burden", "--upstream", str(up.path), "--json", *args)
    assert r.code == 0, r.err
    return [p["commits"] for p in json.loads(r.out)["patches"]]


@pytest.mark.parametrize("days", ["20000", "36500", "100000"])
def test_a_window_that_starts_before_1973_counts_everything(built, project, cli,
                                                           days: str) -> None:
    """git reads `--since=@N` as a timestamp only from nine digits: a window that started
    before 1973-03-03 was misread and every patch reported 0 commits, though a shorter
    window found some."""
    up, _ = built
    c = up.commits
    everything = [[c["a5"], c["root"]], [c["b3"], c["root"]]]
    assert _commits(cli, project, up, "--days", "400") == everything
    assert _commits(cli, project, up, "--days", days) == everything


def test_the_window_edge_is_where_git_starts_reading_seconds(built) -> None:
    """Either side of 1973-03-03T09:46:40Z (the first nine-digit timestamp), the window
    counts the same commits: blamed without --since before it, with it from there."""
    from patchctl.gitrepo import blame_recent

    up, _ = built
    for since in (99_999_999, 100_000_000):
        found = blame_recent(up.path, up.commits["base"], {"b.c": [(1, 10)]}, since=since)
        assert set(found.lines["b.c"].values()) == {up.commits[x] for x in ("root", "old", "b3")}


def test_a_root_commit_inside_the_window_counts(built, project, cli) -> None:
    """git blame treats a root commit as a boundary unless given --root, and every boundary
    was skipped: lines last changed by the root commit cost nothing though the root was
    inside the window. The committer time alone decides now."""
    up, _ = built
    c = up.commits
    assert _commits(cli, project, up, "--days", "400") == [[c["a5"], c["root"]],
                                                           [c["b3"], c["root"]]]
    assert _commits(cli, project, up) == [[c["a5"]], [c["b3"]]]  # 90 days: not the root


@pytest.mark.parametrize("command", ["burden", "upstream-status"])
def test_an_absurd_window_is_a_usage_error(project, cli, command: str) -> None:
    """`--days 99999999999999` overflowed the date arithmetic into an OSError, reported as
    an environment failure (exit 3) with a hint about a path."""
    r = cli("-C", str(project), command, "--days", "99999999999999")
    assert r.code == 2
    assert "--days" in r.err and "100000" in r.err and "check the path" not in r.err


def _bad_patch(name: str, path: str, header: str) -> tuple[str, str]:
    return name, ("From: X <x@y>\nSubject: [PATCH] bad\n\nUpstream-Status: Pending\n"
                  f"Concern: bad\nScope: *\n---\ndiff --git a/{path} b/{path}\n--- a/{path}\n"
                  f"+++ b/{path}\n{header}\n x\n-y\n+z\n w\n")


@pytest.mark.parametrize(("path", "header", "why"), [
    ("b.c", "@@ -50,3 +50,3 @@", "stands on lines 50-52 of b.c, which has 10 lines at the pin"),
    ("nope.c", "@@ -1,3 +1,3 @@", "stands on nope.c, which is no file at the pin"),
    ("b.c", "@@ -0,3 +0,3 @@", "stands on lines 0-2 of b.c, which has 10 lines at the pin"),
])
def test_a_patch_that_does_not_match_the_pin_is_not_counted(built, cli, tmp_path: Path,
                                                             path: str, header: str,
                                                             why: str) -> None:
    """One hunk past a file's end, on a file the pin lacks, or at line 0 failed the single
    blame of that file, and `burden` ended with git's raw command line (exit 3) and no row
    for any patch. A measure reports the rest (exit 0) and names the patch and hunk."""
    up, patches = built
    bad = _bad_patch("0002-bad.patch", path, header)
    project = make_project(tmp_path / "proj", up, [patches[0], bad, patches[1]], lock=False)
    r = cli("-C", str(project), "burden", "--upstream", str(up.path))
    assert r.code == 0, r.err
    note = next(x for x in r.out.splitlines() if x.startswith("0002-bad.patch: not counted"))
    assert f"its hunk `{header}` (patch line 11) {why}" in note
    assert "git -c" not in r.out + r.err
    assert r.out.splitlines()[-1].startswith("stack: 2 distinct upstream commits in 90 days "
                                             "(since 2025-09-17) on the lines of 2 of 3 patches")
    doc = json.loads(cli("-C", str(project), "burden", "--upstream", str(up.path), "--json",
                         "--hunks").out)
    assert [p["commits"] for p in doc["patches"]] == [[up.commits["a5"]], [],
                                                      [up.commits["b3"]]]
    assert why in doc["patches"][1]["skipped"] and doc["patches"][0]["skipped"] == ""
    assert [h["commits"] for h in doc["hunks"] if h["patch"] == 2] == [[]]
    r = cli("-C", str(project), "upstream-status", "--upstream", str(up.path))
    assert r.code == 0 and "burden: not counted: its hunk" in r.out


def test_thousands_of_hunks_in_one_file_keep_the_command_line_bounded(tmp_path: Path) -> None:
    """Every range of a file went on one git command line: a patch of 200,000 one-line
    hunks ended in "Argument list too long". Here 12,000 hunks are blamed under the
    smallest argument limit Linux allows (128 KiB, from a small stack limit)."""
    up = tmp_path / "up"
    up.mkdir()
    git(up, "init", "-q", "-b", "master")
    n = 24_000
    base = _commit(up, {"big.c": _lines("big", n)}, "root", PIN_DATE)
    write(up, {"big.c": _lines("big", n, {i: f"big line {i} x" for i in range(1, n + 1, 2)})})
    diff = git(up, "diff", "-U0")
    git(up, "checkout", "-q", "big.c")
    text = ("From: X <x@y>\nSubject: [PATCH] big\n\nUpstream-Status: Pending\nConcern: big\n"
            "Scope: big.c\n---\n" + diff)
    project = make_project(tmp_path / "proj", Upstream(up, {"base": base}),
                           [("0001-big.patch", text)], lock=False)

    def small_stack() -> None:  # ARG_MAX is a quarter of it, and never below 128 KiB
        resource.setrlimit(resource.RLIMIT_STACK, (256 << 10, resource.RLIM_INFINITY))

    r = subprocess.run([sys.executable, "-m", "patchctl", "-C", str(project), "burden",
                        "--upstream", str(up), "--json", "--days", "1"], capture_output=True,
                       text=True, timeout=300, check=False, preexec_fn=small_stack,
                       env={**os.environ, "PATCHCTL_CACHE_DIR": str(tmp_path / "cache")})
    assert r.returncode == 0, r.stderr
    (patch,) = json.loads(r.stdout)["patches"]
    assert patch["commits"] == [base] and patch["lines"] == n // 2


def test_bounded_joins_the_closest_ranges() -> None:
    """The ranges past the limit are joined where the gaps between them are smallest."""
    from patchctl.gitrepo.blame import bounded

    assert bounded([(1, 1), (3, 3), (10, 12), (14, 14), (100, 100)], limit=5) == \
        [(1, 1), (3, 3), (10, 12), (14, 14), (100, 100)]
    assert bounded([(10, 12), (1, 1), (3, 3), (14, 14), (100, 100)], limit=3) == \
        [(1, 3), (10, 14), (100, 100)]
    assert bounded([(n, n) for n in range(1, 400_000, 2)], limit=1000) == [(1, 399_999)]
