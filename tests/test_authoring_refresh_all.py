"""`patchctl refresh --all`: the stack rewritten from the edit work tree's commits after a
`git rebase -i` there, against a real upstream git repository.

The bug these pin: `edit` opened the patches as commits, but a restructuring made with
`git rebase -i` there (reword, reorder, split, insert, drop) had no way back into the
stack; plain `refresh` only rewrites the one edited patch.
"""

from __future__ import annotations

import json
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from patchctl.model.stackwrite import snapshot
from tests.builders import Upstream, git, imported_project, make_project, replace_in

T1, T2, T3 = ("0001-util-add-tiny_square.patch", "0002-tiny-bump-op-02.patch",
              "0003-tiny-declare-tiny_square.patch")


@pytest.fixture
def canonical(cli, tmp_path: Path, upstream: Upstream, patches) -> Path:
    """The three standard patches imported (so in patchctl's own form)."""
    return imported_project(cli, tmp_path, upstream, patches)


def series(project: Path) -> list[str]:
    return [ln for ln in (project / "stack/series").read_text().splitlines()
            if ln and not ln.startswith("#")]


def edit(cli, project: Path, name: str) -> Path:
    r = cli("-C", str(project), "edit", name, "--json")
    assert r.code == 0, r.err
    return Path(json.loads(r.out)["work"])


def refresh_all(cli, project: Path) -> dict:
    r = cli("-C", str(project), "refresh", "--all", "--json")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["schema"] == "patchctl.refresh-all/1"
    return out


def by_file(result: dict) -> dict[str, dict]:
    return {p["file"]: p for p in result["patches"]}


def refused(cli, project: Path, *args: str) -> str:
    """`refresh --all` refused: exit 2, one line, stack/ and the edit state untouched."""
    before = snapshot(project / "stack")
    state = (project / ".patchctl/edit/state.json").read_text()
    r = cli("-C", str(project), "refresh", "--all", *args)
    assert r.code == 2, (r.out, r.err)
    assert r.err.count("\n") == 1 and "Traceback" not in r.err, r.err
    assert snapshot(project / "stack") == before
    assert (project / ".patchctl/edit/state.json").read_text() == state
    return r.err


def verifies(cli, project: Path) -> None:
    r = cli("-C", str(project), "verify", "--json")
    assert r.code == 0, r.out
    assert json.loads(r.out)["lock"] == "current"


def rebase(work: Path, pin: str, tmp_path: Path,
           todo: Callable[[list[str]], list[str]], **env: str) -> None:
    """`git rebase -i PIN` in ``work``, its todo list rewritten by ``todo`` (given the
    commits oldest first as `pick <id>` lines) through GIT_SEQUENCE_EDITOR."""
    picks = [f"pick {c}" for c in git(work, "rev-list", "--reverse", f"{pin}..HEAD").split()]
    path = tmp_path / "todo"
    path.write_text("".join(f"{ln}\n" for ln in todo(picks)))
    git(work, "rebase", "-q", "-i", pin,
        env={"GIT_SEQUENCE_EDITOR": f"cp {shlex.quote(str(path))}", **env})


def state(project: Path) -> dict:
    return json.loads((project / ".patchctl/edit/state.json").read_text())


# -- round trip ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["1", "2", "3"])
def test_round_trip_leaves_every_file_byte_identical(cli, canonical: Path, name: str) -> None:
    """refresh --all: `edit` then `refresh --all` with no change leaves every file of the
    stack byte-identical; the commits carry each patch's trailers; the edit stays open."""
    before = snapshot(canonical / "stack")
    work = edit(cli, canonical, name)
    message = git(work, "log", "-1", "--format=%B")
    assert "\n\nConcern: " in message and "\nUpstream-Status: Pending\nScope: " in message
    opened = state(canonical)
    out = refresh_all(cli, canonical)
    assert [p["status"] for p in out["patches"]] == ["kept"] * int(name)
    assert out["written"] == [] and out["removed"] == []
    assert snapshot(canonical / "stack") == before
    assert state(canonical) == opened  # still open, on the same commits
    again = cli("-C", str(canonical), "refresh")
    assert again.code == 0 and ": unchanged;" in again.out, again.out + again.err


