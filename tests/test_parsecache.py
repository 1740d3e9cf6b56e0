"""The parse cache: an unchanged patch is read back, anything else is parsed again."""

from __future__ import annotations

import json
from pathlib import Path

from patchctl.parsecache import ParseCache
from patchctl.patchfile import read_patch


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
    fresh = [read_patch(p.path, name=p.name) for p in cold]
    assert warm == cold == fresh
    assert [p.digest for p in warm] == [p.digest for p in fresh]


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
        entry["files"] = "garbage"
    cache.path.write_text(json.dumps(data))
    again = ParseCache(project / "stack", tmp_path / "c")
    assert _all(again, project) == _all(ParseCache(project / "stack", tmp_path / "d"), project)
    cache.path.write_text("{not json")
    assert ParseCache(project / "stack", tmp_path / "c").entries == {}


def test_verify_reports_the_same_cold_and_warm(cli, project: Path) -> None:
    runs = []
    for _ in range(2):
        r = cli("-C", str(project), "verify", "--json")
        assert r.code == 0, r.err
        data = json.loads(r.out)
        data.pop("seconds")
        runs.append(data)
    assert runs[0] == runs[1]
