"""Landed and superseded by reference (tests/reference_history.py): rebase-pin, --drop-upstream,
upstream-status --ref and the canary, on real temp repos.

Every backport in this history merged upstream edited at its place (a comment between its
lines, other functions after them), so no new pin's tree holds it as the patch has it: each
is found by the change it names and marked ``superseded?``, never dropped. Patches the tree
proves landed are tests/test_rebase_proof.py's."""

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


def named(p: dict) -> dict:
    """The upstream change found by the reference a patch makes (a mark, not a landing)."""
    assert p["landed"] is None and p["change"] != "dropped", p
    assert p["superseded"] is not None, p
    return p["superseded"]


def test_an_edited_backport_is_superseded_not_dropped(cli, tmp_path: Path,
                                                     up: Upstream) -> None:
    """Upstream merged #202 with a doc comment between the patch's context and its lines.
    Its subject's `(#202)` and lines matching the commit's made it `upstream` and dropped;
    the new pin does not hold it as the patch has it, so it is a conflict marked
    superseded?, for a person to judge by the interdiff."""
    proj = project(tmp_path, up, [max_patch(up, tmp_path / "s")])
    code, data = rebase(cli, proj, up, "master", "--check")
    p = first(data)
    assert code == 1 and p["grade"] == "conflict"
    sup = named(p)
    assert sup["reference"] == "#202" and sup["commit"] == {
        "id": up.commits["r2"], "subject": "util : add tiny_max (#202)"}
    assert "-+/* The larger of a and b. */" not in sup["interdiff"].splitlines()
    assert "++/* The larger of a and b. */" in sup["interdiff"].splitlines()
    text = cli("-C", str(proj), "rebase-pin", "--upstream", str(up.path), "master",
               "--check").out
    assert "already upstream" not in text
    assert (f"superseded?: it names #202, merged upstream in {up.commits['r2'][:12]} 'util : "
            "add tiny_max (#202)', but the new pin does not hold all it changes") in text


def test_the_edited_backport_is_missed_without_its_reference(cli, tmp_path: Path,
                                                            up: Upstream) -> None:
    """The control: the same patch naming nothing is a conflict, so upstream's merge has
    another patch-id and the patch does not reverse-apply at the new pin."""
    proj = project(tmp_path, up, [max_patch(up, tmp_path / "s", subject="util : add tiny_max")])
    _, data = rebase(cli, proj, up, "master", "--check")
    assert first(data)["grade"] == "conflict" and first(data)["landed"] is None
    assert first(data)["superseded"] is None


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
    assert named(first(data))["commit"]["id"] == up.commits["r2"]


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
    assert named(first(data))["reference"] == sha[:12]  # as the patch writes it
    assert named(first(data))["commit"]["id"] == up.commits["r2"]


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
    assert named(first(data))["commit"]["id"] == up.commits["r2"]


def test_a_merge_commit_lands_a_pr(cli, tmp_path: Path, up: Upstream) -> None:
    """#206 merged as `Merge pull request #206 from dev/sign`: its diff against its first
    parent is what the patch is compared with."""
    proj = project(tmp_path, up, [function_patch(up, tmp_path / "s", SIGN_FN,
                                                 subject="util : add tiny_sign (#206)")])
    _, data = rebase(cli, proj, up, "master", "--check")
    assert named(first(data))["commit"] == {
        "id": up.commits["r5"], "subject": "Merge pull request #206 from dev/sign"}


def test_a_pr_reverted_in_range_does_not_count(cli, tmp_path: Path, up: Upstream) -> None:
    proj = project(tmp_path, up, [function_patch(up, tmp_path / "s", AVG_FN,
                                                 subject="util : add tiny_avg (#207)")])
    _, data = rebase(cli, proj, up, "master", "--check")
    assert first(data)["grade"] != "upstream"
    assert first(data)["landed"] is None and first(data)["superseded"] is None
    # ... while before the revert it is found
    _, data = rebase(cli, proj, up, up.commits["r6"], "--check")
    assert named(first(data))["commit"]["id"] == up.commits["r6"]


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
            "'tiny : declare tiny_min (#203)', but the new pin does not hold all it changes"
            in text)
    assert "         -+int tiny_mid(int a, int b, int c);" in text


def test_drop_upstream_never_drops_a_reference_alone(cli, tmp_path: Path,
                                                    up: Upstream) -> None:
    """--drop-upstream dropped the edited backport of #202 on its reference; it must stop
    at it as the conflict it is, with every patch file kept."""
    proj = project(tmp_path, up, [max_patch(up, tmp_path / "s"), decl_patch(up, tmp_path / "s")])
    code, data = rebase(cli, proj, up, "master", "--drop-upstream")
    assert code == 1 and data["status"] == "stopped" and data["conflict"] == "0001-p1.patch"
    stack = proj / "stack"
    assert (stack / "patches/0001-p1.patch").exists()
    assert (stack / "patches/0002-p2.patch").exists()
    assert [p["superseded"] is not None for p in data["patches"]] == [True, True]
    assert all(p["change"] != "dropped" for p in data["patches"])


def test_upstream_status_ref_reports_reference_landings(cli, tmp_path: Path,
                                                        up: Upstream) -> None:
    proj = project(tmp_path, up, [max_patch(up, tmp_path / "s"), decl_patch(up, tmp_path / "s")])
    r = cli("-C", str(proj), "upstream-status", "--ref", "master", "--upstream", str(up.path),
            "--json")
    rows = {p["file"]: p["upstream"] for p in json.loads(r.out)["patches"]}
    edited, sup = rows["0001-p1.patch"], rows["0002-p2.patch"]
    assert edited["verdict"] == "superseded?" and edited["reference"] == "#202"
    assert edited["commit"]["id"] == up.commits["r2"]
    assert sup["verdict"] == "superseded?" and sup["reference"] == "#203"
    assert sup["commit"]["id"] == up.commits["r3"] and "tiny_mid" in sup["interdiff"]
    text = cli("-C", str(proj), "upstream-status", "--ref", "master", "--upstream",
               str(up.path)).out
    assert "landed" not in text
    assert "at master: superseded? (grade offset)" in text
    assert "         -+int tiny_mid(int a, int b, int c);" in text


