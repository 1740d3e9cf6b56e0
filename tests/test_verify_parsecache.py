"""The parse cache: an unchanged patch's summary is read back, anything else is parsed again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from patchctl.model.lint import lint_patch
from patchctl.model.patchfile import read_patch
from patchctl.verify import parsecache
from patchctl.verify.parsecache import ParseCache, summarize


def _all(cache: ParseCache, project: Path):
    patches = sorted((project / "stack/patches").iterdir())
    return [cache.read(p, name=p.name, strip=1) for p in patches]


def test_cached_patches_equal_parsed_ones(project: Path, tmp_path: Path) -> None:
    first = ParseCache(project / "stack", tmp_path / "c")
    cold = _all(first, project)
    assert first.changed
    first.save()
    again = ParseCache(project / "stack", tmp_path / "c")
    warm = _all(again, project)
    assert not again.changed  # every patch came from the cache
    fresh = [summarize(read_patch(Path(p.path), name=p.name)) for p in cold]
    assert warm == cold == fresh
    assert [p.patch() for p in warm] == [read_patch(Path(p.path), name=p.name) for p in cold]


def test_a_patch_whose_stat_is_kept_is_not_read_again(project: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A warm verify opened, read and hashed every patch file (2,000 of them) only to find
    each in the cache. A patch whose stat (size, mtime, ctime, inode, device) is the one the
    cache kept is not read; one whose stat changed is read again."""
    from patchctl.model import patchfile

    monkeypatch.setattr(parsecache, "RACY_NS", 0)  # the fixture wrote the patches just now
    read: list[str] = []
    patch_bytes = patchfile.patch_bytes
    monkeypatch.setattr(patchfile, "patch_bytes", lambda p: read.append(p.name) or patch_bytes(p))
    first = ParseCache(project / "stack", tmp_path / "c")
    cold = _all(first, project)
    first.save()
    assert len(read) == len(cold)
    read.clear()
    again = ParseCache(project / "stack", tmp_path / "c")
    assert _all(again, project) == cold and read == [] and not again.changed
    path = sorted((project / "stack/patches").iterdir())[0]
    path.write_text(path.read_text().replace("Upstream-Status: Pending",
                                             "Upstream-Status: Denied"))
    third = ParseCache(project / "stack", tmp_path / "c")
    assert third.read(path, name=path.name, strip=1).upstream_status == "Denied"
    assert read == [path.name]


def test_a_patch_changed_just_before_it_was_read_keeps_no_stat(project: Path,
                                                               tmp_path: Path) -> None:
    """git's racy-git case: a file rewritten at the same size within one timestamp tick of
    the read (or of 2 s on FAT) can keep its stat. A file changed within RACY_NS of the
    read keeps no stat in the cache, so it is read and hashed again next time; one changed
    before that keeps it."""
    path = sorted((project / "stack/patches").iterdir())[0]
    cache = ParseCache(project / "stack", tmp_path / "c")
    cache.read(path, name=path.name, strip=1)  # written by the fixture just now
    assert cache.used[path.name][2] is None
    st = path.stat()
    later = max(st.st_mtime_ns, st.st_ctime_ns) + parsecache.RACY_NS + 1
    assert not parsecache._settled(st, now=later - 2)
    assert parsecache._settled(st, now=later)
    cache.save()
    data = json.loads(cache.path.read_text())
    assert data["patches"][path.name][2] is None


def test_cached_lint_findings_come_back_and_symlinks_lint_again(tmp_path: Path) -> None:
    """Lint findings are cached as lint_patch gives them without upstream symlinks; a
    patch whose path is, or lies under, one of upstream's symlinks is linted again with
    them (a warm run must not lose the `symlink` error)."""
    stack = tmp_path / "stack"
    (stack / "patches").mkdir(parents=True)
    path = stack / "patches" / "0001-x.patch"
    path.write_text("Subject: x\n\nScope: other/y.c\n\n"
                    "--- a/linked/new.c\n+++ b/linked/new.c\n@@ -0,0 +1 @@\n+x\n")
    cache = ParseCache(stack, tmp_path / "c")
    cold = cache.read(path, name=path.name, strip=1)
    cache.save()
    warm = ParseCache(stack, tmp_path / "c").read(path, name=path.name, strip=1)
    assert warm == cold and {f.code for f in warm.findings} >= {"scope", "missing-trailer"}
    for links in (frozenset(), frozenset({"other"}), frozenset({"linked"}),
                  frozenset({"linked/new.c"})):
        assert warm.lint(links) == lint_patch(read_patch(path), upstream_symlinks=links)
    assert warm.touches(frozenset({"linked"})) and not warm.touches(frozenset({"link"}))
    assert any(f.code == "symlink" for f in warm.lint(frozenset({"linked"})))


def test_a_changed_patch_or_parser_is_parsed_again(project: Path, tmp_path: Path) -> None:
    cache = ParseCache(project / "stack", tmp_path / "c")
    _all(cache, project)
    cache.save()
    path = sorted((project / "stack/patches").iterdir())[0]
    path.write_text(path.read_text().replace("Upstream-Status: Pending",
                                             "Upstream-Status: Denied"))
    again = ParseCache(project / "stack", tmp_path / "c")
    patch = again.read(path, name=path.name, strip=1)
    assert again.changed and patch.upstream_status == "Denied"
    data = json.loads(again.path.read_text())
    data["key"] = "an older parser"
    again.path.write_text(json.dumps(data))
    assert ParseCache(project / "stack", tmp_path / "c").entries == {}


