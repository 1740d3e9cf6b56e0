"""rebase-pin over a synthetic history with planted breakage (tests/rebase_history.py)."""

from __future__ import annotations

import json
import math
import shutil
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from patchctl.model import stackwrite
from tests.builders import Upstream, git, make_project, system_config_off
from tests.rebase_history import PATCH_NAMES, History, make_history

KILLER = Path(__file__).with_name("killer.py")
P = dict(enumerate(PATCH_NAMES, start=1))


@pytest.fixture(scope="session")
def _history_template(tmp_path_factory: pytest.TempPathFactory) -> History:
    root = tmp_path_factory.mktemp("history")
    with system_config_off():
        return make_history(root)


@pytest.fixture
def history(_history_template: History, tmp_path: Path) -> History:
    dest = tmp_path / "upstream"
    shutil.copytree(_history_template.upstream.path, dest, symlinks=True)
    return History(Upstream(dest, dict(_history_template.upstream.commits)),
                   list(_history_template.patches))


@pytest.fixture
def proj(tmp_path: Path, history: History) -> Path:
    return make_project(tmp_path / "project", history.upstream, history.patches)


def snap(project: Path) -> dict[str, str]:
    return stackwrite.snapshot(project / "stack")


def rebase(cli, project: Path, *args: str):
    return cli("-C", str(project), "rebase-pin", *args)


def rebase_json(cli, project: Path, *args: str) -> tuple[int, dict]:
    r = rebase(cli, project, *args, "--json")
    assert r.out, r.err
    return r.code, json.loads(r.out)


def by_name(data: dict) -> dict[str, dict]:
    return {p["name"]: p for p in data["patches"]}


def settle(cli, project: Path, *args: str) -> tuple[int, dict]:
    """rebase-pin ARGS, then --continue at each doubted move, as a person who judges it
    right does: the history's 0007, half of which upstream made, stops as one."""
    code, data = rebase_json(cli, project, *args)
    while (code, data["status"]) == (1, "stopped") and by_name(data)[data["conflict"]]["doubted"]:
        code, data = rebase_json(cli, project, "--continue")
    return code, data


# -- classification and bisect ----------------------------------------------------------------


def test_check_classifies_every_patch_and_writes_nothing(cli, proj: Path) -> None:
    before = snap(proj)
    code, data = rebase_json(cli, proj, "master", "--check")
    assert code == 1  # a conflict and two landed patches
    assert data["schema"] == "patchctl.rebase/1" and data["status"] == "checked"
    assert [p["grade"] for p in data["patches"]] == [
        "exact", "offset", "offset", "3way", "conflict", "upstream", "3way", "upstream"]
    assert data["commits"] == 48
    pats = by_name(data)
    assert pats[P[2]]["offsets"] == [{"file": "src/tiny.c", "hunk": 1, "offset": 3, "line": 29}]
    assert pats[P[5]]["conflicts"] == ["src/tiny.c"]
    assert pats[P[6]]["after_conflict"] is True
    assert snap(proj) == before
    assert not (proj / ".patchctl").exists()


def test_check_at_the_pin_itself_says_nothing_to_move(cli, proj: Path) -> None:
    """Regression: `rebase-pin --check` to the commit the stack is pinned
    at said "not a descendant of the pin"; it is the pin itself: 0 commits, nothing to move."""
    pin = tomllib.loads((proj / "stack/upstream.toml").read_text())["commit"]
    code, data = rebase_json(cli, proj, pin, "--check")
    assert code == 0 and data["commits"] == 0 and data["base"] is None
    assert {p["grade"] for p in data["patches"]} == {"exact"}
    first = rebase(cli, proj, pin, "--check").out.splitlines()[0]
    assert first.endswith("; the pin itself: nothing to move)") and "descendant" not in first


