"""Proving a large stack in parts at once: which patches must stay together, and that a
split verify runs reports exactly what one run of the whole series reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from patchctl.model.patchfile import parse_patch
from patchctl.verify import partition
from patchctl.verify.parsecache import summarize
from tests.builders import (
    Upstream,
    commit_all,
    doc_patch_text,
    git,
    make_project,
    many_patches,
    write,
)

# -- which patches a path links ------------------------------------------------------------


def _same(group_of: list[int], *pairs: tuple[int, int]) -> list[bool]:
    return [group_of[a] == group_of[b] for a, b in pairs]


def test_in_place_changes_are_linked_only_through_a_path_they_share() -> None:
    g = partition.groups([(["src/a.c"], True), (["src/b.c"], True), (["src/a.c"], True),
                          (["include/a.h", "src/b.c"], True), (["docs/x.md"], True)])
    assert _same(g, (0, 2), (1, 3), (0, 1), (0, 4), (1, 4)) == [True, True, False, False,
                                                                 False]


@pytest.mark.parametrize(("created", "changed"), [
    ("d/new.c", "d"),  # a file turning into a directory
    ("d", "d/old.c"),  # a directory turning into a file
    ("a/b/new.c", "a/b"),
])
def test_a_created_path_links_the_paths_above_and_under_it(created: str, changed: str) -> None:
    g = partition.groups([([created], False), ([changed], True), (["other.c"], True)])
    assert _same(g, (0, 1), (0, 2)) == [True, False]
    # the same when the in-place change comes first in the series
    g = partition.groups([([changed], True), ([created], False)])
    assert g[0] == g[1]


def test_new_files_side_by_side_and_renames() -> None:
    g = partition.groups([(["src/new1.c"], False), (["src/new2.c"], False),
                          (["src/old.c", "src/moved.c"], False), (["src/moved.c"], True),
                          (["src/old.c"], True), (["src/keep.c"], True)])
    assert _same(g, (0, 1), (2, 3), (2, 4), (0, 5), (2, 5)) == [False, True, True, False,
                                                                False]


def test_paths_are_compared_case_folded() -> None:
    g = partition.groups([(["Src/Tiny.c"], True), (["src/tiny.c"], True), (["src/b.c"], True)])
    assert _same(g, (0, 1), (0, 2)) == [True, False]


def test_split_keeps_groups_whole_in_series_order_and_balanced() -> None:
    group_of = [0, 1, 2, 0, 3, 4, 5, 1]
    bins = partition.split(group_of, [1] * 8, 2)
    assert sorted(i for b in bins for i in b) == list(range(8))
    assert all(b == sorted(b) for b in bins)
    assert partition.holds(bins, group_of)
    assert sorted(len(b) for b in bins) == [4, 4]
    assert len(partition.split(group_of, [1] * 8, 4)) == 4
    assert partition.split([0, 0, 0], [1, 1, 1], 2) == []  # one group: nothing to split
    assert partition.split([0, 1, 2], [1, 1, 1], 1) == []


def test_split_weighs_patches() -> None:
    bins = partition.split([0, 1, 2, 3], [10, 1, 1, 1], 2)
    assert sorted(bins) == [[0], [1, 2, 3]]


@pytest.mark.parametrize(("bins", "ok"), [
    ([[0, 2], [1, 3]], True),
    ([[0, 1, 2], [3]], True),
    ([[0, 1], [2, 3]], False),  # group 0 (patches 0 and 2) across two bins
    ([[0, 2], [1]], False),  # patch 3 missing
    ([[0, 2], [1, 3, 3]], False),  # twice
    ([[2, 0], [1, 3]], False),  # out of series order
    ([[0, 2], [1, 3, 4]], False),  # a patch the series no longer has
    ([[0, 1, 2, 3]], False),  # one bin is no split
])
def test_holds(bins: list[list[int]], ok: bool) -> None:
    assert partition.holds(bins, [0, 1, 0, 2]) is ok


def test_cores_is_at_least_one_and_at_most_the_cap() -> None:
    assert 1 <= partition.cores() <= partition.MAX_PARTS


def _diff(header: str, hunk: str = "@@ -1,2 +1,2 @@\n a\n-b\n+c\n") -> str:
    return f"Subject: [PATCH] x\n\nwhy\n---\n{header}{hunk}"


@pytest.mark.parametrize(("text", "in_place"), [
    (_diff("diff --git a/f b/f\n--- a/f\n+++ b/f\n"), True),
    (_diff("--- a/f\n+++ b/f\n"), True),  # quilt style
    (_diff("diff --git a/f b/f\nnew file mode 100644\n--- /dev/null\n+++ b/f\n",
           "@@ -0,0 +1 @@\n+c\n"), False),
    (_diff("diff --git a/f b/f\ndeleted file mode 100644\n--- a/f\n+++ /dev/null\n",
           "@@ -1 +0,0 @@\n-c\n"), False),
    (_diff("diff --git a/f b/g\nsimilarity index 90%\nrename from f\nrename to g\n"
           "--- a/f\n+++ b/g\n"), False),
    (_diff("diff --git a/f b/f\nold mode 100644\nnew mode 100755\n", ""), False),
    (_diff("--- a/f\n+++ b/f\n", "@@ -0,0 +1 @@\n+c\n"), False),  # plain: maybe a new file
])
def test_summary_says_whether_a_patch_only_changes_files_in_place(text: str,
                                                                   in_place: bool) -> None:
    patch = parse_patch(text.encode(), path=Path("0001-x.patch"), name="0001-x.patch")
    assert summarize(patch).in_place is in_place


# -- verify in parts, against real git -----------------------------------------------------


@pytest.fixture
def in_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Split stacks of any size in two, whatever this machine's core count."""
    monkeypatch.setattr(partition, "MIN_PATCHES", 2)
    monkeypatch.setattr(partition, "cores", lambda: 2)


