"""Landed and superseded by reference (tests/reference_history.py): rebase-pin, --drop-upstream,
upstream-status --ref and the canary, on real temp repos."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.builders import (
    Upstream,
    default_trailers,
    format_patch,
    git,
    make_project,
    replace_in,
)
from tests.reference_history import (
    AVG_FN,
    SIGN_FN,
    URL,
    decl_patch,
    function_patch,
    make_reference_history,
    max_patch,
)


@pytest.fixture(scope="session")
def _template(tmp_path_factory: pytest.TempPathFactory) -> Upstream:
    from tests.builders import system_config_off

    with system_config_off():
        return make_reference_history(tmp_path_factory.mktemp("refhistory"))


@pytest.fixture
def up(_template: Upstream, tmp_path: Path) -> Upstream:
    return _template.copy(tmp_path / "upstream")


def project(tmp_path: Path, up: Upstream, texts: list[str], *, pin: str = "base",
            url: str = URL) -> Path:
    names = [f"{i:04d}-p{i}.patch" for i in range(1, len(texts) + 1)]
    return make_project(tmp_path / "project", up, list(zip(names, texts, strict=True)),
                        pin=up.commits[pin], url=url)


def rebase(cli, proj: Path, up: Upstream, *args: str) -> tuple[int, dict]:
    r = cli("-C", str(proj), "rebase-pin", "--upstream", str(up.path), *args, "--json")
    assert r.out, r.err
    return r.code, json.loads(r.out)


def first(data: dict) -> dict:
    return data["patches"][0]


def test_edited_backport_lands_by_reference(cli, tmp_path: Path, up: Upstream) -> None:
    proj = project(tmp_path, up, [max_patch(up, tmp_path / "s")])
    code, data = rebase(cli, proj, up, "master", "--check")
    p = first(data)
    assert code == 1 and p["grade"] == "upstream" and p["change"] == "dropped"
    assert p["landed"] == {"how": "reference", "reference": "#202", "checks": 0,
                           "commit": {"id": up.commits["r2"],
                                      "subject": "util : add tiny_max (#202)"}}
    assert p["superseded"] is None
    text = cli("-C", str(proj), "rebase-pin", "--upstream", str(up.path), "master",
               "--check").out
    assert (f"already upstream: landed in {up.commits['r2'][:12]} 'util : add tiny_max "
            "(#202)' (reference #202); propose dropping it") in text


def test_the_edited_backport_is_missed_without_its_reference(cli, tmp_path: Path,
                                                            up: Upstream) -> None:
    """The control: the same patch naming nothing is a conflict, so upstream's merge has
    another patch-id and the patch does not reverse-apply at the new pin."""
    proj = project(tmp_path, up, [max_patch(up, tmp_path / "s", subject="util : add tiny_max")])
    _, data = rebase(cli, proj, up, "master", "--check")
    assert first(data)["grade"] == "conflict" and first(data)["landed"] is None


@pytest.mark.parametrize(("url", "body"), [
    (URL, f"Backport of {URL}/pull/202."),
    ("git@github.com:Tiny-Org/tiny.git", "Backport of https://github.com/tiny-org/TINY/pull/202"),
    (URL + ".git", "Backport of tiny-org/tiny#202."),
    (URL, f"Backport of {URL}/issues/202 (GitHub numbers both alike)."),
])
def test_a_url_of_the_upstream_itself_counts(cli, tmp_path: Path, up: Upstream, url: str,
                                             body: str) -> None:
    proj = project(tmp_path, up, [max_patch(up, tmp_path / "s", subject="util : add tiny_max",
                                            body=body)], url=url)
    _, data = rebase(cli, proj, up, "master", "--check")
    assert first(data)["grade"] == "upstream"
    assert first(data)["landed"]["how"] == "reference"


@pytest.mark.parametrize(("subject", "body"), [
    ("util : add tiny_max", "Backport of https://github.com/other-org/tiny/pull/202."),
    ("util : add tiny_max (other-org/tiny#202)", "Why."),
    ("util : add tiny_max", "Backport of https://github.com/tiny-org/tiny-fork/pull/202."),
])
def test_a_pr_of_another_repository_never_counts(cli, tmp_path: Path, up: Upstream,
                                                 subject: str, body: str) -> None:
    proj = project(tmp_path, up, [max_patch(up, tmp_path / "s", subject=subject, body=body)])
    _, data = rebase(cli, proj, up, "master", "--check")
    assert first(data)["grade"] == "conflict"
    assert first(data)["landed"] is None and first(data)["superseded"] is None


def test_a_url_does_not_count_when_the_pin_is_not_on_github(cli, tmp_path: Path,
                                                            up: Upstream) -> None:
    proj = project(tmp_path, up, [max_patch(up, tmp_path / "s", subject="util : add tiny_max",
                                            body=f"Backport of {URL}/pull/202.")],
                   url=str(up.path))
    _, data = rebase(cli, proj, up, "master", "--check")
    assert first(data)["grade"] == "conflict" and first(data)["landed"] is None


def test_an_unmerged_pr_never_counts(cli, tmp_path: Path, up: Upstream) -> None:
    """#204 is named by an upstream commit (r4: "follow-up to #204 (#205)") but never merged."""
    text = format_patch(up, up.commits["base"],
                        lambda w: replace_in(w / "CMakeLists.txt", '" OFF)', '" ON)'),
                        subject="cmake : build tests by default (#204)", scratch=tmp_path / "s",
                        trailers=default_trailers("cmake", "CMakeLists.txt"))
    proj = project(tmp_path, up, [text])
    code, data = rebase(cli, proj, up, "master", "--check")
    assert code == 0 and first(data)["grade"] == "exact"
    assert first(data)["landed"] is None and first(data)["superseded"] is None