def test_check_text_columns_are_aligned_with_long_names(cli, proj: Path) -> None:
    """`rebase-pin --check` padded names to 44 characters, so a longer name
    (common in llama.cpp's stack) pushed its grade and verdict out of line."""
    long = "0003-tiny-declare-tiny_square-in-the-public-header-for-callers"
    assert cli("-C", str(proj), "rename", "0003", long).code == 0
    out = rebase(cli, proj, "master", "--check").out.splitlines()
    assert out[1].split() == ["#", "patch", "grade", "verdict"]
    rows = [line for line in out[2:] if line[:1].isdigit()]
    grades = [line.split()[2] for line in rows]
    assert len(rows) == 8 and len({line.index(f"  {g}") for line, g in zip(rows, grades,
                                                                         strict=True)}) == 1


def test_landed_patches_name_their_upstream_commit(cli, proj: Path, history: History) -> None:
    _, data = rebase_json(cli, proj, "master", "--check")
    c = history.upstream.commits
    landed_reverse = by_name(data)[P[6]]["landed"]
    assert landed_reverse["how"] == "reverse-apply"
    assert landed_reverse["commit"] == {"id": c["c22"],
                                        "subject": "util : add tiny_min, mention it (#122)"}
    assert landed_reverse["checks"] <= math.ceil(math.log2(48)) + 2
    landed_id = by_name(data)[P[8]]["landed"]
    assert landed_id == {"how": "patch-id", "checks": 0, "reference": None,
                         "commit": {"id": c["c36"], "subject": "tiny : advertise tiny_min (#136)"}}
    assert by_name(data)[P[8]]["change"] == "dropped"


def test_bisect_finds_the_first_breaking_commit(cli, proj: Path, history: History) -> None:
    code, data = rebase_json(cli, proj, "master", "--check", "--bisect")
    assert code == 1
    c = history.upstream.commits
    expected = {P[4]: ("c13", "tiny : reword op 10 comment (#113)"),
                P[5]: ("c31", "tiny : retune op 15 (#131)"),
                P[7]: ("c28", "cmake : build tests by default (#128)")}
    bound = math.ceil(math.log2(48)) + 2
    for name, (label, subject) in expected.items():
        b = by_name(data)[name]["bisect"]
        assert b["commit"] == {"id": c[label], "subject": subject}, name
        assert (b["commits"], b["bound"]) == (48, bound)
        assert b["checks"] == 7 <= bound, name  # 2 ends + 5 halvings of 48
    assert data["bisect_checks"] == 21
    for name in (P[1], P[2], P[3], P[6], P[8]):
        assert by_name(data)[name]["bisect"] is None
    text = rebase(cli, proj, "master", "--check", "--bisect").out
    assert f"first broken by {c['c13'][:12]} 'tiny : reword op 10 comment (#113)'" in text
    assert "7 checks for 48 commits; bound 8" in text


def test_bisect_skips_the_side_branch_of_a_merge(cli, proj: Path, history: History) -> None:
    """First-parent only: the two side commits merged at c40 are never candidates."""
    c40 = history.upstream.commits["c40"]
    side = git(history.upstream.path, "rev-list", f"{c40}^1..{c40}^2").split()
    _, data = rebase_json(cli, proj, "master", "--check", "--bisect")
    found = {p["bisect"]["commit"]["id"] for p in data["patches"] if p["bisect"]}
    assert len(side) == 2 and not found & set(side)


# -- a clean rebase ----------------------------------------------------------------------------