def test_round_trip_keeps_a_stack_not_in_patchctls_form(cli, project: Path) -> None:
    """refresh --all: patches as `git format-patch` wrote them (short index lines, its own
    diffstat) are kept byte for byte when their commits did not change."""
    before = snapshot(project / "stack")
    edit(cli, project, "3")
    out = refresh_all(cli, project)
    assert {p["status"] for p in out["patches"]} == {"kept"}
    assert snapshot(project / "stack") == before


def test_a_dep3_patch_round_trips_and_keeps_its_form(cli, tmp_path: Path,
                                                     upstream: Upstream, patches) -> None:
    """refresh --all: a DEP-3 header (its `Key: value` lines in the commit message) comes
    back byte-identical; a new body for it is refused, as `header --message` refuses it."""
    diff = patches[0][1][patches[0][1].index("diff --git"):]
    dep3 = ("Description: add tiny_square\n so that callers can square.\n"
            "Author: Deb Dev <deb@example.invalid>\nForwarded: not-needed\nConcern: square\n"
            "Upstream-Status: Pending\nScope: src/util.c\n---\n" + diff)
    project = make_project(tmp_path / "dep3", upstream, [("square.patch", dep3), patches[1]])
    before = snapshot(project / "stack")
    work = edit(cli, project, "2")
    assert "\nForwarded: not-needed\n" in git(work, "log", "-1", "--format=%B", "HEAD^")
    assert {p["status"] for p in refresh_all(cli, project)["patches"]} == {"kept"}
    assert snapshot(project / "stack") == before
    reworded = tmp_path / "message"
    reworded.write_text(git(work, "log", "-1", "--format=%B", "HEAD^")
                        .replace("\n\n", "\n\nAnother reason.\n\n", 1))
    rebase(work, upstream.commits["base"], tmp_path,
           lambda picks: [picks[0].replace("pick", "reword"), picks[1]],
           GIT_EDITOR=f"cp {shlex.quote(str(reworded))}")
    assert "DEP-3" in refused(cli, project)


def test_plain_refresh_still_takes_the_header_from_the_patch(cli, canonical: Path) -> None:
    """refresh --all: with trailers now in the commit messages, plain `refresh` still
    takes the header from the patch file (the trailers are not doubled into the body)."""
    old = (canonical / "stack/patches" / T2).read_text()
    work = edit(cli, canonical, "2")
    assert git(work, "log", "-1", "--format=%B").endswith(
        "\n\nConcern: bump\nUpstream-Status: Pending\nScope: src/*.c\n\n")
    replace_in(work / "src/tiny.c", "x * 4 + 1; /* patched */", "x * 4 + 2; /* patched */")
    r = cli("-C", str(canonical), "refresh")
    assert r.code == 0, r.err
    new = (canonical / "stack/patches" / T2).read_text()
    assert new.split("\n---\n")[0] == old.split("\n---\n")[0]
    assert new.count("Concern: bump") == 1


# -- restructuring -------------------------------------------------------------------------