def test_a_pr_merged_after_the_new_pin_does_not_count(cli, tmp_path: Path,
                                                      up: Upstream) -> None:
    proj = project(tmp_path, up, [max_patch(up, tmp_path / "s")])
    code, data = rebase(cli, proj, up, up.commits["r1"], "--check")
    assert code == 0 and first(data)["grade"] == "exact" and first(data)["landed"] is None


def test_a_pr_merged_before_the_old_pin_does_not_count(cli, tmp_path: Path,
                                                       up: Upstream) -> None:
    """A follow-up that names #202, pinned after #202 merged: nothing of it is upstream."""
    text = format_patch(up, up.commits["r2"],
                        lambda w: replace_in(w / "src/util.c", "/* The larger of a and b. */",
                                             "/* The larger of a and b; a on ties. */"),
                        subject="util : say what tiny_max does on ties (#202)",
                        scratch=tmp_path / "s", trailers=default_trailers("max", "src/util.c"))
    proj = project(tmp_path, up, [text], pin="r2")
    code, data = rebase(cli, proj, up, "master", "--check")
    assert code == 0 and first(data)["grade"] == "exact"
    assert first(data)["landed"] is None and first(data)["superseded"] is None


@pytest.mark.parametrize("digits", [40, 9])
def test_a_cherry_pick_of_a_commit_in_range_lands(cli, tmp_path: Path, up: Upstream,
                                                  digits: int) -> None:
    sha = up.commits["r2"][:digits]
    proj = project(tmp_path, up, [max_patch(up, tmp_path / "s", subject="util : add tiny_max",
                                            body=f"Backport.\n\n(cherry picked from commit "
                                            f"{sha})")])
    _, data = rebase(cli, proj, up, "master", "--check")
    assert first(data)["grade"] == "upstream"
    assert first(data)["landed"]["reference"] == sha[:12]  # as the patch writes it
    assert first(data)["landed"]["commit"]["id"] == up.commits["r2"]


def test_a_cherry_pick_of_a_commit_out_of_range_does_not(cli, tmp_path: Path,
                                                         up: Upstream) -> None:
    proj = project(tmp_path, up, [max_patch(up, tmp_path / "s", subject="util : add tiny_max",
                                            body=f"(cherry picked from commit "
                                            f"{up.commits['r2']})")])
    _, data = rebase(cli, proj, up, up.commits["r1"], "--check")
    assert first(data)["grade"] == "exact" and first(data)["landed"] is None


@pytest.mark.parametrize("trailer", [
    {"Upstream-Status": f"Backport [{URL}/pull/202]"},
    {"Upstream-Status": "Backport [#202]"},
    {"Origin": "upstream, https://github.com/tiny-org/tiny/commit/{r2}"},
    {"Origin": "{r2}"},
])
def test_origin_and_backport_trailers_count(cli, tmp_path: Path, up: Upstream,
                                            trailer: dict[str, str]) -> None:
    trailer = {k: v.format(r2=up.commits["r2"]) for k, v in trailer.items()}
    proj = project(tmp_path, up, [max_patch(up, tmp_path / "s", subject="util : add tiny_max",
                                            trailers=trailer)])
    _, data = rebase(cli, proj, up, "master", "--check")
    assert first(data)["grade"] == "upstream"
    assert first(data)["landed"]["how"] == "reference"


def test_a_merge_commit_lands_a_pr(cli, tmp_path: Path, up: Upstream) -> None:
    """#206 merged as `Merge pull request #206 from dev/sign`: its diff against its first
    parent is what the patch is compared with."""
    proj = project(tmp_path, up, [function_patch(up, tmp_path / "s", SIGN_FN,
                                                 subject="util : add tiny_sign (#206)")])
    _, data = rebase(cli, proj, up, "master", "--check")
    assert first(data)["grade"] == "upstream"
    assert first(data)["landed"]["commit"] == {
        "id": up.commits["r5"], "subject": "Merge pull request #206 from dev/sign"}