def test_rebase_refreshes_patches_pin_and_lock(cli, proj: Path, history: History) -> None:
    c20 = history.upstream.commits["c20"]
    old = {n: (proj / "stack/patches" / n).read_bytes() for n in PATCH_NAMES}
    code, data = rebase_json(cli, proj, c20)
    assert code == 0, data
    assert data["status"] == "rebased"
    assert {p["name"]: (p["grade"], p["change"]) for p in data["patches"]} == {
        P[1]: ("exact", "unchanged"), P[2]: ("offset", "context-only"),
        P[3]: ("exact", "unchanged"), P[4]: ("3way", "context-only"),
        P[5]: ("offset", "context-only"), P[6]: ("exact", "unchanged"),
        P[7]: ("exact", "unchanged"), P[8]: ("exact", "unchanged")}
    for n in (P[1], P[3], P[6], P[7], P[8]):
        assert (proj / "stack/patches" / n).read_bytes() == old[n], n
    assert (proj / "stack/patches" / P[4]).read_bytes() != old[P[4]]
    assert f'commit = "{c20}"' in (proj / "stack/upstream.toml").read_text()
    assert f'fingerprint = "{data["fingerprint"]}"' in (proj / "stack/stack.lock").read_text()
    v = cli("-C", str(proj), "verify", "--json")
    assert v.code == 0, v.out
    assert {p["grade"] for p in json.loads(v.out)["patches"]} == {"exact"}
    # A second run to the same commit finds nothing to do and writes nothing.
    before = snap(proj)
    code, again = rebase_json(cli, proj, c20)
    assert (code, again["status"]) == (0, "up-to-date")
    assert snap(proj) == before


def test_rebase_output_is_deterministic(cli, tmp_path: Path, history: History) -> None:
    c20 = history.upstream.commits["c20"]
    results = []
    for name in ("one", "two"):
        project = make_project(tmp_path / name, history.upstream, history.patches)
        assert rebase(cli, project, c20).code == 0
        results.append(snap(project))
    assert results[0] == results[1]


def test_refresh_after_rebase_is_byte_identical(cli, proj: Path, history: History) -> None:
    assert rebase(cli, proj, history.upstream.commits["c20"]).code == 0
    before = snap(proj)
    for name in (P[2], P[4]):
        assert cli("-C", str(proj), "edit", name).code == 0
        r = cli("-C", str(proj), "refresh")
        assert r.code == 0 and "unchanged" in r.out, r.out + r.err
    assert snap(proj) == before


def test_landed_patches_stop_the_rebase_until_dropped(cli, proj: Path, history: History) -> None:
    before = snap(proj)
    code, data = rebase_json(cli, proj, "v2")
    assert (code, data["status"]) == (1, "needs-drop")
    assert "--drop-upstream" in data["message"]
    assert snap(proj) == before
    r = rebase(cli, proj, "v2", "--drop-upstream")
    # the consent drops whole patches; one a merge left without part of its change stops
    assert r.code == 1 and "upstream in part; stopped here: judge it" in r.out, r.out + r.err
    r = cli("-C", str(proj), "rebase-pin", "--continue")  # taken as it stands
    assert r.code == 0, r.out + r.err
    assert "content changed" in r.out and "interdiff:" in r.out
    assert "-+option(TINY_BUILD_TESTS \"Build tiny's own tests\" ON)" in r.out
    series = (proj / "stack/series").read_text()
    assert P[6] not in series and not (proj / "stack/patches" / P[6]).exists()
    pin = (proj / "stack/upstream.toml").read_text()
    assert f'commit = "{history.upstream.commits["c30"]}"' in pin and 'tag = "v2"' in pin
    assert cli("-C", str(proj), "verify").code == 0


# -- conflicts: stop, continue, abort -------------------------------------------------------------


def _stop_at_conflict(cli, proj: Path) -> Path:
    before = snap(proj)
    code, data = rebase_json(cli, proj, "master", "--drop-upstream")
    assert (code, data["status"], data["conflict"]) == (1, "stopped", P[5])
    assert snap(proj) == before
    work = Path(data["work"])
    assert work == proj / ".patchctl/rebase/work"
    assert "<<<<<<<" in (work / "src/tiny.c").read_text()
    log = git(work, "log", "--format=%s", "-5").splitlines()
    assert log[:4] == ["tiny : scale op 10", "tiny : declare tiny_square", "tiny : bump op 02",
                       "util : add tiny_square"]
    return work