def _verify(cli, project: Path, upstream: Upstream, *extra: str) -> tuple[int, dict]:
    r = cli("-C", str(project), "verify", "--upstream", str(upstream.path), "--json", *extra)
    return r.code, json.loads(r.out)


def _facts(report: dict) -> list[dict]:
    return [{k: p[k] for k in ("name", "grade", "offsets", "failure", "findings", "ok")}
            for p in report["patches"]]


def _lines(i: int, *, shift: int = 0) -> str:
    return "".join(f"<!-- {n} -->\n" for n in range(shift)) + "".join(
        f"file {i} line {n}\n" for n in range(1, 21))


def _line_patch(k: int, i: int, line: int, new: str) -> tuple[str, str]:
    """Patch ``k``: line ``line`` of src/fNN.txt becomes ``new``, with 3 lines of context."""
    path = f"src/f{i:02d}.txt"
    body = "".join(f" file {i} line {n}\n" for n in range(line - 3, line))
    body += f"-file {i} line {line}\n+{new}\n"
    body += "".join(f" file {i} line {n}\n" for n in range(line + 1, line + 4))
    return f"{k:04d}-f{i:02d}.patch", (
        f"From: Dev <dev@downstream.invalid>\nSubject: [PATCH] f{i} : line {line}\n\nWhy.\n\n"
        f"Concern: f{i}-{k}\nUpstream-Status: Pending\nScope: {path}\n---\n"
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
        f"@@ -{line - 3},7 +{line - 3},7 @@\n{body}")


def _one_run(cli, project: Path, upstream: Upstream, monkeypatch) -> dict:
    with monkeypatch.context() as m:
        m.setattr(partition, "MIN_PATCHES", 10**9)
        _, data = _verify(cli, project, upstream)
    assert data["parts"] == 1
    return data


def test_a_large_stack_is_proven_in_parts_from_its_second_run(cli, big: Path,
                                                              docs_upstream: Upstream,
                                                              in_parts, monkeypatch) -> None:
    code, first = _verify(cli, big, docs_upstream)
    assert code == 0 and first["parts"] == 1  # nothing known of the stack yet: one run
    plan = partition.last_plan(big / "stack")
    assert plan is not None and len(plan) == 2
    # patch 50 edits page 0 again, after patch 1: the two stay in one part
    assert next(b for b in plan if 0 in b) == next(b for b in plan if 49 in b)

    code, second = _verify(cli, big, docs_upstream)
    assert code == 0, second
    assert (second["mode"], second["parts"], second["ok"]) == ("batched", 2, True)
    assert second["reversed_tree"] == second["pin_tree"]
    assert _facts(second) == _facts(first)
    text = cli("-C", str(big), "verify", "--upstream", str(docs_upstream.path)).out
    assert "50 patches, batched in 2 parts at once" in text


def test_offsets_and_warnings_are_those_of_one_run(cli, tmp_path: Path, in_parts,
                                                   monkeypatch) -> None:
    """Offsets and git's whitespace warnings in both parts go to the right patches."""
    up = Upstream(tmp_path / "up", {})
    up.path.mkdir()
    git(up.path, "init", "-q", "-b", "master")
    write(up.path, {f"src/f{i:02d}.txt": _lines(i) for i in range(12)})
    commit_all(up.path, "files (#1)")
    write(up.path, {f"src/f{i:02d}.txt": _lines(i, shift=2) for i in (2, 9)})
    pin = commit_all(up.path, "two lines above files 2 and 9 (#2)")
    patches = [_line_patch(k, k - 1, 10, f"file {k - 1} line 10, patched") for k in range(1, 12)]
    patches.append(_line_patch(12, 0, 15, "file 0 line 15, patched"))
    name, text = patches[5]
    patches[5] = (name, text.replace(", patched\n", ", patched \n"))  # git warns of the blank
    project = make_project(tmp_path / "p", up, patches, pin=pin)
    whole = _one_run(cli, project, up, monkeypatch)
    _verify(cli, project, up)  # keeps the split
    code, split = _verify(cli, project, up)
    assert code == 0 and split["parts"] == 2
    assert _facts(split) == _facts(whole)
    graded = {p["name"]: p for p in split["patches"]}
    assert graded["0003-f02.patch"]["grade"] == "offset"
    assert [(o["file"], o["offset"]) for o in graded["0010-f09.patch"]["offsets"]] == [
        ("src/f09.txt", 2)]
    assert [p["grade"] for p in split["patches"]].count("offset") == 2
    (warned,) = [f for f in graded[name]["findings"] if f["code"] == "whitespace"]
    assert patches[5][1].split("\n")[warned["line"] - 1] == "+file 5 line 10, patched "
    plan = partition.last_plan(project / "stack")
    assert plan is not None and {0, 11} <= set(next(b for b in plan if 0 in b))


