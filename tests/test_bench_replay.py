"""bench/replay.py on a tiny downstream built here: a real upstream with two pin bumps and
a queue with a conflict, a patch that landed upstream (the maintainers dropped it) and one
whose lines upstream moved to another file. No network, no mirrors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from patchctl.model.patchfile import Hunk
from patchctl.rebase.classify import hunk_class
from tests.builders import commit_all, git, write

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import replay

D21 = " + 0"  # upstream's own edit of a line it moved: the move is no proof, the patch stops


def lines(
    prefix: str, n: int, changed: dict[int, str] | None = None, skip: range = range(0)
) -> str:
    out = []
    for i in range(n):
        if i in skip:
            continue
        body = (changed or {}).get(i, f"return {i};")
        out.append(f"int {prefix}_fn{i:02d}(void) {{ {body} }}")
    return "\n".join(out) + "\n"


def queue(
    upstream: Path, scratch: Path, base: str, edits: list[tuple[str, dict[str, str]]]
) -> dict[str, str]:
    """The patches ``edits`` (subject, files) as commits on ``base``, by format-patch."""
    git(scratch.parent, "clone", "-q", str(upstream), str(scratch))
    git(scratch, "checkout", "-q", "--detach", base)
    for subject, files in edits:
        write(scratch, files)
        commit_all(scratch, subject)
    out = scratch / "out"
    git(scratch, "format-patch", "-q", "--zero-commit", "--no-signature", "-o", str(out), base)
    return {p.name: p.read_text() for p in sorted(out.iterdir())}


def downstream_commit(repo: Path, pin: str, patches: dict[str, str], title: str) -> str:
    git(repo, "rm", "-rq", "--ignore-unmatch", "llama/patches")
    write(
        repo,
        {
            "Makefile.sync": f"UPSTREAM=x\nFETCH_HEAD={pin}\n",
            **{f"llama/patches/{n}": t for n, t in patches.items()},
        },
    )
    return commit_all(repo, title)


@pytest.fixture
def downstream(tmp_path: Path) -> tuple[Path, Path, str]:
    up = tmp_path / "upstream"
    up.mkdir()
    git(up, "init", "-q", "-b", "master")
    write(up, {"src/a.c": lines("a", 40), "src/b.c": lines("b", 30), "src/c.c": lines("c", 40)})
    a = commit_all(up, "initial")
    moved = range(15, 26)
    write(
        up,
        {
            "src/a.c": lines("a", 40, {5: "return 5 + 0;"}),
            "src/b.c": lines("b", 30, {10: "return 210;"}),  # our 'landed' patch
            "src/c.c": lines("c", 40, skip=moved),
            "src/d.c": "/* moved from c.c */\n"
            + "".join(
                f"int c_fn{i:02d}(void) {{ return {i}{D21 if i == 21 else ''}; }}\n" for i in moved
            ),
        },
    )
    b = commit_all(up, "upstream: a.c's fn05, b.c's fn10, c.c's fn15-25 moved to d.c")
    write(up, {"docs/notes.md": "notes\n"})
    c = commit_all(up, "docs")

    before = queue(
        up,
        tmp_path / "q1",
        a,
        [
            ("conflict in a", {"src/a.c": lines("a", 40, {5: "return 105;"})}),
            ("landed upstream", {"src/b.c": lines("b", 30, {10: "return 210;"})}),
            ("moved in c", {"src/c.c": lines("c", 40, {20: "return 120;"})}),
            ("clean in a", {"src/a.c": lines("a", 40, {5: "return 105;", 30: "return 130;"})}),
        ],
    )
    d_moved = "/* moved from c.c */\n" + "".join(
        f"int c_fn{i:02d}(void) {{ return {120 if i == 20 else i}{D21 if i == 21 else ''}; }}\n"
        for i in moved
    )
    ours = [
        ("conflict in a", {"src/a.c": lines("a", 40, {5: "return 105 + 0;"})}),
        ("moved in c", {"src/d.c": d_moved}),
        ("clean in a", {"src/a.c": lines("a", 40, {5: "return 105 + 0;", 30: "return 130;"})}),
    ]
    after = queue(up, tmp_path / "q2", b, ours)  # the maintainers' queue at b, and at c
    again = queue(up, tmp_path / "q3", c, ours)
    ds = tmp_path / "downstream"
    ds.mkdir()
    git(ds, "init", "-q", "-b", "main")
    downstream_commit(ds, a, before, "vendor at a")
    downstream_commit(ds, b, after, "bump to b")
    tip = downstream_commit(ds, c, again, "bump to c")
    return ds, up, tip


def test_replay_counts_stops_hand_edits_and_drops(
    downstream: tuple[Path, Path, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The replay counted a `--continue --widen-scope` (one confirmation that a resolution
    reaches a file outside Scope:) as a hand edit: the two are counted apart."""
    ds, up, tip = downstream
    monkeypatch.setenv("PATCHCTL_OLLAMA", str(ds))
    monkeypatch.setenv("PATCHCTL_LLAMA_CPP", str(up))
    assert replay.main(["--json", "--tip", tip, "--until", "2999-01-01"]) == 0
    result = json.loads(capsys.readouterr().out)
    newest, first = result["bumps"]
    assert [first["before"], first["after"], newest["before"]] == [4, 3, 3]
    # b: the conflict and the moved patch stop (upstream moved its lines and changed one:
    # no proven move; its resolution leaves its Scope: one confirmation, no hand edit); the
    # landed patch is dropped as upstream, as its maintainers dropped it.
    assert [s["patch"][5:] for s in first["stops"]] == ["conflict-in-a.patch", "moved-in-c.patch"]
    assert [s["class"] for s in first["stops"]] == ["same lines changed", "moved code"]
    assert first["check"]["to_resolve"] == first["patchctl_stops"] == 2
    assert first["hand_edits"] == 0 and first["confirmations"] == 1
    assert "--widen-scope" in first["stops"][1]["confirmations"][0]
    assert result["totals"]["confirmations"] == 1 and result["totals"]["hand_edits"] == 0
    assert first["they_dropped"] == 1
    assert list(first["drop_upstream"].values()) == ["dropped as upstream"]
    assert first["auto"]["equal"] == 1 and first["auto"]["differs"] == 0
    assert first["git_am_stops"] == 2
    # c: nothing of the queue moved upstream: no stop, every patch as theirs.
    assert newest["patchctl_stops"] == newest["git_am_stops"] == 0
    assert newest["auto"] == {
        "equal": 3,
        "differs, said so": 0,
        "differs, they changed it": 0,
        "differs": 0,
        "dropped by them": 0,
        "theirs does not apply": 0,
    }
    assert result["totals"]["patchctl_stops"] == 2 and result["totals"]["bumps"] == 2