def test_a_pr_reverted_in_range_does_not_count(cli, tmp_path: Path, up: Upstream) -> None:
    proj = project(tmp_path, up, [function_patch(up, tmp_path / "s", AVG_FN,
                                                 subject="util : add tiny_avg (#207)")])
    _, data = rebase(cli, proj, up, "master", "--check")
    assert first(data)["grade"] != "upstream"
    assert first(data)["landed"] is None and first(data)["superseded"] is None
    # ... while before the revert it lands
    _, data = rebase(cli, proj, up, up.commits["r6"], "--check")
    assert first(data)["landed"]["how"] == "reference"


def test_a_patch_that_adds_more_is_superseded_not_upstream(cli, tmp_path: Path,
                                                           up: Upstream) -> None:
    proj = project(tmp_path, up, [decl_patch(up, tmp_path / "s")])
    code, data = rebase(cli, proj, up, "master", "--check")
    p = first(data)
    assert code == 0 and p["grade"] == "offset" and p["landed"] is None
    sup = p["superseded"]
    assert sup["reference"] == "#203"
    assert sup["commit"] == {"id": up.commits["r3"], "subject": "tiny : declare tiny_min (#203)"}
    assert "-+int tiny_mid(int a, int b, int c);" in sup["interdiff"].splitlines()
    assert sup["interdiff"].splitlines()[:2] == [
        "--- patch/include/tiny.h", f"+++ upstream/{up.commits['r3'][:12]}/include/tiny.h"]
    text = cli("-C", str(proj), "rebase-pin", "--upstream", str(up.path), "master",
               "--check").out
    assert "superseded?; would be" in text
    assert (f"superseded?: it names #203, merged upstream in {up.commits['r3'][:12]} "
            "'tiny : declare tiny_min (#203)', but still changes what that commit does not"
            in text)
    assert "         -+int tiny_mid(int a, int b, int c);" in text


def test_drop_upstream_drops_reference_landings_never_superseded(cli, tmp_path: Path,
                                                                 up: Upstream) -> None:
    proj = project(tmp_path, up, [max_patch(up, tmp_path / "s"), decl_patch(up, tmp_path / "s")])
    code, data = rebase(cli, proj, up, "master")
    assert code == 1 and data["status"] == "needs-drop"
    code, data = rebase(cli, proj, up, "master", "--drop-upstream")
    assert code == 0 and data["status"] == "rebased", data
    stack = proj / "stack"
    assert not (stack / "patches/0001-p1.patch").exists()
    assert (stack / "patches/0002-p2.patch").exists()
    assert [ln for ln in (stack / "series").read_text().splitlines()
            if not ln.startswith("#")] == ["0002-p2.patch"]
    assert [p["superseded"] is not None for p in data["patches"]] == [False, True]


def test_upstream_status_ref_reports_reference_landings(cli, tmp_path: Path,
                                                        up: Upstream) -> None:
    proj = project(tmp_path, up, [max_patch(up, tmp_path / "s"), decl_patch(up, tmp_path / "s")])
    r = cli("-C", str(proj), "upstream-status", "--ref", "master", "--upstream", str(up.path),
            "--json")
    rows = {p["file"]: p["upstream"] for p in json.loads(r.out)["patches"]}
    landed, sup = rows["0001-p1.patch"], rows["0002-p2.patch"]
    assert landed["verdict"] == "landed" and landed["how"] == "reference"
    assert landed["reference"] == "#202" and landed["commit"]["id"] == up.commits["r2"]
    assert sup["verdict"] == "superseded?" and sup["reference"] == "#203"
    assert sup["commit"]["id"] == up.commits["r3"] and "tiny_mid" in sup["interdiff"]
    text = cli("-C", str(proj), "upstream-status", "--ref", "master", "--upstream",
               str(up.path)).out
    assert (f"at master: landed (grade upstream), {up.commits['r2'][:12]} util : add tiny_max "
            "(#202) (the patch names #202)") in text
    assert "at master: superseded? (grade offset)" in text
    assert "         -+int tiny_mid(int a, int b, int c);" in text