def test_reword_a_body_and_set_a_trailer(cli, canonical: Path, upstream: Upstream,
                                         tmp_path: Path) -> None:
    """refresh --all: `reword` in `git rebase -i` rewrites the patch's body; a trailer
    the message changes is set, the others and the author and date kept."""
    old = (canonical / "stack/patches" / T2).read_text()
    work = edit(cli, canonical, "3")
    message = tmp_path / "message"
    message.write_text("tiny : bump op 02\n\nA better reason.\n\nConcern: bump\n"
                       "Upstream-Status: Submitted [https://example.invalid/pr/2]\n")
    rebase(work, upstream.commits["base"], tmp_path,
           lambda picks: [picks[0], picks[1].replace("pick", "reword"), picks[2]],
           GIT_EDITOR=f"cp {shlex.quote(str(message))}")
    out = refresh_all(cli, canonical)
    entry = by_file(out)[T2]
    assert entry["status"] == "changed" and entry["changes"] == ["reworded", "trailers"]
    assert entry["set_trailers"] == ["Upstream-Status"]
    assert out["written"] == [T2] and series(canonical) == [T1, T2, T3]
    new = (canonical / "stack/patches" / T2).read_text()
    assert "\n\nA better reason.\n\n" in new and "Why this change" not in new
    assert "Upstream-Status: Submitted [https://example.invalid/pr/2]\nScope: src/*.c\n" in new
    assert new.split("\n\n")[0] == old.split("\n\n")[0]  # From, Date, Subject kept
    assert new.split("\n---\n", 1)[1] == old.split("\n---\n", 1)[1]  # the diff kept
    verifies(cli, canonical)


def test_reorder_two_commits(cli, canonical: Path, upstream: Upstream, tmp_path: Path) -> None:
    """refresh --all: commits reordered with `git rebase -i` reorder the series; file
    names stay (as `move` keeps them)."""
    texts = {n: (canonical / "stack/patches" / n).read_bytes() for n in (T1, T2, T3)}
    work = edit(cli, canonical, "3")
    rebase(work, upstream.commits["base"], tmp_path,
           lambda picks: [picks[1], picks[0], picks[2]])
    out = refresh_all(cli, canonical)
    assert series(canonical) == [T2, T1, T3] == out["series"]
    moved = by_file(out)
    assert (moved[T2]["was"], moved[T2]["now"], moved[T1]["was"], moved[T1]["now"]) == \
        (2, 1, 1, 2)
    assert all(p["status"] == "kept" for p in out["patches"])  # separate files: same diffs
    assert {n: (canonical / "stack/patches" / n).read_bytes() for n in texts} == texts
    verifies(cli, canonical)
    r = cli("-C", str(canonical), "refresh", "--all")
    assert r.code == 0 and "0002-tiny-bump-op-02.patch: kept (#1)" in r.out, r.out + r.err


def test_reorder_ends_with_the_renumber_hint(cli, canonical: Path, upstream: Upstream,
                                            tmp_path: Path) -> None:
    """`refresh --all` that leaves the file numbers out of series order ends its
    text output with the hint to run `patchctl renumber`, which then renames the files
    (closing the clean edit)."""
    hint = "numbers out of series order: run `patchctl renumber`"
    texts = [(canonical / "stack/patches" / n).read_bytes() for n in (T2, T1, T3)]
    work = edit(cli, canonical, "3")
    rebase(work, upstream.commits["base"], tmp_path,
           lambda picks: [picks[1], picks[0], picks[2]])
    r = cli("-C", str(canonical), "refresh", "--all")
    assert r.code == 0 and r.out.splitlines()[-1] == hint, r.out + r.err
    r = cli("-C", str(canonical), "renumber")
    assert r.code == 0, r.err
    new = ["0001-tiny-bump-op-02.patch", "0002-util-add-tiny_square.patch", T3]
    assert series(canonical) == new and not work.exists()
    assert [(canonical / "stack/patches" / n).read_bytes() for n in new] == texts
    verifies(cli, canonical)
    assert hint not in cli("-C", str(canonical), "series").out