def test_replay_skips_without_its_inputs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PATCHCTL_OLLAMA", raising=False)
    assert replay.main([]) == 0
    assert capsys.readouterr().out.startswith("bench/replay.py: skipped: set PATCHCTL_OLLAMA")


def test_an_insertion_where_upstream_inserted_is_told_from_context_drift() -> None:
    hunk = Hunk(1, 3, 1, 4, 1, (" one", " two", "+ours", " three"))

    def nowhere(line: str, path: str) -> bool:
        raise AssertionError("no distinctive line: nothing is searched")

    def cls(text: str) -> str | None:
        return hunk_class("f.c", hunk, text.splitlines(keepends=True), nowhere, creates=False)

    assert cls("one\ntwo\ntheirs\nthree\n") == "insertions at one place"
    assert cls("one\ntwo\nthree\n") is None
    assert cls("one\n2\nthree\n") == "context drift"


def _diff(repo: Path, files: dict[str, str]) -> bytes:
    """The patch that turns ``repo``'s HEAD into HEAD with ``files``, the tree left as it was."""
    write(repo, files)
    out = git(repo, "diff").encode()
    git(repo, "checkout", "-q", "--", ".")
    return out


def test_a_move_that_differs_is_told_said_so_their_rewrite_or_silent(tmp_path: Path) -> None:
    """Every automatic move whose tree was not the maintainers' counted as one "differs":
    one patchctl named (a finding), one where the maintainers rewrote the patch's own
    lines at the bump while patchctl moved them unchanged, and a silent one (the only kind
    that counts against patchctl) were not told apart."""
    repo = tmp_path / "up"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "master")
    write(repo, {"a.c": lines("a", 20), "b.c": lines("b", 20), "c.c": lines("c", 20)})
    new = commit_all(repo, "new pin")
    old_a = _diff(repo, {"a.c": lines("a", 20, {3: "return 103;"})})
    theirs_a = _diff(repo, {"a.c": lines("a", 20, {3: "return 203;"})})
    old_b = _diff(repo, {"b.c": lines("b", 20, {3: "return 103;"})})
    theirs_b = _diff(repo, {"b.c": lines("b", 20, {3: "return 203;"})})
    old_c = _diff(repo, {"c.c": lines("c", 20, {3: "return 103;"})})
    ours_c = _diff(repo, {"c.c": lines("c", 20, {3: "return 103;", 9: "return 109;"})})
    series = [("a", old_a, True), ("b", old_b, True), ("c", ours_c, True)]
    theirs = {"a": theirs_a, "b": theirs_b, "c": old_c}
    old = {"a": old_a, "b": old_b, "c": old_c}
    verdicts = replay.compare_moves(repo, new, series, theirs, old, said=frozenset({"a"}))
    assert verdicts == {
        "a": "differs, said so",  # patchctl named it: whatever the cause
        "b": "differs, they changed it",  # ours is the old patch, theirs a rewrite
        "c": "differs",  # ours changes more than the old patch did: silent
    }
    same = replay.compare_moves(repo, new, series[:1], {"a": old_a}, old)
    assert same == {"a": "equal"}