def test_a_damaged_cache_costs_only_time(project: Path, tmp_path: Path) -> None:
    cache = ParseCache(project / "stack", tmp_path / "c")
    _all(cache, project)
    cache.save()
    data = json.loads(cache.path.read_text())
    for entry in data["patches"].values():
        entry[3][1] = "garbage"
    cache.path.write_text(json.dumps(data))
    again = ParseCache(project / "stack", tmp_path / "c")
    assert _all(again, project) == _all(ParseCache(project / "stack", tmp_path / "d"), project)
    cache.path.write_text("{not json")
    assert ParseCache(project / "stack", tmp_path / "c").entries == {}


@pytest.mark.parametrize("settled", [False, True])
@pytest.mark.parametrize("damaged", [0, "", None, {}, "x"])
def test_an_entry_with_damaged_findings_is_parsed_again(project: Path, tmp_path: Path,
                                                         damaged: object, settled: bool,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A summary's findings field that was not a list, but empty or falsy ("" or {}), was
    trusted as "no findings"; every such entry is parsed again now, whether the patch is
    known by its stat or by its bytes."""
    if settled:
        monkeypatch.setattr(parsecache, "RACY_NS", 0)
    cache = ParseCache(project / "stack", tmp_path / "c")
    fresh = _all(cache, project)
    cache.save()
    data = json.loads(cache.path.read_text())
    for entry in data["patches"].values():
        assert (entry[2] is not None) is settled
        entry[3][7] = damaged
    cache.path.write_text(json.dumps(data))
    again = ParseCache(project / "stack", tmp_path / "c")
    assert _all(again, project) == fresh and again.changed


def test_verify_reports_the_same_cold_and_warm(cli, project: Path) -> None:
    runs = []
    for _ in range(2):
        r = cli("-C", str(project), "verify", "--json")
        assert r.code == 0, r.err
        data = json.loads(r.out)
        data.pop("seconds")
        runs.append((data.pop("git_calls"), data))
    assert runs[0][1] == runs[1][1]
    # the second run reads the pin tree's symlinks from the cache (no ls-tree) and copies
    # the index git wrote for the pin's tree (no read-tree)
    assert runs[0][0] == runs[1][0] + 2


@pytest.mark.parametrize("what", ["fifo", "zero", "patches-list"])
def test_a_cache_that_is_no_file_of_ours_is_a_miss(project: Path, tmp_path: Path,
                                                    what: str) -> None:
    """The parse cache (and the split verify keeps beside it) was read with no look at what
    the path held: a FIFO there hung verify, a symlink to /dev/zero read without end, and a
    `patches` that was a list was a traceback. Each is a miss, written anew. (Read in a
    child with a deadline and 1 GiB of memory, so the old behaviour fails, not hangs.)"""
    import resource
    import subprocess
    import sys

    from patchctl.verify import partition

    cache = ParseCache(project / "stack", tmp_path / "c")
    fresh = _all(cache, project)
    cache.save()
    plan = partition.plan_file(project / "stack")  # in the user's cache (isolated per test)
    plan.parent.mkdir(parents=True, exist_ok=True)
    for path in (cache.path, plan):
        path.unlink(missing_ok=True)
        if what == "fifo":
            os.mkfifo(path)
        elif what == "zero":
            path.symlink_to("/dev/zero")
        else:
            path.write_text(json.dumps({"key": cache.key, "patches": [1]}))
    child = ("import sys; from pathlib import Path; from patchctl.verify import parsecache, "
             "partition; s = Path(sys.argv[1]); c = parsecache.ParseCache(s, Path(sys.argv[2]))"
             "; print(c.entries, partition.last_plan(s))")

    def small() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    r = subprocess.run([sys.executable, "-c", child, str(project / "stack"), str(tmp_path / "c")],
                       capture_output=True, text=True, timeout=60, check=False, preexec_fn=small)
    assert (r.returncode, r.stdout) == (0, "{} None\n"), r.stderr
    again = ParseCache(project / "stack", tmp_path / "c")
    assert _all(again, project) == fresh
    again.save()
    assert cache.path.is_file() and not cache.path.is_symlink()


def test_a_warm_verify_loads_neither_the_linter_nor_the_parser_before_git(project: Path) -> None:
    """A verify whose patches all came from the parse cache still imported the linter and its
    glob matcher, and the patch parser before it started git: start-up work on every run
    for code that only a changed patch needs. Now it loads neither the linter nor the
    matcher; nor the parser, when every patch file's stat is the one the cache kept (it
    reads no patch file then), nor the TOML parser (the lock is the one found current)."""
    probe = ("import json, sys, threading\n"
             "from patchctl.cli import main\n"
             "from patchctl.verify import parsecache\n"
             "parsecache.RACY_NS = 0\n"  # the patches were written just now

             "from patchctl.gitrepo import index\n"
             "seen = {}\n"
             "start = index.RoundTrip.__init__\n"
             "def spy(self, *a, **k):\n"
             "    seen.setdefault('at_git', 'patchctl.model.patchfile' in sys.modules)\n"
             "    start(self, *a, **k)\n"
             "index.RoundTrip.__init__ = spy\n"
             "try:\n"
             f"    main(['-C', {str(project)!r}, 'verify'])\n"
             "except SystemExit as e:\n"
             "    seen['exit'] = e.code\n"
             "print('LOADED', json.dumps([seen['exit'], seen.get('at_git'), *(\n"
             "    m in sys.modules for m in ('patchctl.model.lint', 'patchctl.globs',\n"
             "                               'patchctl.model.patchfile', 'tomllib'))]))")
    runs = [subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                           check=True).stdout.split("LOADED ", 1)[1] for _ in range(2)]
    cold, warm = (json.loads(r) for r in runs)
    assert cold[:5] == [0, False, True, True, True]  # the first parses and lints every patch
    assert warm == [0, False, False, False, False, False]