def test_conflict_resolve_and_continue(cli, proj: Path) -> None:
    work = _stop_at_conflict(cli, proj)
    again = rebase(cli, proj, "--continue")
    assert again.code == 2 and "conflicts remain" in again.err and "src/tiny.c" in again.err
    text = (work / "src/tiny.c").read_text()
    start, end = text.index("<<<<<<<"), text.index(">>>>>>>")
    end = text.index("\n", end) + 1
    (work / "src/tiny.c").write_text(text[:start] + "        y -= 19;\n" + text[end:])
    git(work, "add", "src/tiny.c")
    (work / "notes.txt").write_text("scratch\n")
    loose = rebase(cli, proj, "--continue")
    assert loose.code == 2 and "not staged" in loose.err and "notes.txt" in loose.err
    (work / "notes.txt").unlink()
    code, data = settle(cli, proj, "--continue")
    assert (code, data["status"]) == (0, "rebased"), data
    pats = by_name(data)
    assert pats[P[5]]["resolved"] is True and pats[P[5]]["change"] == "content-changed"
    assert "+        y -= 19;" in pats[P[5]]["interdiff"]
    assert [pats[n]["change"] for n in (P[6], P[7], P[8])] == [
        "dropped", "content-changed", "dropped"]
    assert "y -= 19;" in (proj / "stack/patches" / P[5]).read_text()
    assert not (proj / ".patchctl/rebase").exists()
    assert cli("-C", str(proj), "verify").code == 0


def test_abort_leaves_exactly_the_old_stack(cli, proj: Path) -> None:
    before = snap(proj)
    _stop_at_conflict(cli, proj)
    busy = rebase(cli, proj, "v2")
    assert busy.code == 2 and "is in progress" in busy.err
    r = rebase(cli, proj, "--abort")
    assert r.code == 0 and "as it was" in r.out
    assert snap(proj) == before
    assert not (proj / ".patchctl/rebase").exists()
    assert rebase(cli, proj, "--abort").code == 2


# -- bad input: one line, exit 2 (3 for a busy stack), nothing written ---------------------------


def _refused(r, code: int, fragment: str) -> None:
    assert r.code == code, r.out + r.err
    assert fragment in r.err
    assert len(r.err.strip().splitlines()) == 1, r.err
    assert r.out == ""


def test_new_ref_not_in_upstream(cli, proj: Path) -> None:
    before = snap(proj)
    _refused(rebase(cli, proj, "no-such-tag"), 2, "is not a commit, tag or branch in upstream")
    _refused(rebase(cli, proj, "f" * 40), 2, "is not a commit, tag or branch")
    assert snap(proj) == before and not (proj / ".patchctl/rebase").exists()


def test_downgrade_is_refused_unless_allowed(cli, proj: Path, history: History) -> None:
    c = history.upstream.commits
    assert rebase(cli, proj, c["c20"]).code == 0
    before = snap(proj)
    _refused(rebase(cli, proj, c["c10"]), 2, "is older than the current pin")
    assert snap(proj) == before
    code, data = rebase_json(cli, proj, c["c10"], "--allow-downgrade")
    assert (code, data["status"], data["commits"]) == (0, "rebased", None)
    assert f'commit = "{c["c10"]}"' in (proj / "stack/upstream.toml").read_text()


def test_continue_without_a_rebase(cli, proj: Path) -> None:
    _refused(rebase(cli, proj, "--continue"), 2, "no rebase-pin in progress")
    _refused(rebase(cli, proj, "--abort"), 2, "no rebase-pin in progress")


def test_continue_with_a_damaged_state(cli, proj: Path) -> None:
    _stop_at_conflict(cli, proj)
    (proj / ".patchctl/rebase/state.json").write_text("{not json")
    _refused(rebase(cli, proj, "--continue"), 2, "unreadable rebase state")
    assert rebase(cli, proj, "--abort").code == 0