def test_canary_names_reference_landings_and_superseded(cli, tmp_path: Path,
                                                        up: Upstream) -> None:
    proj = project(tmp_path, up, [max_patch(up, tmp_path / "s"), decl_patch(up, tmp_path / "s")])
    r = cli("-C", str(proj), "rebase-pin", "--upstream", str(up.path), "master", "--check",
            "--bisect", "--json")
    report = tmp_path / "report.json"
    report.write_text(r.out)
    r = cli("-C", str(proj), "ci", "summary", str(report))
    assert r.code == 0, r.err
    assert (f"- `0001-p1.patch`: landed in [`{up.commits['r2'][:12]}`]") in r.out
    assert "(reference \\#202); drop it when the pin moves" in r.out
    assert "### Superseded upstream" in r.out
    assert (f"- `0002-p2.patch`: by [`{up.commits['r3'][:12]}`]" in r.out)
    assert "(the patch names \\#203 but still changes more" in r.out
    assert "tiny_mid" not in r.out  # the interdiff stays in the rebase-pin report


def test_continue_grades_the_rest_by_reference(cli, tmp_path: Path, up: Upstream) -> None:
    """After a stop at a conflict, --continue grades the patches after it by reference too,
    and a superseded? mark made before the stop survives the state file."""
    first_op = format_patch(
        up, up.commits["base"], lambda w: replace_in(w / "include/tiny.h", "int tiny_op_00(int x);",
                                                     "int tiny_op_00(int x); /* the first */"),
        subject="tiny : mark the first op", scratch=tmp_path / "s",
        trailers=default_trailers("op", "include/tiny.h"))
    proj = project(tmp_path, up, [decl_patch(up, tmp_path / "s"), first_op,
                                  max_patch(up, tmp_path / "s")])
    code, data = rebase(cli, proj, up, "master", "--drop-upstream")
    assert code == 1 and data["status"] == "stopped" and data["conflict"] == "0002-p2.patch"
    work = Path(data["work"])
    at_master = git(up.path, "show", "master:include/tiny.h")
    (work / "include/tiny.h").write_text(at_master.replace(
        "int tiny_op_00(int x);", "int tiny_op_00(int x); /* the first */"))
    git(work, "add", "include/tiny.h")
    r = cli("-C", str(proj), "rebase-pin", "--continue", "--json")
    assert r.out, r.err
    data = json.loads(r.out)
    assert r.code == 0 and data["status"] == "rebased", data
    p1, p3 = data["patches"][0], data["patches"][2]
    assert p1["superseded"]["reference"] == "#203"  # kept through the stop's state file
    assert p3["grade"] == "upstream" and p3["landed"]["how"] == "reference"
    assert not (proj / "stack/patches/0003-p3.patch").exists()
    assert (proj / "stack/patches/0001-p1.patch").exists()


def test_the_landed_example_shows_both(cli, tmp_path: Path) -> None:
    """examples/landed (the recorded evidence's project) still says what its README says."""
    example = Path(__file__).resolve().parent.parent / "examples" / "landed"
    proj = tmp_path / "landed"
    shutil.copytree(example, proj)
    r = cli("-C", str(proj), "rebase-pin", "master", "--check", "--json")
    data = json.loads(r.out)
    assert r.code == 1, r.err
    assert [p["grade"] for p in data["patches"]] == ["exact", "upstream", "offset", "exact"]
    assert data["patches"][1]["landed"]["how"] == "reference"
    assert data["patches"][1]["landed"]["reference"] == "#202"
    assert [p["superseded"] is not None for p in data["patches"]] == [False, False, True, False]


LLAMA_CPP = os.environ.get("PATCHCTL_LLAMA_CPP", "")


@pytest.mark.llama
@pytest.mark.skipif(not LLAMA_CPP, reason="set PATCHCTL_LLAMA_CPP to a llama.cpp clone")
@pytest.mark.parametrize(("control", "grade"), [(False, "upstream"), (True, "conflict")])
def test_real_backport_of_24444_lands_by_reference(cli, tmp_path: Path, control: bool,
                                                   grade: str) -> None:
    """examples/landed_llama.py on real history: #24444 merged edited (evidence/
    rebase-pin-check-reference-llama-cpp*); naming nothing, the same patch is a conflict."""
    script = Path(__file__).resolve().parent.parent / "examples" / "landed_llama.py"
    proj = tmp_path / "proj"
    subprocess.run([sys.executable, str(script), LLAMA_CPP, str(proj),
                    *(["--control"] if control else [])], check=True, capture_output=True)
    assert cli("-C", str(proj), "lock").code == 0
    r = cli("-C", str(proj), "rebase-pin", "8c146a8366304c871efc26057cc90370ccf58dad",
            "--check", "--upstream", LLAMA_CPP, "--json")
    p = json.loads(r.out)["patches"][0]
    assert p["grade"] == grade
    if not control:
        assert p["landed"]["how"] == "reference" and p["landed"]["reference"] == "#24444"
        assert p["landed"]["commit"]["id"] == "c926ad09857517978575d6a74d225b463f7417a0"