def test_canary_names_superseded_never_landed_by_reference(cli, tmp_path: Path,
                                                           up: Upstream) -> None:
    proj = project(tmp_path, up, [max_patch(up, tmp_path / "s"), decl_patch(up, tmp_path / "s")])
    r = cli("-C", str(proj), "rebase-pin", "--upstream", str(up.path), "master", "--check",
            "--bisect", "--json")
    report = tmp_path / "report.json"
    report.write_text(r.out)
    r = cli("-C", str(proj), "ci", "summary", str(report))
    assert r.code == 1, r.err  # 0001 conflicts
    assert "### Landed upstream" not in r.out
    assert "### Superseded upstream" in r.out
    assert f"- `0001-p1.patch`: by [`{up.commits['r2'][:12]}`]" in r.out
    assert (f"- `0002-p2.patch`: by [`{up.commits['r3'][:12]}`]" in r.out)
    assert "(the patch names \\#203 but the new pin does not hold all it changes" in r.out
    assert "tiny_mid" not in r.out  # the interdiff stays in the rebase-pin report


def test_continue_grades_the_rest_by_reference(cli, tmp_path: Path, up: Upstream) -> None:
    """After a stop at a conflict, --continue marks the patches after it by reference too
    (and stops at the edited backport rather than dropping it), and a superseded? mark made
    before the stop survives the state file. --strict: upstream declared functions just
    above the line 0002 changes, a stop for a line merge (rebase-pin re-anchors it otherwise)."""
    first_op = format_patch(
        up, up.commits["base"], lambda w: replace_in(w / "include/tiny.h", "int tiny_op_00(int x);",
                                                     "int tiny_op_00(int x); /* the first */"),
        subject="tiny : mark the first op", scratch=tmp_path / "s",
        trailers=default_trailers("op", "include/tiny.h"))
    proj = project(tmp_path, up, [decl_patch(up, tmp_path / "s"), first_op,
                                  max_patch(up, tmp_path / "s")])
    code, data = rebase(cli, proj, up, "master", "--drop-upstream", "--strict")
    assert code == 1 and data["status"] == "stopped" and data["conflict"] == "0002-p2.patch"
    work = Path(data["work"])
    at_master = git(up.path, "show", "master:include/tiny.h")
    (work / "include/tiny.h").write_text(at_master.replace(
        "int tiny_op_00(int x);", "int tiny_op_00(int x); /* the first */"))
    git(work, "add", "include/tiny.h")
    r = cli("-C", str(proj), "rebase-pin", "--continue", "--json")
    assert r.out, r.err
    data = json.loads(r.out)
    assert r.code == 1 and data["status"] == "stopped" and data["conflict"] == "0003-p3.patch"
    p1, p3 = data["patches"][0], data["patches"][2]
    assert p1["superseded"]["reference"] == "#203"  # kept through the stop's state file
    assert p3["grade"] == "conflict" and named(p3)["reference"] == "#202"
    assert (proj / "stack/patches/0003-p3.patch").exists()
    assert (proj / "stack/patches/0001-p1.patch").exists()


def test_the_landed_example_shows_both(cli, tmp_path: Path) -> None:
    """examples/landed (the recorded evidence's project) still says what its README says."""
    example = Path(__file__).resolve().parent.parent / "examples" / "landed"
    proj = tmp_path / "landed"
    shutil.copytree(example, proj)
    r = cli("-C", str(proj), "rebase-pin", "master", "--check", "--json")
    data = json.loads(r.out)
    assert r.code == 1, r.err
    assert [p["grade"] for p in data["patches"]] == ["exact", "conflict", "offset", "exact"]
    assert named(data["patches"][1])["reference"] == "#202"
    assert [p["superseded"] is not None for p in data["patches"]] == [False, True, True, False]


LLAMA_CPP = os.environ.get("PATCHCTL_LLAMA_CPP", "")


@pytest.mark.llama
@pytest.mark.skipif(not LLAMA_CPP, reason="set PATCHCTL_LLAMA_CPP to a llama.cpp clone")
@pytest.mark.parametrize("control", [False, True])
def test_real_backport_of_24444_is_superseded(cli, tmp_path: Path, control: bool) -> None:
    """examples/landed_llama.py on real history: #24444 merged edited (three comment lines
    more), so the new pin does not hold the backport as it is: a conflict either way, and
    naming #24444 marks it superseded? (it was dropped as landed by reference)."""
    script = Path(__file__).resolve().parent.parent / "examples" / "landed_llama.py"
    proj = tmp_path / "proj"
    subprocess.run([sys.executable, str(script), LLAMA_CPP, str(proj),
                    *(["--control"] if control else [])], check=True, capture_output=True)
    assert cli("-C", str(proj), "lock").code == 0
    r = cli("-C", str(proj), "rebase-pin", "8c146a8366304c871efc26057cc90370ccf58dad",
            "--check", "--upstream", LLAMA_CPP, "--json")
    p = json.loads(r.out)["patches"][0]
    assert p["grade"] == "conflict" and p["landed"] is None
    if not control:
        assert named(p)["reference"] == "#24444"
        assert named(p)["commit"]["id"] == "c926ad09857517978575d6a74d225b463f7417a0"