@pytest.mark.parametrize(("edit", "fragment"), [
    (lambda d: d.pop("head"), "damaged rebase state ('head' missing"),
    (lambda d: d.update(commits="many"), "damaged rebase state ('commits' missing or of the"),
    (lambda d: d["done"][0].pop("result"), "damaged rebase state ('result'"),
    (lambda d: d.update(schema="patchctl.rebase-state/1"), "from an older patchctl"),
    (lambda d: d.update(schema="patchctl.rebase/1"), "not a rebase state this patchctl"),
])
def test_rebase_state_is_validated_on_load(cli, proj: Path, edit, fragment: str) -> None:
    """Typed state: a field missing or of the wrong type is one line, exit 2,
    not a KeyError later."""
    _stop_at_conflict(cli, proj)
    path = proj / ".patchctl/rebase/state.json"
    data = json.loads(path.read_text())
    assert data["schema"] == "patchctl.rebase-state/2" and data["done"]
    edit(data)
    path.write_text(json.dumps(data))
    _refused(rebase(cli, proj, "--continue"), 2, fragment)
    assert rebase(cli, proj, "--abort").code == 0


def test_usage_errors(cli, proj: Path) -> None:
    _refused(rebase(cli, proj), 2, "missing NEW_REF")
    _refused(rebase(cli, proj, "--continue", "--abort"), 2, "cannot be combined")
    _refused(rebase(cli, proj, "master", "--continue"), 2, "takes no NEW_REF")


def test_two_runs_at_once_are_refused(cli, proj: Path) -> None:
    before = snap(proj)
    with stackwrite.stack_lock(proj, "a test holding the stack"):
        _refused(rebase(cli, proj, "v2", "--drop-upstream"), 3, "is busy: pid")
    assert snap(proj) == before
    assert settle(cli, proj, "v2", "--drop-upstream")[0] == 0


def test_uncommitted_hand_edits_are_never_lost(cli, proj: Path) -> None:
    git(proj, "init", "-q")
    git(proj, "add", "stack")
    git(proj, "commit", "-q", "-m", "stack")
    edited = proj / "stack/patches" / P[1]
    edited.write_text(edited.read_text().replace("Why: the downstream", "Why (edited): the"))
    before = snap(proj)
    _refused(rebase(cli, proj, "v2", "--drop-upstream"), 2, "has uncommitted changes")
    assert snap(proj) == before
    git(proj, "commit", "-q", "-am", "edit")
    assert settle(cli, proj, "v2", "--drop-upstream")[0] == 0
    assert "Why (edited)" in edited.read_text()  # carried into the rebased stack


def test_stale_lock_is_refused(cli, proj: Path) -> None:
    """Outside git, a diff edited by hand shows as a lock that no longer matches."""
    edited = proj / "stack/patches" / P[2]
    edited.write_text(edited.read_text().replace("x * 4 + 1;", "x * 4 + 2;"))
    before = snap(proj)
    _refused(rebase(cli, proj, "v2"), 2, f"is not current (changed: {P[2]})")
    assert snap(proj) == before


def test_stack_changed_during_a_stopped_rebase(cli, proj: Path) -> None:
    _stop_at_conflict(cli, proj)
    (proj / "stack/series").write_text((proj / "stack/series").read_text() + "# note\n")
    _refused(rebase(cli, proj, "--continue"), 2, "changed since the rebase started")
    assert "# note" in (proj / "stack/series").read_text()


# -- crashes --------------------------------------------------------------------------------------


def _killed(project: Path, n: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(KILLER), str(n), "-C", str(project),
                           "rebase-pin", *args], capture_output=True, text=True, check=False)


def test_kill_at_every_step_leaves_old_or_new_stack(cli, tmp_path: Path, history: History) -> None:
    """SIGKILL before each rename/replace/rmtree/exchange of a rebase: stack/ is whole."""
    c20 = history.upstream.commits["c20"]
    done = make_project(tmp_path / "done", history.upstream, history.patches)
    assert rebase(cli, done, c20).code == 0
    new = snap(done)
    project = make_project(tmp_path / "p", history.upstream, history.patches)
    old = snap(project)
    killed = 0
    for n in range(1, 60):
        run = _killed(project, n, c20)
        if run.returncode == 0:
            break
        assert run.returncode == -signal.SIGKILL, (n, run.stderr)
        killed += 1
        state = snap(project)
        assert state in (old, new), n
        if state == new:  # killed after the swap, while cleaning up: start over
            shutil.rmtree(project / "stack")
            make_project(tmp_path / "p", history.upstream, history.patches)
    assert killed >= 4
    assert snap(project) == new
    assert not [p for p in tmp_path.joinpath("p").iterdir() if ".patchctl-" in p.name]


