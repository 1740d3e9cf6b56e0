"""What rebase-pin tells the person resolving or reviewing a move (patchctl/rebase/review.py):
the commits behind a conflict, the re-check before --continue writes, the range-diff, and
--bisect from the merge-base when the new pin is on another branch."""

from __future__ import annotations

from pathlib import Path

from tests import test_rebase
from tests.builders import git
from tests.rebase_history import History
from tests.test_rebase import P, by_name, rebase, rebase_json, settle, snap

# the synthetic history and a project pinned at its base, as in test_rebase.py
_history_template = test_rebase._history_template
history = test_rebase.history
proj = test_rebase.proj


def _resolve_0005(work: Path, value: str) -> None:
    text = (work / "src/tiny.c").read_text()
    start, end = text.index("<<<<<<<"), text.index(">>>>>>>")
    end = text.index("\n", end) + 1
    (work / "src/tiny.c").write_text(text[:start] + f"        y -= {value};\n" + text[end:])
    git(work, "add", "src/tiny.c")


def test_conflict_stop_names_the_commits_that_changed_the_patch_lines(
        cli, proj: Path, history: History) -> None:
    """The stop said only which files conflict, not which upstream commits made them
    conflict; c31 rewrote the line 0005 changes, c05 only moved it (three lines above)."""
    c = history.upstream.commits
    code, data = rebase_json(cli, proj, "master", "--drop-upstream")
    assert (code, data["status"]) == (1, "stopped")
    causes = [x for x in data["causes"] if x["patch"] == P[5]]
    assert [x["file"] for x in causes] == ["src/tiny.c"]
    assert causes[0]["commits"] == [{"id": c["c31"], "subject": "tiny : retune op 15 (#131)"}]
    rebase(cli, proj, "--abort")
    text = rebase(cli, proj, "master", "--drop-upstream").out
    assert f"src/tiny.c: its lines were changed upstream by 1 commit:\n" \
           f"         {c['c31'][:12]} tiny : retune op 15 (#131)" in text
    nxt = text[text.index("next:"):]
    assert "git add" in nxt and "patchctl rebase-pin --continue" in nxt and "--abort" in nxt
    assert f"$EDITOR {proj / '.patchctl/rebase/header'}" in nxt  # to change the header


def test_check_names_the_commits_behind_each_conflict(cli, proj: Path, history: History) -> None:
    """--check reports the same causes without stopping."""
    _, data = rebase_json(cli, proj, "master", "--check")
    assert {(x["patch"], x["file"]) for x in data["causes"]} == {(P[5], "src/tiny.c")}
    assert not (proj / ".patchctl/rebase").exists()


def test_continue_rechecks_the_resolution_before_writing(cli, proj: Path) -> None:
    """--continue wrote whatever was staged; a resolution that leaves the patch's Scope
    is now refused before anything is written, and can be fixed and continued."""
    _, data = rebase_json(cli, proj, "master", "--drop-upstream")
    work = Path(data["work"])
    before = snap(proj)
    _resolve_0005(work, "19")
    (work / "README.md").write_text((work / "README.md").read_text() + "stray edit\n")
    git(work, "add", "README.md")
    r = rebase(cli, proj, "--continue")
    assert r.code == 2, r.out + r.err
    assert "reaches files outside its Scope (src/tiny.c): README.md;" in r.err
    assert snap(proj) == before
    git(work, "checkout", "HEAD", "--", "README.md")
    code, data = settle(cli, proj, "--continue")
    assert (code, data["status"]) == (0, "rebased"), data
    assert by_name(data)[P[5]]["resolved"] is True


def test_rebased_stack_shows_a_range_diff(cli, proj: Path, history: History) -> None:
    """A finished rebase showed per-patch interdiffs only; it now shows the range-diff of
    the whole stack, old pin against new pin."""
    code, data = rebase_json(cli, proj, history.upstream.commits["c20"])
    assert (code, data["status"]) == (0, "rebased")
    rd = data["range_diff"]
    lines = rd.splitlines()
    heads = [ln for ln in lines if ln[:1].isdigit() or ln.startswith("-:")]
    assert len(heads) == 8, rd
    assert all(" = " in h or " ! " in h for h in heads), rd
    assert "util : add tiny_square" in heads[0]


def test_range_diff_after_continue(cli, proj: Path) -> None:
    """The resolved patch shows as changed (!) in the range-diff after --continue."""
    _, data = rebase_json(cli, proj, "master", "--drop-upstream")
    _resolve_0005(Path(data["work"]), "19")
    code, data = rebase_json(cli, proj, "--continue")  # stops at the doubted 0007
    assert (code, data["conflict"]) == (1, P[7]), data["message"]
    r = rebase(cli, proj, "--continue")
    assert r.code == 0, r.out + r.err
    assert "range-diff of the stack (old pin .. new pin):" in r.out
    row = next(ln for ln in r.out.splitlines() if "tiny : tighten op 15" in ln)
    assert " ! " in row


def test_bisect_from_the_merge_base_when_not_a_descendant(
        cli, proj: Path, history: History) -> None:
    """--bisect did 0 checks when the new pin was on a release branch that does not contain
    the old pin; it now searches the branch's first-parent line from the merge-base."""
    up, c = history.upstream.path, history.upstream.commits
    assert rebase(cli, proj, c["c20"]).code == 0  # the stack now pins c20
    git(up, "checkout", "-q", "-b", "release", c["c15"])
    for i in range(1, 6):
        (up / f"docs/rel{i}.md").write_text(f"# release note {i}\n")
        git(up, "add", ".")
        git(up, "commit", "-q", "-m", f"docs : release note {i}")
        if i == 3:
            tiny = (up / "src/tiny.c").read_text().replace("        y -= 16;\n",
                                                           "        y -= 20;\n")
            (up / "src/tiny.c").write_text(tiny)
            git(up, "commit", "-q", "-am", "rel : retune op 15")
    retune = git(up, "rev-parse", "HEAD~2").strip()
    git(up, "checkout", "-q", "master")
    code, data = rebase_json(cli, proj, "release", "--check", "--bisect")
    assert code == 1
    assert data["commits"] is None and data["base"] == c["c15"]
    b = by_name(data)[P[5]]["bisect"]
    assert b["commit"] == {"id": retune, "subject": "rel : retune op 15"}, b
    assert b["commits"] == 6 and 2 < b["checks"] <= b["bound"]
    text = rebase(cli, proj, "release", "--check", "--bisect").out
    assert f"--bisect searches from their merge-base {c['c15'][:12]}" in text


def test_range_diff_pairs_a_reworked_patch_with_its_old_self(cli, proj: Path) -> None:
    """git range-diff showed a patch reworked beyond its creation factor as one commit
    dropped (<) and an unrelated one added (>), as on the move to 82bb485; it is paired."""
    _, data = rebase_json(cli, proj, "master", "--drop-upstream")
    _resolve_0005(Path(data["work"]), "19;\n" + "".join(
        f"        y += 0; /* reworked {i} */\n" for i in range(12)).rstrip(";\n"))
    code, data = settle(cli, proj, "--continue")
    assert code == 0, data
    rows = [ln for ln in data["range_diff"].splitlines() if ln[:1].isdigit() or ln[:2] == "-:"]
    assert not [r for r in rows if " > " in r], rows
    assert [r.split("-------")[-1].strip() for r in rows if " < " in r] == [  # the dropped
        "util : add tiny_min", "tiny : advertise tiny_min"], rows
    assert " ! " in next(r for r in rows if "tighten op 15" in r)