def test_a_stale_split_is_not_trusted(cli, tmp_path: Path, in_parts, monkeypatch) -> None:
    """Patches 1 and 2 make the same change to page 0: in series the second cannot apply.
    A split kept from an older stack that puts them in different parts would prove each
    on its own; verify must see that the split no longer holds."""
    from tests.builders import make_upstream

    up = make_upstream(tmp_path / "up", n_docs=4)
    same = doc_patch_text(1, 0, "Text 0.", "Text 0, patched.", subject="docs : page 0")
    patches = [("0001-a.patch", same), ("0002-b.patch", same.replace("Patch 1", "Patch 2")),
               ("0003-c.patch", doc_patch_text(3, 1, "Text 1.", "Text 1, p.", subject="p1")),
               ("0004-d.patch", doc_patch_text(4, 2, "Text 2.", "Text 2, p.", subject="p2"))]
    project = make_project(tmp_path / "p", up, patches)
    whole = _one_run(cli, project, up, monkeypatch)
    assert [p["grade"] for p in whole["patches"]] == ["exact", "failed", "skipped", "skipped"]
    plan = partition.plan_file(project / "stack")
    plan.parent.mkdir(parents=True, exist_ok=True)
    plan.write_text("0 2\n1 3\n")
    code, split = _verify(cli, project, up)
    assert code == 1
    assert _facts(split) == _facts(whole)
    assert partition.last_plan(project / "stack") != [[0, 2], [1, 3]]  # replaced


def test_a_split_kept_for_the_same_patches_is_not_worked_out_again(
        cli, big: Path, docs_upstream: Upstream, in_parts, monkeypatch) -> None:
    """Every verify worked the split out again from every patch's paths (2,000 patches:
    ~10 ms) though the patches were those it was kept for. A split keyed to the very
    patches read is taken as it is; one whose parts were changed since is not trusted."""
    calls: list[int] = []
    groups = partition.groups
    monkeypatch.setattr(partition, "groups", lambda p: calls.append(len(p)) or groups(p))
    code, first = _verify(cli, big, docs_upstream)  # keeps the split, with its key
    assert code == 0 and calls == [50]
    code, second = _verify(cli, big, docs_upstream)
    assert (code, second["parts"], calls) == (0, 2, [50])  # not worked out again
    assert _facts(second) == _facts(first)
    kept = partition.plan_file(big / "stack")
    key, one, two = kept.read_text().splitlines()
    assert key.startswith("# ")
    a, b = one.split(), two.split()
    kept.write_text(f"{key}\n{' '.join(a + b[:1])}\n{' '.join(b[1:])}\n")  # a patch moved
    code, third = _verify(cli, big, docs_upstream)
    assert code == 0 and calls == [50, 50] and _facts(third) == _facts(first)
    assert kept.read_text().splitlines() == [key, one, two]  # the split worked out again


@pytest.mark.parametrize("plan", ["not a plan\n", "0 1\n2 x\n", "0 1 2 3\n", ""])
def test_an_unusable_kept_split_is_ignored(cli, big: Path, docs_upstream: Upstream, in_parts,
                                           plan: str) -> None:
    """Garbage, one part or nothing: proven in one run, and the split this run finds is
    kept."""
    kept = partition.plan_file(big / "stack")
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_text(plan)
    code, data = _verify(cli, big, docs_upstream)
    assert code == 0 and data["ok"] and data["parts"] == 1
    assert len(partition.last_plan(big / "stack") or []) == 2


def test_a_patch_failing_in_one_part_is_named(cli, tmp_path: Path, docs_upstream: Upstream,
                                              in_parts, monkeypatch) -> None:
    patches = many_patches(50)
    project = make_project(tmp_path / "p", docs_upstream, patches)
    _verify(cli, project, docs_upstream)  # keeps the split
    name, text = patches[30]
    (project / "stack/patches" / name).write_text(text.replace("-Text 30.", "-Text 31."))
    code, split = _verify(cli, project, docs_upstream)
    whole = _one_run(cli, project, docs_upstream, monkeypatch)
    assert code == 1 and split["mode"] == "per-patch" and split["parts"] == 1
    assert _facts(split) == _facts(whole)
    failed = [p["name"] for p in split["patches"] if p["grade"] == "failed"]
    assert failed == [name]