def test_kill_while_stopping_at_a_conflict(cli, proj: Path) -> None:
    """A stop killed half-way leaves the stack alone and no state, or a whole state."""
    old = snap(proj)
    for n in range(1, 40):
        run = _killed(proj, n, "master", "--drop-upstream")
        assert snap(proj) == old
        if run.returncode == 1:
            break  # stopped normally: the state is complete
        assert run.returncode == -signal.SIGKILL, (n, run.stderr)
        state = proj / ".patchctl/rebase/state.json"
        if state.exists():
            assert rebase(cli, proj, "--abort").code == 0
    # The state left is whole: --continue knows the conflict is still unresolved.
    _refused(rebase(cli, proj, "--continue"), 2, "conflicts remain")


def test_empty_stack_moves_its_pin(cli, tmp_path: Path, history: History) -> None:
    project = make_project(tmp_path / "empty", history.upstream, [])
    code, data = rebase_json(cli, project, "v2")
    assert (code, data["status"], data["patches"]) == (0, "rebased", [])
    assert 'tag = "v2"' in (project / "stack/upstream.toml").read_text()
    assert cli("-C", str(project), "verify").code == 0


def test_progress_reports_patches_and_bisect_checks(proj: Path, history: History) -> None:
    from patchctl.model.stack import find_stack
    from patchctl.rebase import session as rebasing

    seen: list[str] = []
    result = rebasing.rebase_pin(proj, find_stack(proj), history.upstream.path, "master",
                               check=True, bisect=True, progress=seen.append)
    assert result.status == "checked"
    assert f"[1/8] {P[1]}" in seen
    assert any(m.startswith(f"bisect {P[4]}: check 3,") for m in seen)


def _resolve_tiny(work: Path) -> None:
    text = (work / "src/tiny.c").read_text()
    start, end = text.index("<<<<<<<"), text.index(">>>>>>>")
    end = text.index("\n", end) + 1
    (work / "src/tiny.c").write_text(text[:start] + "        y -= 19;\n" + text[end:])
    git(work, "add", "src/tiny.c")


def test_continue_killed_at_every_step_loses_nothing(cli, tmp_path: Path,
                                                      history: History) -> None:
    """Bug: --continue committed the resolution in the work tree and saved its
    state only after; killed in between, the next --continue saw the committed patch as
    'resolved to nothing' (or 'upstream') and dropped it from stack/."""
    ref = make_project(tmp_path / "ref", history.upstream, history.patches)
    _resolve_tiny(_stop_at_conflict(cli, ref))
    assert settle(cli, ref, "--continue")[0] == 0
    new = snap(ref)
    project = make_project(tmp_path / "p", history.upstream, history.patches)
    old = snap(project)
    _resolve_tiny(_stop_at_conflict(cli, project))
    killed = 0
    for n in range(1, 40):
        run = _killed(project, n, "--continue", "--drop-upstream")
        if run.returncode in (0, 1):  # done, or stopped at the doubted move
            break
        assert run.returncode == -signal.SIGKILL, (n, run.stderr)
        killed += 1
        assert snap(project) in (old, new), n
        if snap(project) == new:
            break
    assert killed >= 1
    if (project / ".patchctl/rebase/state.json").exists():
        assert settle(cli, project, "--continue")[0] == 0
    assert snap(project) == new
    assert P[5] in (project / "stack/series").read_text()