def test_a_hunk_placed_by_a_rule_counts_as_said() -> None:
    """A union move (both insertions kept, upstream's first) whose tree is not the
    maintainers' (they put theirs first) was not counted at all, union and anchored being
    left out of the automatic moves; it is said, where and why, in rebase-pin's report,
    unless a person resolved it."""
    union = {
        "grade": "union",
        "resolved": False,
        "placed": [{"file": "a.h", "hunk": 1, "line": 9, "note": "after upstream's 6 lines"}],
        "moved": [],
    }
    assert replay.said_of(union) == ["union: a.h hunk #1, after upstream's 6 lines"]
    assert replay.said_of({**union, "resolved": True}) == []
    assert replay.said_of({**union, "grade": "3way", "placed": []}) == []


def test_the_check_bench_times_each_script_on_the_same_projects(
    downstream: tuple[Path, Path, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`rebase-pin --check`'s time had no bench: a strategy added to the grading could slow
    it down unseen. bench/replay_check.py runs it with two console scripts on each bump's
    project, in turn, and gives the ratio of the totals; the same script twice counts the
    same conflicts and every check is timed."""
    import replay_check

    ds, up, tip = downstream
    monkeypatch.setenv("PATCHCTL_OLLAMA", str(ds))
    monkeypatch.setenv("PATCHCTL_LLAMA_CPP", str(up))
    me = str(replay_check.find_patchctl(None))
    argv = ["--json", "--tip", tip, "--until", "2999-01-01", "--baseline", me, "--rounds", "1"]
    assert replay_check.main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert [r["patches"] for r in result["bumps"]] == [3, 4]
    for r in result["bumps"]:
        assert r["to_resolve"]["patchctl"] == r["to_resolve"]["baseline"]
        assert all(len(v) == 1 and v[0] > 0 for v in r["seconds"].values())
    assert result["bumps"][1]["to_resolve"]["patchctl"] == 2  # a.c; c.c, moved and changed
    assert result["totals"]["ratio"] > 0


def test_the_check_bench_skips_without_its_inputs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import replay_check

    monkeypatch.delenv("PATCHCTL_OLLAMA", raising=False)
    assert replay_check.main(["--baseline", "x"]) == 0
    assert capsys.readouterr().out.startswith("bench/replay_check.py: skipped")
