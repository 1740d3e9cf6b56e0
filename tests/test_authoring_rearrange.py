"""delete, rename, move and header: on the example stack and on a synthetic 50-patch stack.

Every refusal must leave ``stack/`` byte-identical; every success must leave a
stack that verifies, with a current lock.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from patchctl.model.stackwrite import snapshot
from tests.builders import git, stop_a_rebase

KILLER = Path(__file__).with_name("killer.py")
T1, T2, T3 = ("0001-util-add-tiny_square.patch", "0002-tiny-bump-op-02.patch",
              "0003-tiny-declare-square.patch")


def series(project: Path) -> list[str]:
    from patchctl.model.stack import find_stack

    return [e.name for e in find_stack(project).series()]


def verifies(cli, project: Path) -> None:
    r = cli("-C", str(project), "verify", "--json")
    report = json.loads(r.out)
    assert r.code == 0, [p["failure"] for p in report["patches"] if p["failure"]]
    assert report["lock"] == "current"


def refused(cli, project: Path, *args: str) -> str:
    """Run a verb that must be refused: exit 2, one line, nothing written."""
    before = snapshot(project / "stack")
    r = cli("-C", str(project), *args)
    assert r.code == 2, (r.out, r.err)
    assert r.err.count("\n") == 1 and "Traceback" not in r.err, r.err
    assert snapshot(project / "stack") == before
    return r.err


# -- delete ------------------------------------------------------------------------------


def test_delete_on_the_example(cli, tiny: Path) -> None:
    r = cli("-C", str(tiny), "delete", "bump", "--json")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["schema"] == "patchctl.delete/1" and out["removed"] == [T2]
    assert series(tiny) == [T1, T3]
    assert not (tiny / "stack/patches" / T2).exists()
    verifies(cli, tiny)
    assert cli("-C", str(tiny), "delete", "1", "--keep-file").code == 0
    assert series(tiny) == [T3] and (tiny / "stack/patches" / T1).is_file()
    verifies(cli, tiny)


def test_delete_on_50_patches_refuses_when_a_later_patch_needs_it(cli, big: Path) -> None:
    err = refused(cli, big, "delete", "1")
    assert "0050-docs-page-0000-again.patch (#49) does not apply" in err
    assert "hunk #1 of docs/page0000.md" in err
    assert cli("-C", str(big), "delete", "0025").code == 0
    assert len(series(big)) == 49 and "0025-docs-page-0024.patch" not in series(big)
    verifies(cli, big)
    assert cli("-C", str(big), "delete", "1", "--force").code == 0  # unchecked: now broken
    assert cli("-C", str(big), "verify").code == 1


def test_delete_then_rename_by_the_next_files_number(cli, big: Path) -> None:
    """`delete 0008` then `rename 0009 ...` failed with "'0009' names 2
    patches" (0009-... had moved to position 8, position 9 was 0010-...). A number
    names the file carrying it; `@N` is the position."""
    names = series(big)
    assert cli("-C", str(big), "delete", "0008").code == 0
    r = cli("-C", str(big), "rename", "0009", "0009-renamed")
    assert r.code == 0, r.err
    assert series(big) == [*names[:7], "0009-renamed.patch", *names[9:]]
    err = refused(cli, big, "rename", "8", "x")
    assert "carries the number 8; `@8` is the patch at position 8 (0009-renamed.patch)" in err
    assert cli("-C", str(big), "rename", "@9", "0010-by-position").code == 0
    assert series(big)[8] == "0010-by-position.patch"
    assert "has positions 1 to 49" in refused(cli, big, "delete", "@50")
    verifies(cli, big)


# -- rename -----------------------------------------------------------------------------


def test_rename_on_the_example(cli, tiny: Path) -> None:
    data = (tiny / "stack/patches" / T2).read_bytes()
    lock = (tiny / "stack/stack.lock").read_text()
    assert cli("-C", str(tiny), "rename", "2", "0002-bump").code == 0
    assert series(tiny) == [T1, "0002-bump.patch", T3]
    assert (tiny / "stack/patches/0002-bump.patch").read_bytes() == data
    assert not (tiny / "stack/patches" / T2).exists()
    new_lock = (tiny / "stack/stack.lock").read_text()
    assert new_lock != lock and new_lock.split("[[patch]]")[0] == lock.split("[[patch]]")[0]
    verifies(cli, tiny)
    assert "already exists" in refused(cli, tiny, "rename", "bump", T1)
    assert "leaves patches/" in refused(cli, tiny, "rename", "bump", "../x")
    assert "not a plain file name" in refused(cli, tiny, "rename", "bump", "a b")
    assert "a name, not a path" in refused(cli, tiny, "rename", "bump", "sub/x")


def test_rename_in_a_50_patch_stack_keeps_the_place(cli, big: Path) -> None:
    assert cli("-C", str(big), "rename", "0030", "page-29-renamed").code == 0
    assert series(big)[29] == "page-29-renamed.patch"
    verifies(cli, big)


# -- move -------------------------------------------------------------------------------


def test_move_on_the_example(cli, tiny: Path) -> None:
    assert cli("-C", str(tiny), "move", T3, "--to", "1").code == 0
    assert series(tiny) == [T3, T1, T2]
    assert cli("-C", str(tiny), "move", T1, "--after", T2).code == 0
    assert series(tiny) == [T3, T2, T1]
    assert cli("-C", str(tiny), "move", T1, "--before", "declare").code == 0
    assert series(tiny) == [T1, T3, T2]
    verifies(cli, tiny)
    r = cli("-C", str(tiny), "move", T3, "--before", "bump")
    assert r.code == 0 and "already there" in r.out


def test_move_on_50_patches(cli, big: Path) -> None:
    names = series(big)
    assert cli("-C", str(big), "move", "0040", "--to", "2").code == 0
    assert series(big) == [names[0], names[39], *names[1:39], *names[40:]]
    verifies(cli, big)


def test_move_that_breaks_applicability_is_refused(cli, big: Path) -> None:
    """The 50th patch edits what the 1st patch wrote: before it, it cannot apply."""
    err = refused(cli, big, "move", "0050-docs-page-0000-again.patch", "--to", "1")
    assert "0050-docs-page-0000-again.patch (#1) does not apply at the pin" in err
    assert "hunk #1 of docs/page0000.md" in err and "nothing was written" in err
    err = refused(cli, big, "move", "1", "--after", "0050-docs-page-0000-again.patch")
    assert "0050-docs-page-0000-again.patch (#49)" in err


def test_move_bad_input(cli, tiny: Path) -> None:
    assert "exactly one of" in refused(cli, tiny, "move", "1")
    assert "exactly one of" in refused(cli, tiny, "move", "1", "--to", "2", "--after", "3")
    assert "positions 1 to 3" in refused(cli, tiny, "move", "1", "--to", "4")
    assert "relative to itself" in refused(cli, tiny, "move", "1", "--before", T1)
    assert "names 2 patches" in refused(cli, tiny, "move", "square", "--to", "2")
    assert "no patch named 'nope'" in refused(cli, tiny, "move", "nope", "--to", "2")


# -- header -----------------------------------------------------------------------------


def test_header_read_and_set_on_the_example(cli, tiny: Path) -> None:
    r = cli("-C", str(tiny), "header", "bump")
    assert r.code == 0 and "Upstream-Status: Pending" in r.out and "Concern: bump" in r.out
    fp = json.loads(cli("-C", str(tiny), "fingerprint", "--json").out)["fingerprint"]
    r = cli("-C", str(tiny), "header", "bump", "--set",
            "Upstream-Status=Submitted [https://example.invalid/pr/1]", "--set", "Bug=42")
    assert r.code == 0, r.err
    text = (tiny / "stack/patches" / T2).read_text()
    assert "\nUpstream-Status: Submitted [https://example.invalid/pr/1]\n" in text
    assert "Upstream-Status: Pending" not in text and "\nBug: 42\n---\n" in text
    r = cli("-C", str(tiny), "header", "2", "--get", "Upstream-Status")
    assert r.out == "Submitted [https://example.invalid/pr/1]\n"
    assert json.loads(cli("-C", str(tiny), "fingerprint", "--json").out)["fingerprint"] == fp
    verifies(cli, tiny)
    assert cli("-C", str(tiny), "header", "2", "--unset", "Bug").code == 0
    assert "Bug:" not in (tiny / "stack/patches" / T2).read_text()
    assert cli("-C", str(tiny), "header", "2", "--get", "Bug").code == 1


def test_header_set_is_validated_as_verify_validates_it(cli, tiny: Path) -> None:
    err = refused(cli, tiny, "header", "bump", "--set", "Upstream-Status=Maybe later")
    assert "malformed Upstream-Status" in err
    assert "missing `Scope:`" in refused(cli, tiny, "header", "bump", "--unset", "Scope")
    assert "under reproducers/" in refused(cli, tiny, "header", "bump", "--set",
                                           "Reproducer=/tmp/x")
    assert "KEY=VALUE" in refused(cli, tiny, "header", "bump", "--set", "Upstream-Status")
    assert "not a trailer key" in refused(cli, tiny, "header", "bump", "--set", "a b=c")
    r = cli("-C", str(tiny), "header", "bump", "--set", "Upstream-Status=Submitted")
    assert r.code == 0 and "should say where it was submitted" in r.err  # a warning, as verify


def test_header_set_assisted_by_is_checked_and_keeps_the_fingerprint(cli, tiny: Path) -> None:
    """Bug: verify's lint did not know `Assisted-by:`, so `header --set` took one that named
    no assistant (`Assisted-by: [src/*]`) or whose glob matched none of the patch's files,
    and the brief then credited a tool with nothing."""
    fp = json.loads(cli("-C", str(tiny), "fingerprint", "--json").out)["fingerprint"]
    assert "names no assistant" in refused(cli, tiny, "header", "bump", "--set",
                                           "Assisted-by=[src/*]")
    assert "closing" in refused(cli, tiny, "header", "bump", "--set", "Assisted-by=Claude [a")
    r = cli("-C", str(tiny), "header", "bump", "--set", "Assisted-by=Claude [nowhere/*.c]")
    assert r.code == 0 and "matches no file of the patch" in r.err
    r = cli("-C", str(tiny), "header", "bump", "--set", "Assisted-by=Claude")
    assert r.code == 0, r.err
    assert "\nAssisted-by: Claude\n" in (tiny / "stack/patches" / T2).read_text()
    assert json.loads(cli("-C", str(tiny), "fingerprint", "--json").out)["fingerprint"] == fp
    verifies(cli, tiny)


def test_header_message_replaces_the_body(cli, tiny: Path) -> None:
    """Bug: a patch's body could be set only by `new -m`; changing it afterwards meant
    editing the patch file in stack/ by hand, outside any transaction (found writing
    the filtered-state patch of llama.cpp)."""
    fp = json.loads(cli("-C", str(tiny), "fingerprint", "--json").out)["fingerprint"]
    before = (tiny / "stack/patches" / T2).read_text()
    r = cli("-C", str(tiny), "header", "bump", "-m", "Why it bumps.\n\nAnd how.")
    assert r.code == 0, r.err
    text = (tiny / "stack/patches" / T2).read_text()
    assert "\n\nWhy it bumps.\n\nAnd how.\n\n" in text
    assert text.split("\n---\n", 1)[1] == before.split("\n---\n", 1)[1]  # stat and diff
    r = cli("-C", str(tiny), "header", "bump", "--json")
    assert json.loads(r.out)["trailers"] == [list(t) for t in trailers_of(before)]
    assert json.loads(cli("-C", str(tiny), "fingerprint", "--json").out)["fingerprint"] == fp
    verifies(cli, tiny)
    assert cli("-C", str(tiny), "header", "bump", "-m", "").code == 0
    assert "Why it bumps." not in (tiny / "stack/patches" / T2).read_text()
    verifies(cli, tiny)


INJECTED_DIFF = ("diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n"
                 "@@ -1 +1,2 @@\n # tiny\n+injected")


BLOCK = "Concern: bump\nUpstream-Status: Pending\nScope: **\n"  # trailers as the body's


@pytest.mark.parametrize("tail", [
    f"---\n{INJECTED_DIFF}",  # the body: a trailer block, a `---` line and a hunk
    INJECTED_DIFF,  # a diff alone
    INJECTED_DIFF.split("\n", 1)[1],  # a `--- / +++ / @@` diff, no `diff --git`
    "Index: README.md\n" + "=" * 67 + "\n" + INJECTED_DIFF.split("\n", 1)[1],
    "---\nThe rest, as git am would cut it.",
    "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001",
    "\x1b[2J",
    "\r\nAnd a carriage return.",
], ids=["issue", "diff-git", "traditional", "index", "dashes", "mbox-from", "escape", "cr"])
def test_header_message_cannot_change_the_diff(cli, tiny: Path, tail: str) -> None:
    """`header NAME -m TEXT` with a body holding a trailer block, a `---` line
    and a hunk made the hunk part of the patch: the fingerprint changed, the lock was
    rewritten, verify said OK and `apply --into` wrote the injected line. A body that
    could end the message or start a diff is refused; nothing is written."""
    fp = json.loads(cli("-C", str(tiny), "fingerprint", "--json").out)["fingerprint"]
    refused(cli, tiny, "header", "bump", "-m", f"Why.\n\n{BLOCK}{tail}")
    assert json.loads(cli("-C", str(tiny), "fingerprint", "--json").out)["fingerprint"] == fp


def test_header_message_cannot_add_or_change_trailers(cli, tiny: Path) -> None:
    """A body's last paragraph of `Key: value` lines is read as the trailers
    when no trailer block follows it, so `-m 'Scope: **'` widened the Scope of a patch
    without one. Refused there; before a trailer block it stays prose, and the parsed
    trailers are unchanged."""
    from patchctl.model.patchtext import header_text

    path = tiny / "stack/patches" / T2
    before = path.read_text()
    trailers = trailers_of(before)
    # the same patch with its trailer block removed (its lint errors are old ones)
    head = header_text(parsed(before))
    bare = before.replace(head, head.split("\n\nConcern:")[0] + "\n")
    assert trailers_of(bare) == []
    path.write_text(bare)
    assert cli("-C", str(tiny), "lock").code == 0
    err = refused(cli, tiny, "header", "bump", "-m", "Why.\n\nConcern: bump\nScope: **")
    assert "would be read as trailers" in err
    assert "would be read as trailers" in refused(cli, tiny, "header", "bump", "-m",
                                                  "Scope: **")
    path.write_text(before)
    assert cli("-C", str(tiny), "lock").code == 0
    r = cli("-C", str(tiny), "header", "bump", "-m", "Why.\n\nScope: ** is wide, but prose")
    assert r.code == 0, r.err
    assert trailers_of(path.read_text()) == trailers
    assert "\n\nScope: ** is wide, but prose\n\nConcern: bump\n" in path.read_text()
    verifies(cli, tiny)


def test_a_header_change_is_refused_unless_only_what_was_asked_changes(tiny: Path) -> None:
    """Whatever gets past the body and trailer checks, `header` parses the
    result again and refuses it unless the diff is byte-identical and the trailers
    differ only in the keys set."""
    from patchctl.authoring.rearrange import _same_but
    from patchctl.errors import InputError

    old = parsed((tiny / "stack/patches" / T2).read_text())
    same = parsed(old.text.replace("Scope: src/*.c", "Scope: **"))
    _same_but(old, same, [("Scope", "**")], None)
    with pytest.raises(InputError, match="trailers would change beyond the ones set"):
        _same_but(old, same, [("Bug", "1")], None)
    with pytest.raises(InputError, match="trailers would change beyond the ones set"):
        _same_but(old, same, [("Scope", "src/*")], None)
    moved = parsed(old.text.replace("+    int y = x * 4 + 1;", "+    int y = 0;"))
    with pytest.raises(InputError, match="its diff would change"):
        _same_but(old, moved, [], None)
    with pytest.raises(InputError, match="would not read back as given"):
        _same_but(old, old, [], "Another body.")


def parsed(text: str):
    from patchctl.model.patchtext import reparse

    return reparse(text, name=T2, path=Path(T2))


def trailers_of(text: str) -> list[tuple[str, str]]:
    from patchctl.model.patchtext import reparse, trailers

    return trailers(reparse(text, name=T2, path=Path(T2)))


def test_header_set_in_a_50_patch_stack(cli, big: Path) -> None:
    assert cli("-C", str(big), "header", "0033", "--set", "Upstream-Status=Denied").code == 0
    r = cli("-C", str(big), "header", "0033", "--json")
    assert ["Upstream-Status", "Denied"] in json.loads(r.out)["trailers"]
    verifies(cli, big)


# -- open work --------------------------------------------------------------------------


def test_refuses_a_stopped_rebase(cli, tiny: Path) -> None:
    stop_a_rebase(tiny)
    for args in (["delete", "1"], ["rename", "1", "x"], ["move", "1", "--to", "2"],
                 ["header", "1", "--set", "Bug=1"], ["fold", "2", "--into", "3"],
                 ["split", "1", "--paths", "src/*"]):
        assert "rebase-pin" in refused(cli, tiny, *args)


def test_unrefreshed_edit_refuses_and_a_clean_one_is_closed(cli, tiny: Path) -> None:
    r = cli("-C", str(tiny), "edit", "bump", "--json")
    assert r.code == 0, r.err
    work = Path(json.loads(r.out)["work"])
    (work / "README.md").write_text("changed in the edit\n")
    r = cli("-C", str(tiny), "diff")
    assert r.code == 0 and "+changed in the edit" in r.out
    assert "not yet refreshed" in refused(cli, tiny, "move", "bump", "--to", "1")
    git(work, "checkout", "-q", "--", "README.md")
    assert cli("-C", str(tiny), "diff").out == ""
    assert cli("-C", str(tiny), "move", "bump", "--to", "1").code == 0
    assert not work.exists()  # closed: its base would be stale now
    assert "no edit is open" in cli("-C", str(tiny), "diff").err


# -- kills: old or new stack, never a mix -----------------------------------------------


def killed(project: Path, n: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(KILLER), str(n), "-C", str(project), *args],
                          capture_output=True, text=True, check=False,
                          cwd=Path(__file__).resolve().parent.parent)


def assert_kills_leave_old_or_new(cli, tmp_path: Path, project: Path, *args: str) -> int:
    """SIGKILL the verb before each of its renames/removals/swaps: ``stack/`` is always
    the old stack or the new one; a later run completes it. Returns the kill count."""
    old = snapshot(project / "stack")
    done = tmp_path / "done"
    shutil.copytree(project, done)
    assert cli("-C", str(done), *args).code == 0
    new = snapshot(done / "stack")
    assert new != old
    kills = 0
    for n in range(1, 40):
        run = killed(project, n, *args)
        if run.returncode == 0:
            assert snapshot(project / "stack") == new
            break
        assert run.returncode == -signal.SIGKILL, (n, run.stderr)
        kills += 1
        state = snapshot(project / "stack")
        assert state in (old, new), f"killed before mutation {n}: a mix of old and new"
        if state == new:  # killed after the swap, while cleaning up: start over
            shutil.rmtree(project / "stack")
            shutil.copytree(tmp_path / "orig" / "stack", project / "stack")
    leftovers = [p.name for p in project.iterdir() if p.name.startswith(".stack.")]
    assert leftovers == []
    return kills


@pytest.mark.parametrize("args", [
    ["delete", "bump"], ["rename", "bump", "0002-x"], ["move", "3", "--to", "1"],
    ["header", "1", "--set", "Bug=7"],
])
def test_kill_during_each_verb(cli, tmp_path: Path, tiny: Path, args: list[str]) -> None:
    shutil.copytree(tiny, tmp_path / "orig")
    assert assert_kills_leave_old_or_new(cli, tmp_path, tiny, *args) >= 2