def test_work_tree_commits_are_never_graded_upstream(cli, proj: Path) -> None:
    """Bug: a patch that reverse-applies only because our own work tree
    already carries it was graded 'upstream' and dropped with --drop-upstream."""
    work = _stop_at_conflict(cli, proj)
    _resolve_tiny(work)
    # The user commits the resolution by hand, then --continue: the commit is the
    # resolution, not an upstream landing.
    git(work, "commit", "-q", "-m", "resolved")
    code, data = settle(cli, proj, "--continue")
    assert (code, data["status"]) == (0, "rebased"), data
    pats = by_name(data)
    assert pats[P[5]]["resolved"] is True and pats[P[5]]["change"] == "content-changed"
    assert "y -= 19;" in (proj / "stack/patches" / P[5]).read_text()


def test_a_patch_upstream_never_touched_is_not_graded_upstream(proj: Path,
                                                               history: History) -> None:
    """Bug: classify graded 'upstream' any patch that reverse-applied, even one
    whose files upstream never changed (it was only in our own tree), so --drop-upstream
    deleted it."""
    from patchctl import gitrepo
    from patchctl.model.stack import find_stack
    from patchctl.rebase import engine as rebase

    sources = rebase.sources_of(find_stack(proj))
    first = sources[:1]
    repo = gitrepo.git_dir(history.upstream.path)
    with gitrepo.temp_index(repo) as index:
        index.read_tree(history.upstream.commits["base"])
        assert index.apply([first[0].path]).ok
        ours = index.write_tree()  # the pin with patch 1 already in it
        unguarded = rebase.classify(index, first, ours)
        guarded = rebase.classify(index, first, ours, landable=frozenset({"README.md"}))
    assert unguarded[0].result.grade == "upstream"
    assert guarded[0].result.grade == "conflict"


def test_new_ref_is_never_an_option_to_git_fetch(cli, proj: Path, history: History,
                                                 tmp_path: Path) -> None:
    """Bug: with a URL pin, a NEW_REF beginning with '-' reached `git fetch`:
    `--upload-pack=touch X; git-upload-pack` ran the command and exited 0."""
    pin = proj / "stack/upstream.toml"
    pin.write_text(pin.read_text().replace(f'url = "{history.upstream.path}"',
                                           f'url = "file://{history.upstream.path}"'))
    marker = tmp_path / "pwned"
    for ref in (f"--upload-pack=touch {marker}; git-upload-pack", "-oops"):
        r = rebase(cli, proj, "--check", "--", ref)
        assert r.code == 2 and "starts with '-'" in r.err, r.err
    assert not marker.exists()
    bad = rebase(cli, proj, "--check", "no..such..ref")
    assert bad.code == 2 and not marker.exists()


def test_ambiguous_new_ref_is_refused(cli, proj: Path, history: History) -> None:
    """Bug: a tag and a branch of one name were resolved silently."""
    git(history.upstream.path, "tag", "twin", history.upstream.commits["c10"])
    git(history.upstream.path, "branch", "twin", history.upstream.commits["c20"])
    r = rebase(cli, proj, "--check", "twin")
    _refused(r, 2, "ambiguous")
    assert "refs/tags/twin" in r.err and "refs/heads/twin" in r.err


def test_a_stop_killed_at_any_point_resumes_with_continue(cli, tmp_path: Path,
                                                          history: History) -> None:
    """Every step is resumable. A stop killed after any of its saves (even
    after applying the conflict markers, before saving the conflict) leaves a state
    that --continue takes to the same stop, and the rebase to the same stack."""
    ref = make_project(tmp_path / "ref", history.upstream, history.patches)
    _resolve_tiny(_stop_at_conflict(cli, ref))
    assert settle(cli, ref, "--continue")[0] == 0
    new = snap(ref)
    resumed = 0
    for n in range(1, 40):
        project = make_project(tmp_path / f"p{n}", history.upstream, history.patches)
        run = _killed(project, n, "master", "--drop-upstream")
        if run.returncode == 1:
            break  # stopped normally: no kill point left
        assert run.returncode == -signal.SIGKILL, (n, run.stderr)
        if not (project / ".patchctl/rebase/state.json").exists():
            continue  # killed before the first save: nothing in progress
        code, data = rebase_json(cli, project, "--continue")
        assert (code, data["status"], data["conflict"]) == (1, "stopped", P[5]), (n, data)
        _resolve_tiny(project / ".patchctl/rebase/work")
        assert settle(cli, project, "--continue")[0] == 0, n
        assert snap(project) == new, n
        resumed += 1
    assert resumed >= 3


