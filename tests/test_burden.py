"""``patchctl burden``: upstream commits of the days before the pin on the lines each patch
stands on, blamed at the pin (patchctl/burden/, patchctl/gitrepo/blame.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from patchctl.burden import lines as burden_lines
from patchctl.burden.engine import burden
from patchctl.burden.render import SCHEMA
from patchctl.model.patchfile import parse_patch
from patchctl.model.stack import Stack, find_stack, parse_pin
from patchctl.untrusted import validate
from tests.builders import (
    Upstream,
    commit_all,
    format_patch,
    git,
    make_project,
    system_config_off,
    write,
)

PIN_DATE = "2026-06-01T12:00:00Z"  # the window of 90 days starts 2026-03-03T12:00:00Z


def _lines(prefix: str, n: int, changed: dict[int, str] | None = None) -> str:
    changed = changed or {}
    return "".join(changed.get(i, f"{prefix}{i}") + "\n" for i in range(1, n + 1))


def _commit(repo: Path, files: dict[str, str], message: str, date: str) -> str:
    write(repo, files)
    return commit_all(repo, message, date=date)


def _upstream(root: Path) -> Upstream:
    """lib/a.c, lib/b.c and tests/t.c, then one commit per changed line, dated: B (line 5
    of a.c) before the window, C (a.c:10), G (a.c:20), H (a.c:28), D (b.c:3) and E
    (tests/t.c:2) inside it; the pin only touches README.md."""
    up = root / "up"
    up.mkdir()
    git(up, "init", "-q", "-b", "master")
    a: dict[int, str] = {}
    c = {"A": _commit(up, {"lib/a.c": _lines("a", 30), "lib/b.c": _lines("b", 12),
                           "tests/t.c": _lines("t", 8), "README.md": "tiny\n"},
                      "initial (#1)", "2025-01-01T00:00:00Z")}
    for label, path, line, date in (("B", "lib/a.c", 5, "2026-01-15T00:00:00Z"),
                                    ("C", "lib/a.c", 10, "2026-05-01T00:00:00Z"),
                                    ("G", "lib/a.c", 20, "2026-05-12T00:00:00Z"),
                                    ("H", "lib/a.c", 28, "2026-05-14T00:00:00Z"),
                                    ("D", "lib/b.c", 3, "2026-05-20T00:00:00Z"),
                                    ("E", "tests/t.c", 2, "2026-05-25T00:00:00Z")):
        if path == "lib/a.c":
            a[line] = f"a{line} changed by {label}"
            text = _lines("a", 30, a)
        else:
            text = _lines(path[-3], 12 if path == "lib/b.c" else 8,
                          {line: f"{path[-3]}{line} changed by {label}"})
        c[label] = _commit(up, {path: text}, f"change {label} (#{len(c) + 1})", date)
    c["base"] = _commit(up, {"README.md": "tiny, pinned\n"}, "docs : pin (#9)", PIN_DATE)
    return Upstream(up, c)


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert f"{old}\n" in text, (old, path)
    path.write_text(text.replace(f"{old}\n", f"{new}\n", 1))


def _patches(up: Upstream, scratch: Path) -> list[tuple[str, str]]:
    """0001 rewrites a.c:6 as five lines and a.c:11 (its hunk stands on 3..14: B and C);
    0002 adds a file; 0003 changes a.c:22, line 26 once 0001 is applied (it stands on the
    pin's 19..25: G, not H at 28) and b.c:4 (D); 0004 changes tests/t.c:2 (E) and b.c:6
    (D again)."""
    out = []

    def step(name: str, edit, subject: str) -> None:
        base = git(scratch, "rev-parse", "HEAD").strip() if scratch.exists() else \
            up.commits["base"]
        out.append((name, format_patch(up, base, edit, subject=subject, scratch=scratch,
                                       trailers={"Concern": name[5:-6],
                                                 "Upstream-Status": "Pending"})))

    def first(w: Path) -> None:
        _replace(w / "lib/a.c", "a6", "a6 x\na6 y\na6 z\na6 w\na6 v")
        _replace(w / "lib/a.c", "a11", "a11 changed")

    step("0001-a-six.patch", first, "a : six")
    step("0002-new-file.patch", lambda w: write(w, {"lib/new.c": _lines("n", 5)}),
         "new : file")

    def third(w: Path) -> None:
        _replace(w / "lib/a.c", "a22", "a22 changed")
        _replace(w / "lib/b.c", "b4", "b4 changed")

    step("0003-a-and-b.patch", third, "a : and b")

    def fourth(w: Path) -> None:
        _replace(w / "tests/t.c", "t2 changed by E", "t2 changed again")
        _replace(w / "lib/b.c", "b6", "b6 changed")

    step("0004-tests.patch", fourth, "tests : t2")
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Upstream, list[tuple[str, str]]]:
    root = tmp_path_factory.mktemp("burden")
    with system_config_off():
        up = _upstream(root)
        return up, _patches(up, root / "scratch")


@pytest.fixture
def project(built, tmp_path: Path) -> Path:
    up, patches = built
    return make_project(tmp_path / "proj", up, patches)


def _ids(up: Upstream, *labels: str) -> list[str]:
    return [up.commits[x] for x in labels]


def test_each_patch_counts_the_window_commits_on_the_lines_it_stands_on(built, project) -> None:
    up, _ = built
    report = burden(find_stack(project), up.path)
    by = {p.name: p for p in report.patches}
    # C changed a.c:10, inside 0001's hunk; B (a.c:5) is inside it too, but before the window
    assert by["0001-a-six.patch"].commits == _ids(up, "C")
    assert by["0002-new-file.patch"].commits == []  # an added file costs nothing
    assert by["0002-new-file.patch"].lines == 0
    # newest first; G, not H: 0003's a.c lines are 0001's post-image, followed back to the pin
    assert by["0003-a-and-b.patch"].commits == _ids(up, "D", "G")
    assert by["0004-tests.patch"].commits == _ids(up, "E", "D")
    assert report.total == 4  # D hits 0003 and 0004 and counts once
    assert sum(len(p.commits) for p in report.patches) == 5
    assert report.since.startswith("2026-03-03T12:00:00") and report.days == 90
    assert {c.id: c.subject for c in report.commits}[up.commits["G"]] == "change G (#4)"


def test_a_longer_window_reaches_older_commits(built, project) -> None:
    up, _ = built
    report = burden(find_stack(project), up.path, days=200)
    assert report.patches[0].commits == _ids(up, "C", "B")
    assert burden(find_stack(project), up.path, days=0).total == 0


def test_lines_are_followed_back_through_earlier_patches(built) -> None:
    """Measured by hand, each patch's own line numbers were blamed at the pin: for a file an
    earlier patch changed, they point at other lines (0003 named H, at a.c:28, not G)."""
    _, patches = built
    parsed = [parse_patch(t.encode(), path=Path(n), name=n) for n, t in patches]
    written = burden_lines.writers(parsed)
    stands = burden_lines.standing(2, parsed[2], written)
    assert sorted(stands["lib/a.c"]) == [19, 20, 21, 22, 23, 24, 25]
    assert sorted(stands["lib/b.c"]) == [1, 2, 3, 4, 5, 6, 7]
    # its own numbers are 0001's post-image: 23..29
    own = sorted(burden_lines.old_side(parsed[2].files[0].hunks))
    assert own == [23, 24, 25, 26, 27, 28, 29]
    assert burden_lines.standing(1, parsed[1], written) == {}  # an added file
    # 0001's added lines lead to no pin line
    assert burden_lines.to_pin("lib/a.c", 7, 2, written) is None
    assert burden_lines.to_pin("lib/a.c", 11, 2, written) == ("lib/a.c", 7)


def test_library_and_test_lines_split_by_the_pin_files_test_paths(built, project) -> None:
    up, _ = built
    fourth = burden(find_stack(project), up.path).patches[3]
    assert (fourth.library_added, fourth.library_removed) == (1, 1)
    assert (fourth.test_added, fourth.test_removed) == (1, 1)
    first = burden(find_stack(project), up.path).patches[0]
    assert (first.library_added, first.library_removed, first.tests) == (6, 2, 0)
    pin = project / "stack" / "upstream.toml"
    pin.write_text(pin.read_text() + 'test_paths = ["lib/b"]\n')
    fourth = burden(find_stack(project), up.path).patches[3]
    assert (fourth.library, fourth.tests) == (2, 2)  # tests/t.c is library now, b.c a test
    assert (fourth.test_added, fourth.test_removed) == (1, 1)
    assert burden(find_stack(project), up.path).patches[0].tests == 0
    assert burden(find_stack(project), up.path).test_paths == ["lib/b"]


def test_test_paths_in_the_pin_file() -> None:
    base = 'name = "x"\nurl = "u"\ncommit = "' + "a" * 40 + '"\n'
    assert parse_pin(base).tests == ("tests/",)
    assert parse_pin(base).test_paths is None
    pin = parse_pin(base + 'test_paths = ["tests/", "ggml/tests/"]\n')
    assert pin.tests == ("tests/", "ggml/tests/") and pin.is_test("ggml/tests/x.c")
    assert not pin.is_test("src/tests.c")
    assert parse_pin(pin.to_toml()) == pin  # rebase-pin and init write it back
    assert "test_paths" not in parse_pin(base).to_toml()
    from patchctl.errors import StackError

    for bad in ('"tests/"', "[1]", '["/abs"]', '["../up"]', '[""]'):
        with pytest.raises(StackError, match="test_paths"):
            parse_pin(base + f"test_paths = {bad}\n")


def test_a_second_run_reads_every_row_from_the_cache(built, project, tmp_path: Path) -> None:
    up, _ = built
    cache = tmp_path / "cache"
    first = burden(find_stack(project), up.path, cache_dir=cache)
    # the git dir, the pin's date, is it shallow; the pin files' lengths (ls-tree, cat-file);
    # a.c, b.c, tests/t.c blamed once each
    assert first.cached == 0 and first.git_calls == 3 + 2 + 3
    again = burden(find_stack(project), up.path, cache_dir=cache)
    assert again.cached == 4 and again.git_calls == 3
    assert again.to_dict() | {"seconds": 0, "cached": 0, "git_calls": 0} == \
        first.to_dict() | {"seconds": 0, "cached": 0, "git_calls": 0}
    assert len(list((cache / "parsed").glob("*.burden"))) == 1
    # another window is another key
    assert burden(find_stack(project), up.path, days=200, cache_dir=cache).cached == 0


def test_a_changed_patch_is_blamed_again_with_the_patches_that_follow_on_its_files(
        built, project, tmp_path: Path) -> None:
    up, _ = built
    cache = tmp_path / "cache"
    burden(find_stack(project), up.path, cache_dir=cache)
    last = project / "stack" / "patches" / "0004-tests.patch"
    last.write_text(last.read_text().replace("Why this change", "Why this other change"))
    assert burden(find_stack(project), up.path, cache_dir=cache).cached == 3
    first = project / "stack" / "patches" / "0001-a-six.patch"
    first.write_text(first.read_text().replace("Why this change", "Why this other change"))
    # 0003 stands on a.c after 0001, and 0004 on b.c after 0003: only 0002 is kept
    report = burden(find_stack(project), up.path, cache_dir=cache)
    assert report.cached == 1
    assert report.patches[2].commits == _ids(up, "D", "G")


def test_a_damaged_cache_costs_only_time(built, project, tmp_path: Path) -> None:
    up, _ = built
    cache = tmp_path / "cache"
    good = burden(find_stack(project), up.path, cache_dir=cache)
    (stored,) = (cache / "parsed").glob("*.burden")
    data = json.loads(stored.read_text())
    for entry in data["rows"].values():
        entry[6] = ["f" * 40]  # a commit the cache does not know
    stored.write_text(json.dumps(data))
    assert [p.commits for p in burden(find_stack(project), up.path, cache_dir=cache).patches] \
        == [p.commits for p in good.patches]
    stored.write_text("{not json")
    assert burden(find_stack(project), up.path, cache_dir=cache).total == good.total


def test_json_validates_against_its_schema(built, project, cli) -> None:
    up, _ = built
    r = cli("-C", str(project), "burden", "--upstream", str(up.path), "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    validate(doc, SCHEMA)
    assert doc["schema"] == "patchctl.burden/1" and doc["total"] == 4
    assert [p["commits"] for p in doc["patches"]][3] == _ids(up, "E", "D")
    assert doc["patches"][3]["library"] == 2 and doc["patches"][3]["tests"] == 2
    doc["patches"][0]["commits"] = ["not a commit"]
    from patchctl.untrusted import BadDocument

    with pytest.raises(BadDocument):
        validate(doc, SCHEMA)


def test_the_stack_counts_each_file_once(built, project) -> None:
    """The stack line summed the patches' file counts (139 for a stack of 127 files): a file
    two patches change counts once, as the stack's commits do."""
    up, _ = built
    report = burden(find_stack(project), up.path)
    assert sum(p.files for p in report.patches) == 6
    assert report.files == 4  # lib/a.c and lib/b.c each change in two patches
    assert report.to_dict()["files"] == 4
    assert burden(find_stack(project), up.path).files == 4  # from the cache, too


def test_the_cli_renders_a_table_and_the_commits(built, project, cli) -> None:
    up, _ = built
    r = cli("-C", str(project), "burden", "--upstream", str(up.path))
    assert r.code == 0, r.err
    out = r.out.splitlines()
    assert out[1].split() == ["#", "patch", "files", "library", "±", "tests", "±", "commits",
                              "(90", "d)"]
    assert out[2].split() == ["1", "0001-a-six.patch", "1", "8", "(+6", "-2)", "0", "(+0",
                              "-0)", "1"]
    assert out[-1].startswith("stack: 4 distinct upstream commits in 90 days (since "
                              "2026-03-03) on the lines of 4 patches; 4 distinct files")
    assert "change G" not in r.out
    r = cli("-C", str(project), "burden", "--upstream", str(up.path), "-v", "--days", "200")
    assert f"     {up.commits['B'][:12]} change B (#2)" in r.out.splitlines()
    assert cli("-C", str(project), "burden", "--upstream", str(up.path), "--days",
               "-1").code == 2


def test_a_pin_the_upstream_lacks_is_one_error(built, project, cli, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    r = cli("-C", str(project), "burden", "--upstream", str(other))
    assert r.code == 2 and "is not in upstream" in r.err


def test_stack_is_read_as_the_series_says(built, project) -> None:
    """A patch left out of the series is no part of the burden."""
    up, _ = built
    series = project / "stack" / "series"
    series.write_text(series.read_text().replace("0003-a-and-b.patch\n", ""))
    report = burden(Stack(project / "stack"), up.path)
    assert [p.name for p in report.patches] == ["0001-a-six.patch", "0002-new-file.patch",
                                                "0004-tests.patch"]
    assert report.patches[2].commits == _ids(up, "E", "D")


def test_upstream_status_gives_each_patch_its_burden_in_a_line(built, project, cli) -> None:
    up, _ = built
    r = cli("-C", str(project), "upstream-status", "--upstream", str(up.path))
    assert r.code == 0, r.err
    lines = [ln.strip() for ln in r.out.splitlines() if "burden:" in ln]
    assert lines == [
        "burden: 1 upstream commit of 90 days before the pin on its lines, 1 file "
        "(library ±8, tests ±0)",
        "burden: 0 upstream commits of 90 days before the pin on its lines, 1 file "
        "(library ±5, tests ±0)",
        "burden: 2 upstream commits of 90 days before the pin on its lines, 2 files "
        "(library ±4, tests ±0)",
        "burden: 2 upstream commits of 90 days before the pin on its lines, 2 files "
        "(library ±2, tests ±2)"]
    doc = json.loads(cli("-C", str(project), "upstream-status", "--upstream", str(up.path),
                         "--days", "200", "--json").out)
    assert doc["patches"][0]["burden"] == {"days": 200, "commits": _ids(up, "C", "B"),
                                           "files": 1, "library": 8, "tests": 0}


def test_upstream_status_fetches_nothing_for_the_burden(built, project, cli) -> None:
    """Without --upstream and with the pin's URL not in the cache, no burden is shown and
    nothing is fetched (the URL does not resolve)."""
    pin = project / "stack" / "upstream.toml"
    text = pin.read_text()
    url = next(ln for ln in text.splitlines() if ln.startswith("url = "))
    pin.write_text(text.replace(url, 'url = "https://example.invalid/tiny.git"'))
    r = cli("-C", str(project), "upstream-status")
    assert r.code == 0, r.err
    assert "burden" not in r.out
    assert all(p["burden"] is None for p in json.loads(
        cli("-C", str(project), "upstream-status", "--json").out)["patches"])


def test_the_canary_summary_shows_the_churn_from_upstream_status(built, project, cli,
                                                                 tmp_path: Path) -> None:
    up, patches = built
    status = cli("-C", str(project), "upstream-status", "--upstream", str(up.path), "--json")
    (tmp_path / "status.json").write_text(status.out)
    pin = up.commits["base"]
    report = {"schema": "patchctl.rebase/1", "old": pin, "new": pin, "commits": 0,
              "patches": [{"index": i, "name": n, "grade": "exact"}
                          for i, (n, _) in enumerate(patches, start=1)]}
    (tmp_path / "report.json").write_text(json.dumps(report))
    r = cli("-C", str(project), "ci", "summary", str(tmp_path / "report.json"), "--status",
            str(tmp_path / "status.json"))
    assert r.code == 0, r.err
    section = r.out.split("### Upstream churn on the patches' lines\n\n")[1].split("\n\n")
    assert section[0].startswith("4 distinct upstream commits of the 90 days before the pin")
    assert section[1].splitlines() == [
        "- `0001-a-six.patch`: 1 commit, 1 file, library ±8, tests ±0",
        "- `0002-new-file.patch`: 0 commits, 1 file, library ±5, tests ±0",
        "- `0003-a-and-b.patch`: 2 commits, 2 files, library ±4, tests ±0",
        "- `0004-tests.patch`: 2 commits, 2 files, library ±2, tests ±2"]
    plain = cli("-C", str(project), "ci", "summary", str(tmp_path / "report.json"))
    assert "Upstream churn" not in plain.out


def test_the_briefs_say_which_patch_upstream_churn_hits_most(built, project, cli,
                                                             tmp_path: Path) -> None:
    up, _ = built
    out = tmp_path / "briefs"
    r = cli("-C", str(project), "draft-outreach", "--series", "--upstream", str(up.path),
            "--out", str(out))
    assert r.code == 0, r.err
    first = (out / "0001-a-six.md").read_text()
    assert "- upstream churn: 1 commit(s) of the 90 days before the base on its lines " \
        "(`patchctl burden -v`)\n" in first
    series = (out / "series.md").read_text()
    assert "3. Upstream churn, most first (upstream commits of the 90 days before the base " \
        "on each patch's lines; once upstream, a patch costs none): 0003 2, 0004 2, 0001 1, " \
        "0002 0\n" in series
    rows = [ln for ln in series.splitlines() if ln.startswith("| 4 |")]
    assert rows and rows[0].endswith("| 2 |")


def test_upstream_status_reports_statuses_when_the_burden_cannot_be_had(project, cli,
                                                                        tmp_path: Path) -> None:
    """An upstream at hand that lacks the pin costs the burden lines, not the report."""
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    r = cli("-C", str(project), "upstream-status", "--upstream", str(other))
    assert r.code == 0
    assert "0001-a-six.patch" in r.out and "burden:" not in r.out
    assert "burden not shown: pin " in r.err and "is not in upstream" in r.err


def test_hunks_say_where_each_patch_burden_sits(built, project, cli) -> None:
    """--hunks: each hunk's commits, its lines followed back to the pin as the patch's are;
    a patch's commits are the union of its hunks'."""
    from patchctl.burden.engine import hunk_burden

    up, _ = built
    hunks, known = hunk_burden(find_stack(project), up.path)
    by = {(h.patch, h.path): h.commits for h in hunks}
    assert by == {(1, "lib/a.c"): _ids(up, "C"), (3, "lib/a.c"): _ids(up, "G"),
                  (3, "lib/b.c"): _ids(up, "D"), (4, "tests/t.c"): _ids(up, "E"),
                  (4, "lib/b.c"): _ids(up, "D")}  # the added file has no hunk to blame
    assert [h.source_start for h in hunks if h.patch == 3 and h.path == "lib/a.c"] == [23]
    report = burden(find_stack(project), up.path)
    for p in report.patches:
        assert set(p.commits) == {c for h in hunks if h.patch == p.index for c in h.commits}
    assert known[up.commits["G"]].subject == "change G (#4)"
    r = cli("-C", str(project), "burden", "--upstream", str(up.path), "--hunks")
    assert r.code == 0, r.err
    line = next(x for x in r.out.splitlines() if x.startswith("  3  lib/a.c:23 "))
    assert f"{up.commits['G'][:12]} change G (#4)" in line
    assert r.out.splitlines()[-1] == "5 hunks of 5 stand on commits of the window; 0 on older lines"
    doc = json.loads(cli("-C", str(project), "burden", "--upstream", str(up.path), "--hunks",
                         "--json").out)
    validate(doc, SCHEMA)
    first = doc["hunks"][0]
    assert (first["patch"], first["path"], first["commits"]) == \
        (1, "lib/a.c", _ids(up, "C"))
    assert "hunks" not in json.loads(cli("-C", str(project), "burden", "--upstream",
                                         str(up.path), "--json").out)


@pytest.mark.parametrize("source", ["--from-repo", "format-patch -M"])
def test_an_imported_rename_is_followed_to_its_old_path(built, cli, tmp_path: Path,
                                                        source: str) -> None:
    """`import` used to write a renamed file as a deletion plus a new file (from a commit
    range, and from format-patch files made with -M alike), so a later patch that edits the
    renamed file stood on "a file the stack adds" and its burden was 0. The rename is kept,
    and that patch's lines lead back to the old path at the pin."""
    up, _ = built
    fork = tmp_path / "fork"
    git(tmp_path, "clone", "-q", str(up.path), str(fork))
    git(fork, "mv", "lib/b.c", "lib/c.c")
    git(fork, "commit", "-q", "-m", "b : rename to c")
    _replace(fork / "lib/c.c", "b3 changed by D", "b3 changed again")
    git(fork, "commit", "-q", "-am", "c : line 3")
    project = tmp_path / "proj"
    project.mkdir()
    assert cli("-C", str(project), "init", "--upstream", str(up.path), "--pin",
               up.commits["base"]).code == 0
    if source == "--from-repo":
        args = ["--from-repo", str(fork), f"{up.commits['base']}..HEAD"]
    else:
        git(fork, "format-patch", "-q", "-M", "-o", str(tmp_path / "mails"), up.commits["base"])
        args = sorted(str(p) for p in (tmp_path / "mails").iterdir())
    r = cli("-C", str(project), "import", "--upstream", str(up.path), *args)
    assert r.code == 0, r.err
    stack = find_stack(project)
    renamed = stack.patches()[0]
    assert "\nrename from lib/b.c\nrename to lib/c.c\n" in renamed.text
    assert [(f.source, f.target) for f in renamed.files] == [("lib/b.c", "lib/c.c")]
    report = burden(stack, up.path)
    assert [p.commits for p in report.patches] == [[], _ids(up, "D")]