def test_split_a_commit_in_two_then_restructure_again(cli, canonical: Path, upstream: Upstream,
                                                      tmp_path: Path) -> None:
    """refresh --all: one commit split into two gives the patch its first half and a new
    patch (named as `split` names one, trailers filled as import fills them) after it;
    the edit stays open on the result, so a second rebase + refresh --all works."""
    work = edit(cli, canonical, "2")
    git(work, "reset", "-q", "HEAD^")
    replace_in(work / "src/tiny.c", "x * 4 + 1; /* patched */", "x * 4 + 1;")
    git(work, "commit", "-q", "-a", "-C", "ORIG_HEAD")
    replace_in(work / "src/tiny.c", "x * 4 + 1;", "x * 4 + 1; /* patched */")
    git(work, "commit", "-q", "-a", "-m", "tiny : explain op 02")
    out = refresh_all(cli, canonical)
    new = "0004-tiny-explain-op-02.patch"
    assert series(canonical) == [T1, T2, new, T3]
    entries = by_file(out)
    assert entries[T2]["changes"] == ["content-changed"] and entries[T2]["interdiff"]
    assert entries[new]["status"] == "new" and entries[new]["now"] == 3
    assert entries[new]["added"] == ["Concern: tiny-explain-op-02", "Upstream-Status: Pending",
                                     "Scope: src/tiny.c"]
    assert out["target"] == new and state(canonical)["target"] == new
    text = (canonical / "stack/patches" / new).read_text()
    assert "Subject: [PATCH] tiny : explain op 02\n" in text and "/* patched */" in text
    assert "x * 4 + 1;\n" in (canonical / "stack/patches" / T2).read_text()
    verifies(cli, canonical)
    # again, on the commits as they are now: squash the new one back into 0002
    msg = tmp_path / "msg"
    msg.write_text(git(work, "log", "-1", "--format=%B", "HEAD^"))
    rebase(work, upstream.commits["base"], tmp_path,
           lambda picks: [picks[0], picks[1], picks[2].replace("pick", "squash")],
           GIT_EDITOR=f"cp {shlex.quote(str(msg))}")
    again = refresh_all(cli, canonical)
    assert series(canonical) == [T1, T2, T3]
    assert by_file(again)[new]["status"] == "dropped"
    assert not (canonical / "stack/patches" / new).exists()
    verifies(cli, canonical)


def test_insert_a_new_commit_first(cli, canonical: Path, upstream: Upstream,
                                   tmp_path: Path) -> None:
    """refresh --all: a commit inserted before the others becomes the first patch; the
    old ones follow, their files kept."""
    work = edit(cli, canonical, "3")
    make = ("printf 'Patched by a stack.\\n' >> README.md && "
            "git commit -q -a -m 'docs : mention the stack' -m 'Concern: docs'")
    rebase(work, upstream.commits["base"], tmp_path,
           lambda picks: [f"exec {make}", *picks])
    out = refresh_all(cli, canonical)
    new = "0004-docs-mention-the-stack.patch"
    assert series(canonical) == [new, T1, T2, T3]
    entries = by_file(out)
    assert entries[new]["status"] == "new" and entries[new]["now"] == 1
    assert entries[new]["added"] == ["Upstream-Status: Pending", "Scope: README.md"]
    assert [entries[n]["status"] for n in (T1, T2, T3)] == ["kept"] * 3
    assert "Concern: docs\nUpstream-Status: Pending\nScope: README.md\n---\n" in \
        (canonical / "stack/patches" / new).read_text()
    verifies(cli, canonical)


def test_drop_a_commit(cli, canonical: Path, upstream: Upstream, tmp_path: Path) -> None:
    """refresh --all: a commit dropped in `git rebase -i` drops its patch and its file;
    the report says so."""
    work = edit(cli, canonical, "3")
    rebase(work, upstream.commits["base"], tmp_path, lambda picks: [picks[0], picks[2]])
    r = cli("-C", str(canonical), "refresh", "--all")
    assert r.code == 0, r.err
    assert f"{T2}: dropped (was #2)" in r.out and f"{T3}: kept (#3 -> #2)" in r.out
    assert series(canonical) == [T1, T3]
    assert not (canonical / "stack/patches" / T2).exists()
    verifies(cli, canonical)