def test_a_resolution_can_change_the_patch_header(cli, proj: Path) -> None:
    """Bug: a conflict resolution could not change the patch's header: --continue always
    took the old one, so a fix that had to touch a file outside the old `Scope:` was
    refused, and a body explaining the new fix was lost. The stop now writes the header
    to .patchctl/rebase/header; what the user leaves there is the rebased patch's header
    and is what the re-check holds it to."""
    work = _stop_at_conflict(cli, proj)
    header = proj / ".patchctl/rebase/header"
    text = header.read_text()
    assert text.startswith("From 0000000000000000000000000000000000000000 ")
    assert "Subject: [PATCH 5/8] tiny : tighten op 15\n" in text
    assert text.endswith("Scope: src/tiny.c\n") and "\n---" not in text
    verb = cli("-C", str(proj), "header", "5", "--set", "Scope=src/tiny.c README.md")
    assert verb.code == 2 and str(header) in verb.err  # the verb says where to change it
    stopped = rebase(cli, proj, "--continue")  # conflicts remain: the header stays as it is
    assert stopped.code == 2 and header.read_text() == text
    _resolve_tiny(work)
    (work / "README.md").write_text((work / "README.md").read_text() + "Tightened op 15.\n")
    git(work, "add", "README.md")
    refused = rebase(cli, proj, "--continue")
    assert refused.code == 2 and "outside its Scope (src/tiny.c): README.md;" in refused.err
    assert str(header) in refused.err and "--widen-scope" in refused.err  # how to widen it
    header.write_text(text.replace("Why: the downstream needs it.",
                                   "Why: the downstream needs it; op 15 is documented.")
                      .replace("Upstream-Status: Pending", "Upstream-Status: Maybe"))
    bad = rebase(cli, proj, "--continue")
    assert bad.code == 2 and "Upstream-Status" in bad.err and str(header) in bad.err
    assert len(bad.err.strip().splitlines()) == 1
    header.write_text(text.replace("Why: the downstream needs it.",
                                   "Why: the downstream needs it; op 15 is documented.")
                      .replace("Scope: src/tiny.c", "Scope: src/tiny.c README.md"))
    code, data = settle(cli, proj, "--continue")
    assert (code, data["status"]) == (0, "rebased"), data
    patch = (proj / "stack/patches" / P[5]).read_text()
    assert "Why: the downstream needs it; op 15 is documented.\n" in patch
    assert "Scope: src/tiny.c README.md\n---\n" in patch and "+Tightened op 15." in patch
    assert cli("-C", str(proj), "verify").code == 0


def test_a_changed_header_survives_a_killed_continue(cli, tmp_path: Path,
                                                    history: History) -> None:
    """The header changed at a stop is kept however often --continue is killed and rerun
    (it is staged with the resolution, in the same save)."""
    project = make_project(tmp_path / "p", history.upstream, history.patches)
    _resolve_tiny(_stop_at_conflict(cli, project))
    header = project / ".patchctl/rebase/header"
    status = "Upstream-Status: Submitted [https://example.invalid/5]"
    header.write_text(header.read_text().replace("Upstream-Status: Pending", status))
    for n in range(1, 40):
        run = _killed(project, n, "--continue", "--drop-upstream")
        if run.returncode in (0, 1) or not (project / ".patchctl/rebase/state.json").exists():
            break
        assert run.returncode == -signal.SIGKILL, (n, run.stderr)
    if (project / ".patchctl/rebase/state.json").exists():
        assert settle(cli, project, "--continue")[0] == 0
    assert f"{status}\n" in (project / "stack/patches" / P[5]).read_text()
