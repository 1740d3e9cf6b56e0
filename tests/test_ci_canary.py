"""The upstream canary: `ci summary` over rebase-pin reports, and `ci tip`.

The golden summary comes from a synthetic report with every grade, a landed, two
superseded patches (the field another command fills in: both shapes) and fields
this code does not know; a real `rebase-pin --check --bisect --json` over the
planted history of tests/rebase_history.py checks the same path end to end.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
from pathlib import Path

import pytest

from patchctl.ci import canary
from tests.builders import Upstream, commit_all, make_project, system_config_off
from tests.rebase_history import PATCH_NAMES, History, make_history

GOLDEN = Path(__file__).parent / "fixtures" / "ci" / "canary-summary.md"
UPDATE_GOLDEN = bool(os.environ.get("PATCHCTL_UPDATE_GOLDEN"))
OLD, NEW, PREV_NEW = "1" * 40, "2" * 40, "3" * 40
C_BREAK, C_LAND, C_SUPER = "a" * 40, "b" * 40, "c" * 40


def patch(index: int, name: str, grade: str, **extra) -> dict:
    return {"index": index, "name": name, "grade": grade, "offsets": [], "conflicts": [],
            "after_conflict": False, "landed": None, "bisect": None, "change": None,
            "interdiff": None, "resolved": False, **extra}


def synthetic_report() -> dict:
    bisect = {"commit": {"id": C_BREAK, "subject": "model : rework the loader | <fast>"},
              "checks": 9, "commits": 120, "bound": 9, "note": None}
    return {
        "schema": "patchctl.rebase/1", "ok": False, "stack": "/x/stack", "old": OLD,
        "new": NEW, "new_ref": "HEAD", "mode": "check", "status": "checked", "commits": 120,
        "bisect_checks": 18, "fingerprint": None, "work": None, "conflict": None,
        "message": "", "seconds": 0.5, "a_field_added_later": {"anything": [1, 2]},
        "patches": [
            patch(1, "0001-exact.patch", "exact", change="unchanged"),
            patch(2, "0002-offset.patch", "offset", change="context-only",
                  offsets=[{"file": "src/a.c", "hunk": 1, "offset": 3},
                           {"file": "src/a.c", "hunk": 2, "offset": 3}]),
            patch(3, "0003-threeway.patch", "3way", change="content-changed",
                  bisect={"commit": None, "checks": 2, "commits": 120, "bound": 9,
                          "note": "its state at the new pin depends on the rebased patches "
                                  "before it, not on one upstream commit"}),
            patch(4, "0004-conflict-new.patch", "conflict", bisect=bisect,
                  conflicts=["src/llama-model.cpp", "src/llama-model.h"],
                  superseded={"commit": {"id": C_SUPER, "subject": "llama : range loading"},
                              "contains": 0.8, "since": "b1234"}),
            patch(5, "0005-conflict-old.patch", "conflict", conflicts=["src/b.c"],
                  bisect={**bisect, "commit": {"id": C_BREAK, "subject": "old break"}}),
            patch(6, "0006-landed.patch", "upstream", change="dropped",
                  landed={"commit": {"id": C_LAND, "subject": "util : add tiny_min (#42)"},
                          "how": "patch-id", "checks": 0}),
            patch(7, "0007-fixed.patch", "exact", change="unchanged",
                  superseded="upstream rewrote this API in #77"),
        ],
    }


def previous_report() -> dict:
    prev = copy.deepcopy(synthetic_report())
    prev["new"] = PREV_NEW
    grades = {"0005-conflict-old.patch": "conflict", "0007-fixed.patch": "conflict",
              "0004-conflict-new.patch": "offset"}
    for p in prev["patches"]:
        p["grade"] = grades.get(p["name"], "exact")
    return prev


def write(path: Path, data: dict) -> Path:
    path.write_text(json.dumps(data, indent=2))
    return path


def test_golden_summary(cli, tmp_path: Path) -> None:
    report = write(tmp_path / "report.json", synthetic_report())
    prev = write(tmp_path / "prev.json", previous_report())
    outputs = tmp_path / "github-output"
    outputs.write_text("earlier=1\n")
    r = cli("-C", str(tmp_path), "ci", "summary", str(report), "--previous", str(prev),
            "--url", "https://github.com/ggml-org/llama.cpp", "--markdown",
            str(tmp_path / "summary.md"), "--outputs", str(outputs))
    assert r.code == 1, r.err  # 0004 is newly broken
    if UPDATE_GOLDEN:
        GOLDEN.write_text(r.out)
    assert r.out == GOLDEN.read_text()
    assert (tmp_path / "summary.md").read_text() == r.out
    assert outputs.read_text() == "earlier=1\nbroken=2\nnew=1\nfixed=1\nlanded=1\n"
    rows = {line.split(" | ")[1]: line for line in r.out.splitlines()
            if line.startswith("| ") and "`00" in line}
    assert "**newly broken**" in rows["`0004-conflict-new.patch`"]
    assert f"[`{C_BREAK[:12]}`](https://github.com/ggml-org/llama.cpp/commit/{C_BREAK})" \
        in rows["`0004-conflict-new.patch`"]
    # Markdown in a subject is text, not a broken table or HTML.
    assert r"model : rework the loader \| \<fast\>" in rows["`0004-conflict-new.patch`"]
    assert rows["`0005-conflict-old.patch`"].endswith("| still broken |")
    assert rows["`0007-fixed.patch`"].endswith("| fixed |")
    assert "offset (2 hunks moved)" in rows["`0002-offset.patch`"]
    assert "depends on the rebased patches" in rows["`0003-threeway.patch`"]
    assert "### Landed upstream" in r.out and "### Superseded upstream" in r.out
    assert "(it already holds 80% of the patch's added lines) (since: b1234)" in r.out


def test_compare_states() -> None:
    report = synthetic_report()
    states = {r.name: r.state for r in canary.compare(report, previous_report()).rows}
    assert states == {
        "0001-exact.patch": canary.APPLIES, "0002-offset.patch": canary.APPLIES,
        "0003-threeway.patch": canary.APPLIES, "0004-conflict-new.patch": canary.NEW,
        "0005-conflict-old.patch": canary.STILL, "0006-landed.patch": canary.LANDED,
        "0007-fixed.patch": canary.FIXED}
    # No previous report: the baseline is the pin, where everything applied.
    first = canary.compare(report, None)
    assert first.named(canary.NEW) == ["0004-conflict-new.patch", "0005-conflict-old.patch"]
    assert not first.ok
    # The same report twice: nothing is new, so the canary passes.
    again = canary.compare(report, report)
    assert again.ok and again.named(canary.STILL) == first.named(canary.NEW)
    # A patch the previous run did not have (added to the stack since) counts as new.
    prev = previous_report()
    prev["patches"] = [p for p in prev["patches"] if p["name"] != "0005-conflict-old.patch"]
    assert canary.compare(report, prev).named(canary.NEW) == [
        "0004-conflict-new.patch", "0005-conflict-old.patch"]


def status_report(new: str = NEW) -> dict:
    """What `upstream-status --ref NEW --json` says (the fields the canary reads, and more)."""
    def row(i: int, name: str, upstream: dict | None) -> dict:
        return {"index": i, "file": name, "concern": None, "status": "Pending", "detail": "",
                "problem": None, "references": [], "date": None, "pending_days": 3,
                "upstream": upstream, "online": []}

    return {"schema": "patchctl.upstream-status/1", "name": "llama.cpp", "pin": OLD,
            "ref": "HEAD", "ref_commit": new, "counts": {"Pending": 2}, "ok": True,
            "malformed": [], "unreferenced": [],
            "patches": [row(5, "0005-conflict-old.patch",
                            {"grade": "conflict", "verdict": "superseded", "contains": 0.833,
                             "first_breaking": {"id": C_BREAK, "subject": "old break"}}),
                        row(6, "0006-landed.patch",
                            {"grade": "upstream", "verdict": "landed", "how": "patch-id"})]}


def test_superseded_comes_from_upstream_status(cli, tmp_path: Path) -> None:
    report = synthetic_report()
    for p in report["patches"]:
        p.pop("superseded", None)
    assert "Superseded" not in canary.markdown(canary.compare(report, None))
    path = write(tmp_path / "report.json", report)
    status = write(tmp_path / "status.json", status_report())
    r = cli("-C", str(tmp_path), "ci", "summary", str(path), "--status", str(status))
    assert r.code == 1, r.err
    assert f"- `0005-conflict-old.patch`: by `{C_BREAK[:12]}` old break (it already holds 83% " \
        "of the patch's added lines)" in r.out
    assert "0006-landed.patch`: by" not in r.out  # landed, not superseded
    gone = cli("ci", "summary", str(path), "--status", str(tmp_path / "none.json"))
    assert "superseded patches not shown" in gone.err and "Superseded" not in gone.out
    other = write(tmp_path / "other.json", status_report(new="4" * 40))
    bad = cli("ci", "summary", str(path), "--status", str(other))
    assert bad.code == 2 and "run both at the same commit" in bad.err
    wrong = write(tmp_path / "wrong.json", {"schema": "patchctl.rebase/1", "patches": []})
    assert cli("ci", "summary", str(path), "--status", str(wrong)).code == 2


def test_missing_previous_compares_with_the_pin(cli, tmp_path: Path) -> None:
    report = write(tmp_path / "report.json", synthetic_report())
    r = cli("ci", "summary", str(report), "--previous", str(tmp_path / "none.json"), "--json")
    assert r.code == 1
    assert "no previous report at" in r.err
    data = json.loads(r.out)
    assert data["schema"] == "patchctl.canary/1" and data["previous"] is None
    assert data["newly_broken"] == ["0004-conflict-new.patch", "0005-conflict-old.patch"]


@pytest.mark.parametrize("content", ["not json", json.dumps({"schema": "patchctl.verify/1"}),
                                     json.dumps({"schema": "patchctl.rebase/1", "old": OLD,
                                                 "new": NEW, "patches": [{"name": 1}]})])
def test_a_file_that_is_not_a_report_is_a_usage_error(cli, tmp_path: Path,
                                                     content: str) -> None:
    (tmp_path / "r.json").write_text(content)
    r = cli("ci", "summary", str(tmp_path / "r.json"))
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1
    assert "rebase-pin" in r.err


# -- end to end: a real rebase-pin report ----------------------------------------------------


@pytest.fixture(scope="module")
def _history(tmp_path_factory: pytest.TempPathFactory) -> History:
    with system_config_off():
        return make_history(tmp_path_factory.mktemp("canary-history"))


@pytest.fixture
def history(_history: History, tmp_path: Path) -> History:
    dest = tmp_path / "upstream"
    shutil.copytree(_history.upstream.path, dest, symlinks=True)
    return History(Upstream(dest, dict(_history.upstream.commits)), list(_history.patches))


def test_summary_of_a_real_rebase_report(cli, tmp_path: Path, history: History) -> None:
    project = make_project(tmp_path / "project", history.upstream, history.patches)
    up = history.upstream
    r = cli("-C", str(project), "rebase-pin", up.head, "--check", "--bisect", "--json")
    assert r.code == 1, r.err
    report = write(tmp_path / "report.json", json.loads(r.out))
    s = cli("-C", str(project), "ci", "summary", str(report), "--json")
    assert s.code == 1
    data = json.loads(s.out)
    rows = {row["name"]: row for row in data["rows"]}
    assert data["name"] == "tiny" and data["newly_broken"] == [PATCH_NAMES[4]]
    assert rows[PATCH_NAMES[4]]["first_bad"]["id"] == up.commits["c31"]
    assert rows[PATCH_NAMES[1]]["grade"] == "offset" and rows[PATCH_NAMES[1]]["offsets"]
    assert [rows[PATCH_NAMES[i]]["state"] for i in (5, 7)] == [canary.LANDED] * 2
    assert rows[PATCH_NAMES[5]]["landed"]["commit"]["id"] == up.commits["c22"]
    text = cli("-C", str(project), "ci", "summary", str(report)).out
    row = next(ln for ln in text.splitlines() if ln.startswith(f"| 5 | `{PATCH_NAMES[4]}`"))
    assert f"`{up.commits['c31'][:12]}`" in row and row.endswith("| **newly broken** |")
    # upstream-status at the same commit: its verdicts feed the summary too.
    st = cli("-C", str(project), "upstream-status", "--ref", up.head, "--json")
    assert st.code == 0, st.err
    status = json.loads(st.out)
    verdicts = {p["file"]: p["upstream"]["verdict"] for p in status["patches"]}
    assert verdicts[PATCH_NAMES[5]] == "landed"
    status_file = write(tmp_path / "status.json", status)
    with_status = cli("-C", str(project), "ci", "summary", str(report), "--status",
                      str(status_file), "--json")
    superseded = {row["name"] for row in json.loads(with_status.out)["rows"] if row["superseded"]}
    assert superseded == {n for n, v in verdicts.items() if v == "superseded"}
    # The next night, nothing new: the canary passes and says the break persists.
    again = cli("-C", str(project), "ci", "summary", str(report), "--previous", str(report))
    assert again.code == 0 and "| still broken |" in again.out


def test_tip_fetches_the_default_branch_of_a_url_pin(cli, tmp_path: Path,
                                                     upstream: Upstream, patches) -> None:
    """`ci tip` must fetch the upstream's HEAD now, not resolve a ref in the cache clone."""
    project = make_project(tmp_path / "project", upstream, patches)
    pin = project / "stack" / "upstream.toml"
    pin.write_text(pin.read_text().replace(f'url = "{upstream.path}"',
                                           f'url = "file://{upstream.path}"'))
    first = cli("-C", str(project), "ci", "tip")
    assert first.code == 0, first.err
    assert first.out.strip() == upstream.head
    (upstream.path / "NEWS").write_text("news\n")
    newer = commit_all(upstream.path, "upstream moves on")
    assert cli("-C", str(project), "ci", "tip").out.strip() == newer
    # rebase-pin finds the tip in the cache clone that `ci tip` fetched it into.
    r = cli("-C", str(project), "rebase-pin", newer, "--check", "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["new"] == newer
    assert cli("-C", str(project), "ci", "tip", "no-such-branch").code == 2


def test_tip_of_a_local_upstream_resolves_there(cli, project: Path, upstream: Upstream) -> None:
    r = cli("-C", str(project), "ci", "tip", "master")
    assert r.code == 0 and r.out.strip() == upstream.head
    bad = cli("-C", str(project), "ci", "tip", "nope")
    assert bad.code == 2 and "'nope' is not a commit, tag or branch that can be found" in bad.err


@pytest.mark.parametrize("which", ["report", "previous"])
def test_a_malformed_report_from_the_cache_is_one_line(cli, tmp_path: Path, which: str) -> None:
    """`"bisect": "x"` in a report (the previous one comes from the Actions
    cache) gave a traceback; both are validated against their schema before use."""
    bad = synthetic_report()
    bad["patches"][3]["bisect"] = "x"
    good = write(tmp_path / "good.json", synthetic_report())
    path = write(tmp_path / "bad.json", bad)
    args = [str(path)] if which == "report" else [str(good), "--previous", str(path)]
    r = cli("ci", "summary", *args)
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r.err
    assert "at patches/3/bisect: 'x' is not of type 'object', 'null'" in r.err
    assert ("previous report" in r.err) == (which == "previous")