# -- refusals --------------------------------------------------------------------------------


@pytest.mark.parametrize("trailer, says", [
    ("Upstream-Status: Maybe", "malformed Upstream-Status"),
    ("Reproducer: ../outside", "must be a path under reproducers/"),
    ("Scope: src/[z-a].c", "Scope"),
    ("Concern: \x1b[31mred", "control characters"),
])
def test_bad_trailers_are_refused(cli, canonical: Path, trailer: str, says: str) -> None:
    """refresh --all: a trailer in a commit message goes through `header --set`'s checks;
    a bad one, on a matched patch or a new one, is refused with nothing written."""
    work = edit(cli, canonical, "2")
    key = trailer.split(":")[0]
    lines = [ln for ln in git(work, "log", "-1", "--format=%B").rstrip("\n").split("\n")
             if not ln.startswith(f"{key}:")]
    git(work, "commit", "-q", "--amend", "--cleanup=verbatim", "-m",
        "\n".join([*lines, trailer]) + "\n")
    err = refused(cli, canonical)
    assert says in err and "commit " in err and "(tiny : bump op 02)" in err, err
    git(work, "reset", "-q", "--hard", "HEAD@{1}")
    replace_in(work / "README.md", "A small C library.", "A small C library, patched.")
    git(work, "commit", "-q", "-a", "-m", f"docs : patched\n\n{trailer}")
    err = refused(cli, canonical)
    assert says in err and "(docs : patched)" in err, err


def test_a_trailer_given_twice_with_new_values_is_refused(cli, canonical: Path) -> None:
    """refresh --all: a message sets one value per trailer key, as `header --set` does."""
    work = edit(cli, canonical, "2")
    message = git(work, "log", "-1", "--format=%B").replace("Concern: bump\n",
                                                            "Concern: a\nConcern: b\n")
    git(work, "commit", "-q", "--amend", "--cleanup=verbatim", "-m", message)
    assert "`Concern:` is given 2 times" in refused(cli, canonical)


def test_an_order_where_a_later_patch_no_longer_applies_is_refused(cli,
                                                                   canonical: Path) -> None:
    """refresh --all: when a patch after the edited one no longer applies on top of the
    commits, nothing is written (plain refresh only warns)."""
    work = edit(cli, canonical, "2")
    replace_in(work / "include/tiny.h", "int tiny_version(void);\n",
               "int tiny_version(void); /* v */\n")
    git(work, "commit", "-q", "-a", "-m", "tiny : note the version\n\nScope: include/**")
    err = refused(cli, canonical)
    assert f"{T3} (#4) no longer applies" in err


def test_uncommitted_changes_and_other_bad_states_are_refused(cli, canonical: Path,
                                                              upstream: Upstream,
                                                              tmp_path: Path) -> None:
    """refresh --all: uncommitted changes (tracked or new files) belong to no commit, a
    rebase stopped half-way is not the history meant, NAME makes no sense with --all."""
    r = cli("-C", str(canonical), "refresh", "--all")
    assert r.code == 2 and "no edit in progress" in r.err
    work = edit(cli, canonical, "2")
    replace_in(work / "src/tiny.c", "x * 4 + 1;", "x * 4 + 3;")
    assert "uncommitted changes: commit them first" in refused(cli, canonical)
    git(work, "checkout", "-q", "--", "src/tiny.c")
    (work / "new.txt").write_text("x\n")
    assert "uncommitted changes" in refused(cli, canonical)
    (work / "new.txt").unlink()
    rebase(work, upstream.commits["base"], tmp_path,
           lambda picks: [picks[0].replace("pick", "edit"), picks[1]])
    assert "a git rebase is stopped half-way" in refused(cli, canonical)
    git(work, "rebase", "--abort")
    r = cli("-C", str(canonical), "refresh", "--all", "2")
    assert r.code == 2 and "give no NAME" in r.err
    assert refresh_all(cli, canonical)["written"] == []


def test_refused_while_a_new_patch_is_not_written(cli, canonical: Path) -> None:
    """refresh --all: an edit opened by `new` holds a patch not yet in the series."""
    assert cli("-C", str(canonical), "new", "cube", "--concern", "cube", "--scope",
               "src/util.c").code == 0
    assert "is not written yet" in refused(cli, canonical)


def test_the_conflicts_note_git_leaves_in_a_message_is_dropped(cli, canonical: Path) -> None:
    """After a conflicted `git rebase -i` step, `git commit --no-edit` keeps git's
    `# Conflicts:` note at the end of the message; refresh --all took it for the body and
    wrote the trailers twice. It is dropped, as git drops it from an edited message."""
    before = (canonical / "stack/patches" / T3).read_bytes()
    work = edit(cli, canonical, "3")
    message = git(work, "log", "-1", "--format=%B").rstrip("\n")
    note = message + "\n\n# Conflicts:\n#\tsrc/tiny.c\n#\tsrc/tiny.h\n"
    (work / ".msg").write_text(note)
    git(work, "commit", "-q", "--amend", "--cleanup=verbatim", "-F", ".msg")
    (work / ".msg").unlink()
    assert "# Conflicts:" in git(work, "log", "-1", "--format=%B")
    out = refresh_all(cli, canonical)
    assert by_file(out)[T3]["status"] == "kept"
    assert (canonical / "stack/patches" / T3).read_bytes() == before
    verifies(cli, canonical)


def undated(project: Path) -> dict[str, str]:
    """Every file of the stack by path, without the Date line a new patch gets from the clock."""
    return {p.relative_to(project).as_posix(): "".join(
        ln for ln in p.read_text().splitlines(keepends=True) if not ln.startswith("Date: "))
        for p in sorted((project / "stack").rglob("*")) if p.is_file()}


def test_a_kill_at_any_point_is_finished_by_running_it_again(cli, canonical: Path,
                                                             tmp_path: Path) -> None:
    """refresh --all: SIGKILLed just after the stack swap, before the edit state named the
    new patch, the next `refresh --all` failed ("the edited patch is no longer in the
    series; start again with `patchctl edit NAME --reset`"), the discarding advice, though
    the stack was whole. The edit state goes with the swap: at each kill point (just before
    each rename, removal or swap) running the command again finishes it, to the stack and
    edit state of a run that was never killed."""
    work = edit(cli, canonical, "3")
    git(work, "commit", "-q", "--amend", "-m", "tiny : declare square, reworded\n\n"
        "Why.\n\nConcern: declare\nUpstream-Status: Pending\nScope: include/*.h")
    whole = tmp_path / "whole"
    shutil.copytree(canonical, whole, symlinks=True)
    out = refresh_all(cli, whole)
    new = "0004-tiny-declare-square-reworded.patch"
    assert out["target"] == new and series(whole) == [T1, T2, new]
    done, done_state = undated(whole), state(whole)
    killer = Path(__file__).with_name("killer.py")
    n = 0
    while True:
        n += 1
        trial = tmp_path / f"kill{n}"
        shutil.copytree(canonical, trial, symlinks=True)
        run = subprocess.run([sys.executable, str(killer), str(n), "-C", str(trial), "refresh",
                              "--all"], capture_output=True, text=True, check=False,
                             cwd=Path(__file__).resolve().parent.parent)
        if run.returncode == 0:
            break
        assert run.returncode == -signal.SIGKILL, (n, run.stderr)
        r = cli("-C", str(trial), "refresh", "--all", "--json")
        assert r.code == 0, (n, r.err)
        assert undated(trial) == done and state(trial) == done_state, n
        assert sorted(p.name for p in trial.iterdir()) == [".patchctl", "stack"], n
        shutil.rmtree(trial)
    assert n > 4  # the swap and the state written after it were among the kill points
