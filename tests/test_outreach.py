"""draft-outreach: briefs from real upstreams with and without contribution rules."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from tests.builders import (
    Upstream,
    commit_all,
    format_patch,
    git,
    make_project,
    system_config_off,
    write,
)
from tests.outreach_helpers import (
    FORBIDS,
    NO_RULES,
    TEMPLATE,
    api_patch,
    html,
    markdown_problems,
    policy_upstream,
    prose_problems,
)

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden" / "outreach-tiny"
# read at import: the autouse isolation fixture clears PATCHCTL_* before each test
UPDATE_GOLDEN = bool(os.environ.get("PATCHCTL_UPDATE_GOLDEN"))
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")


def _project(tmp_path: Path, up: Upstream, patches: list[tuple[str, str]], name: str = "proj"
             ) -> Path:
    return make_project(tmp_path / name, up, patches, pin=up.commits["policy"])


def _built(factory: pytest.TempPathFactory, contributing: str, template: str | None,
           trailers: dict[str, str]) -> tuple[Path, Upstream]:
    root = factory.mktemp("outreach")
    with system_config_off():
        up = policy_upstream(root / "up", contributing, template=template)
        patch = api_patch(up, root / "scratch", trailers=trailers, odd_lines=True)
    return _project(root, up, [("0001-tiny-add-tiny_cube.patch", patch)]), up


@pytest.fixture(scope="module")
def _forbids(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Upstream]:
    return _built(tmp_path_factory, FORBIDS, TEMPLATE,
                  {"Assisted-by": "ExampleTool [include/*]",
                   "Co-authored-by": "HelperBot <bot@example.invalid>"})


@pytest.fixture(scope="module")
def _no_rules(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Upstream]:
    return _built(tmp_path_factory, NO_RULES, None,
                  {"Assisted-by": "ExampleTool [include/*]"})


@pytest.fixture
def forbids(_forbids, tmp_path: Path) -> tuple[Path, Upstream]:
    """A private copy of the project (tests may edit it); the upstream is only read."""
    shutil.copytree(_forbids[0], tmp_path / "pf")
    return tmp_path / "pf", _forbids[1]


@pytest.fixture
def no_rules(_no_rules, tmp_path: Path) -> tuple[Path, Upstream]:
    shutil.copytree(_no_rules[0], tmp_path / "pp")
    return tmp_path / "pp", _no_rules[1]


def _brief(cli, project: Path, up: Upstream, *args: str) -> str:
    r = cli("-C", str(project), "draft-outreach", "--upstream", str(up.path), *args)
    assert r.code == 0, r.err
    return r.out


def _json(cli, project: Path, up: Upstream, *args: str) -> dict:
    return json.loads(_brief(cli, project, up, "--json", *args))


def test_golden_briefs_for_the_example_stack(cli, tmp_path: Path) -> None:
    """The example stack (its upstream is a bundle) renders byte-for-byte as the saved files;
    set PATCHCTL_UPDATE_GOLDEN=1 to rewrite them after an intended change."""
    example = tmp_path / "tiny"
    shutil.copytree(ROOT / "examples" / "tiny", example)
    out = tmp_path / "briefs"
    r = cli("-C", str(example), "draft-outreach", "--series", "--out", str(out))
    assert r.code == 0, r.err
    written = sorted(p.name for p in out.glob("*.md"))
    assert written == ["0001-util-add-tiny_square.details.md", "0001-util-add-tiny_square.md",
                       "0002-tiny-bump-op-02.details.md", "0002-tiny-bump-op-02.md",
                       "0003-tiny-declare-square.details.md", "0003-tiny-declare-square.md",
                       "series.md"]
    if UPDATE_GOLDEN:
        shutil.rmtree(GOLDEN, ignore_errors=True)
        GOLDEN.mkdir(parents=True)
        for name in written:
            shutil.copy(out / name, GOLDEN / name)
    for name in written:
        text = (out / name).read_text(encoding="utf-8")
        assert text == (GOLDEN / name).read_text(encoding="utf-8"), name
        assert markdown_problems(text, files={n.replace(".md", ".md") for n in written}) == []
        assert prose_problems(text) == [], name
    # the example has no policy files, no outreach data and no evidence: all named, no crash
    brief = (out / "0003-tiny-declare-square.md").read_text()
    assert "no stack/outreach/square.toml" in brief
    assert "no evidence records for this patch" in brief
    assert "state no rule about machine-written descriptions" in brief
    assert "`int tiny_square(int v);`" in brief  # the public API, exact from the diff
    assert "1. Post first: no open issue recorded, and no issue form at the base" in brief
    assert "2. PR order: 0001 -> 0002 -> 0003 (apply order)" in brief


def test_same_inputs_give_identical_bytes(cli, forbids, tmp_path: Path) -> None:
    project, up = forbids
    a, b = tmp_path / "a", tmp_path / "b"
    for out in (a, b):
        assert cli("-C", str(project), "draft-outreach", "--upstream", str(up.path),
                   "--out", str(out)).code == 0
    for name in ("series.md", "0001-tiny-add-tiny_cube.md"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    assert _brief(cli, project, up, "--json") == _brief(cli, project, up, "--json")


def test_an_upstream_forbidding_machine_prose_gets_facts_only(cli, forbids) -> None:
    project, up = forbids
    text = _brief(cli, project, up, "0001")
    assert markdown_problems(text) == []
    banner = text.split("## What it does")[0]
    assert "forbids machine-written PR descriptions" in banner
    assert "`CONTRIBUTING.md:6`" in banner
    # no prose: the patch's own body (someone's description) is not carried into the brief,
    # and no section offers text for a description or a commit message
    assert "Why this change is needed" not in text
    headings = [ln for ln in text.splitlines() if ln.startswith("#")]
    assert not any(re.search(r"description|commit message|draft|proposal", h, re.I)
                   for h in headings), headings
    # the template's sections are listed with the facts that belong there
    assert "| Overview | 1 | Describe what this PR does and why | what, why |" in text


def test_every_rule_is_quoted_from_the_line_it_cites(cli, forbids) -> None:
    project, up = forbids
    data = _json(cli, project, up)
    rules = data["patches"][0]["rules"]
    assert {r["id"] for r in rules} >= {"no-machine-prose", "issue-first", "api-bar",
                                         "ai-disclosure", "ascii"}
    for rule in rules:
        for c in rule["citations"]:
            line = git(up.path, "show", f"HEAD:{c['file']}").splitlines()[c["line"] - 1]
            assert " ".join(line.split()) == c["text"]
    api_bar = next(r for r in rules if r["id"] == "api-bar")
    assert api_bar["applies"] == "yes" and "tiny_cube" in api_bar["reason"]


def test_an_upstream_without_rules_gets_the_same_facts_and_no_invented_rule(
        cli, forbids, no_rules) -> None:
    text_f = _brief(cli, forbids[0], forbids[1], "0001")
    text_p = _brief(cli, no_rules[0], no_rules[1], "0001")
    assert markdown_problems(text_p) == []
    assert "state no rule about machine-written descriptions" in text_p
    assert "- [ ]" not in text_p  # no checklist: the files state none of the rules
    assert _json(cli, no_rules[0], no_rules[1])["patches"][0]["rules"] == []

    def facts(text: str) -> str:
        return text.split("## Facts and sources")[1].split("## Understanding guide")[0]

    # the facts sections differ only where the upstream differs (its commit ids)
    strip = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
    assert strip.sub("X", facts(text_f)) == strip.sub("X", facts(text_p))


def test_api_disclosure_lint_and_reviewers(cli, forbids) -> None:
    project, up = forbids
    data = _json(cli, project, up)["patches"][0]
    assert [(a["kind"], a["name"], a["signature"]) for a in data["api"]] == [
        ("function", "tiny_cube", "int tiny_cube(int v);")]
    assert data["assistance"] == [{"tool": "ExampleTool", "files": ["include/tiny.h"],
                                   "trailer": "Assisted-by: ExampleTool [include/*]"}]
    assert data["coauthors"] == ["HelperBot"]  # named for the person to judge; no address
    lint = {(x["code"], x["file"], x["rule"]) for x in data["lint"]}
    assert ("non-ascii", "src/util.c", "CONTRIBUTING.md:12") in lint
    assert ("trailing-whitespace", "src/util.c", ".editorconfig:4") in lint
    assert ("indent", "src/util.c", ".editorconfig:5") in lint
    owners = {(r["name"], r["source"]) for r in data["reviewers"]}
    assert ("@carol", "CODEOWNERS:4 (/src/)") not in owners  # /src/util.c wins: last match
    assert ("@dave", "CODEOWNERS:6 (/src/util.c)") in owners
    team = next(r for r in data["reviewers"] if r["name"] == "@tiny-org/core")
    assert team["members"] == "alice, bob (as listed at CODEOWNERS:2)"
    assert [r["name"] for r in data["authors"]] == ["Upstream Dev"]
    text = _brief(cli, project, up)
    assert not _EMAIL.search(text), _EMAIL.search(text)


def test_jinja_syntax_in_a_subject_is_rendered_literally(cli, tmp_path: Path) -> None:
    """Text from patches is data: a subject holding template syntax and a table pipe must
    neither be evaluated nor break a table."""
    up = policy_upstream(tmp_path / "up", NO_RULES)
    subject = "tiny : {{ 7*7 }} {% if true %}x{% endif %} | a|b `tick`"
    patch = api_patch(up, tmp_path / "scratch", subject=subject,
                      trailers={"Concern": "{{ config }}"})
    project = _project(tmp_path, up, [("0001-x.patch", patch)])
    text = _brief(cli, project, up)
    assert markdown_problems(text, files={"0001-x.md", "0001-x.details.md", "series.md"}) == []
    rendered = html(text)
    assert "{{ 7*7 }} {% if true %}x{% endif %} | a|b `tick`" in rendered
    # evaluated, the subject would read "tiny : 49 x": look for that, not for "49" alone,
    # which a temp path or a hash can hold
    assert "tiny : 49" not in rendered and " 49 x " not in rendered
    assert "{{ config }}" in rendered


def test_outreach_data_unverified_facts_are_never_stated_as_fact(cli, forbids) -> None:
    project, up = forbids
    (project / "stack" / "outreach").mkdir()
    (project / "stack" / "outreach" / "cube.toml").write_text(
        'format = 1\nconcern = "cube"\nsummary = "Adds tiny_cube."\n'
        'motivation = "Callers cube numbers."\n'
        '[[prior_art]]\nkind = "issue"\nref = "tiny/tiny#7"\nurl = "https://example.invalid/7"\n'
        'title = "Please add cube"\nstate = "open"\nverified = true\nchecked_via = "read it"\n'
        'note = "asked for in 2026"\n'
        '[[prior_art]]\nkind = "pr"\nref = "tiny/tiny#9"\nurl = ""\ntitle = "Rumoured cube PR"\n'
        'state = "unknown"\nverified = false\nchecked_via = ""\nnote = "heard of it"\n'
        '[[question]]\nquestion = "Why not x*x*x inline?"\nevidence = ["tiny/tiny#7"]\n'
        '[[upstream_check]]\nwhat = "abs exists"\npath = "src/util.c"\ntext = "tiny_abs"\n')
    text = _brief(cli, project, up, "cube")
    assert markdown_problems(text) == []
    prior = text.split("### Prior art\n")[1].split("###")[0]
    assert "- tiny/tiny\\#7 (open); links, titles" in prior
    assert "  - title: Please add cube" in text
    assert "- UNVERIFIED tiny/tiny\\#9 (pr): Rumoured cube PR" in prior
    assert "heard of it" not in text  # an unverified note is not repeated as a statement
    # the first screen: the recorded open issue is where to post first
    assert "1. Post first: comment on [tiny/tiny\\#7](https://example.invalid/7) (open; per " \
           "`stack/outreach/cube.toml`)" in text
    # the outreach data's text is shown as facts, one a sentence, with its source
    assert "From `stack/outreach/cube.toml`" in text and "  - Callers cube numbers.\n" in text
    assert prose_problems(text) == []
    assert "Why not x\\*x\\*x inline?" in text
    assert "- found at `src/util.c:" in text and "first added by" in text
    rules = _json(cli, project, up)["patches"][0]["rules"]
    assert next(r for r in rules if r["id"] == "issue-first")["applies"] == "yes"


def test_unknown_patch_is_one_line_usage_error(cli, forbids) -> None:
    project, up = forbids
    r = cli("-C", str(project), "draft-outreach", "--upstream", str(up.path), "9999")
    assert r.code == 2
    assert r.err.count("\n") == 1 and "carries the number 9999" in r.err


def test_star_runs_in_codeowners_and_editorconfig_do_not_hang(tmp_path: Path) -> None:
    """A 30-byte CODEOWNERS line (`****************************x @a`) hung
    draft-outreach: CODEOWNERS and .editorconfig globs became backtracking regexes, `.*`
    for each `**`. draft-outreach runs in a subprocess with a time bound: a hang fails the
    test instead of hanging it."""
    import subprocess
    import sys

    up = policy_upstream(tmp_path / "up", NO_RULES)
    write(up.path, {"CODEOWNERS": "*" * 28 + "x @a\n/src/**/*.c @b\n",
                    ".editorconfig": "[" + "*" * 28 + "x]\nindent_style = tab\n"})
    up.commits["policy"] = commit_all(up.path, "policy : star runs")
    long_path = "src/" + "a_long_directory_name/" * 2 + "some_source_file_name.c"
    patch = format_patch(up, up.commits["policy"], lambda w: write(w, {long_path: "int x;\n"}),
                         subject="src : long path", scratch=tmp_path / "scratch",
                         trailers={"Concern": "long", "Upstream-Status": "Pending",
                                   "Scope": "src/**"})
    project = _project(tmp_path, up, [("0001-long.patch", patch)])
    r = subprocess.run([sys.executable, "-m", "patchctl", "-C", str(project), "draft-outreach",
                        "--upstream", str(up.path), "--json"], capture_output=True, text=True,
                       check=False, timeout=60)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)["patches"][0]
    assert {(x["name"], x["source"]) for x in data["reviewers"]} >= {
        ("@b", "CODEOWNERS:2 (/src/**/*.c)")}
    assert not any(x["code"] == "indent" for x in data["lint"])


def test_help_says_it_never_posts(cli) -> None:
    r = cli("draft-outreach", "--help")
    assert r.code == 0 and "never posts, comments or pushes" in r.out


def test_the_manifest_names_out_relative_to_the_project(cli, forbids) -> None:
    """MANIFEST.json's command held the absolute --out and --handoff, so the same
    command from two clones wrote different bytes; inside the project they are relative."""
    project, up = forbids
    r = cli("-C", str(project), "draft-outreach", "--series", "--upstream", str(up.path),
            "--out", str(project / "briefs"), "--handoff", str(project / "HANDOFF.md"))
    assert r.code == 0, r.err
    manifest = json.loads((project / "briefs" / "MANIFEST.json").read_text())
    assert manifest["command"] == ("patchctl draft-outreach --series --upstream UPSTREAM "
                                   "--out briefs --handoff HANDOFF.md")


def test_out_dir_manifest_detects_stale_briefs(cli, forbids, tmp_path: Path) -> None:
    project, up = forbids
    out = tmp_path / "briefs"
    assert cli("-C", str(project), "draft-outreach", "--upstream", str(up.path), "--out",
               str(out)).code == 0
    (out / "old-brief.md").write_text("left from an older series\n")
    r = cli("-C", str(project), "draft-outreach", "--upstream", str(up.path), "--out",
            str(out), "--json")
    assert r.code == 0, r.err
    written = json.loads(r.out)
    assert written["schema"] == "patchctl.outreach-out/1"
    assert "series.md" in written["files"] and written["removed"] == ["old-brief.md"]
    assert not (out / "old-brief.md").exists()  # a rewrite replaces the set at once
    ok = cli("-C", str(project), "draft-outreach", "--check", "--out", str(out))
    assert ok.code == 0, ok.out
    patch = project / "stack" / "patches" / "0001-tiny-add-tiny_cube.patch"
    patch.write_text(patch.read_text().replace("Upstream-Status: Pending",
                                               "Upstream-Status: Submitted [x]"))
    stale = cli("-C", str(project), "draft-outreach", "--check", "--out", str(out))
    assert stale.code == 1
    assert "input stack/patches/0001-tiny-add-tiny_cube.patch changed" in stale.out
    assert "regenerate with: patchctl draft-outreach" in stale.out
    (project / "evidence" / "cube").mkdir(parents=True)
    (project / "evidence" / "cube" / "new.json").write_text(json.dumps(
        {"schema": "patchctl.evidence/1", "name": "new", "argv": ["true"], "exit_code": 0}))
    newer = cli("-C", str(project), "draft-outreach", "--check", "--out", str(out))
    assert "input evidence/cube/new.json added" in newer.out
    brief = out / "series.md"
    brief.write_text(brief.read_text() + "edited\n")
    again = cli("-C", str(project), "draft-outreach", "--check", "--out", str(out), "--json")
    checked = json.loads(again.out)
    assert checked["schema"] == "patchctl.outreach-check/1" and checked["ok"] is False
    assert "output series.md was edited after it was written" in checked["stale"]


def test_onto_ports_and_grades_each_patch(cli, tmp_path: Path) -> None:
    """--onto on the planted history: exact, offset, 3way and conflict, each ported diff a
    plain diff that applies to its base, and nothing in the stack changed."""
    from tests.rebase_history import make_history

    history = make_history(tmp_path / "h")
    up = history.upstream
    project = make_project(tmp_path / "proj", up, history.patches)
    before = {p: p.read_bytes() for p in (project / "stack").rglob("*") if p.is_file()}
    out = tmp_path / "briefs"
    r = cli("-C", str(project), "draft-outreach", "--upstream", str(up.path), "--onto",
            "master", "--out", str(out))
    assert r.code == 0, r.err
    assert {p: p.read_bytes() for p in (project / "stack").rglob("*") if p.is_file()} == before
    head = up.head
    data = _json(cli, project, up, "--onto", "master")
    grades = {p["file"][:4]: p["port"]["grade"] for p in data["patches"]}
    assert grades == {"0001": "exact", "0002": "offset", "0003": "offset", "0004": "3way",
                      "0005": "conflict", "0006": "upstream", "0007": "3way",
                      "0008": "upstream"}
    ports = {p["file"][:4]: p["port"] for p in data["patches"]}
    assert ports["0005"]["conflicts"] == ["src/tiny.c"] and ports["0005"]["diff"] is None
    assert ports["0001"]["applies_to"] == head
    diffs = sorted(p.name for p in out.glob("*.diff"))
    assert diffs == [f"{n}.onto-{head[:12]}.diff" for n in (
        "0001-util-add-tiny_square", "0002-tiny-bump-op-02", "0003-tiny-declare-tiny_square",
        "0004-tiny-scale-op-10", "0007-cmake-define-TINY_PATCHED")]
    first = (out / diffs[0]).read_text()
    assert first.startswith("diff --git a/src/util.c b/src/util.c\n")
    assert "Subject:" not in first and "Concern:" not in first and "\n-- \n" not in first
    # the first patch's ported diff applies to the new base itself
    git(up.path, "apply", "--check", str(out / diffs[0]))
    offset = (out / diffs[1]).read_text()
    git(up.path, "apply", "--check", str(out / diffs[1]))
    old = (project / "stack/patches/0002-tiny-bump-op-02.patch").read_text()
    hunk = re.compile(r"^@@ .* @@", re.M)
    assert hunk.findall(offset) != hunk.findall(old)  # regenerated at the new position
    brief = (out / "0005-tiny-tighten-op-15.details.md").read_text()
    assert "- grade: **conflict**" in brief and "- conflicts in: `src/tiny.c`" in brief
    assert markdown_problems(brief, files={"0005-tiny-tighten-op-15.md"}) == []


def test_evidence_records_give_results_timings_and_rerun_commands(cli, forbids) -> None:
    """A reproduce record and a recorded upstream-style test are shown with their result,
    their command, and whether they were recorded for this stack's fingerprint."""
    project, up = forbids
    ev = project / "evidence"
    (ev / "cube").mkdir(parents=True)
    record = {"schema": "patchctl.evidence/1", "name": "cube-upstream-test",
              "argv": ["ctest", "-R", "^cube$"], "exit_code": 0, "expect": "pass",
              "as_expected": True, "seconds": 0.25, "started": "2026-11-29T00:00:00+00:00",
              "stack": {"pin": "0" * 40, "fingerprint": "f" * 64},
              "output_file": "cube-upstream-test.log", "extra": {}}
    (ev / "cube" / "cube-upstream-test.json").write_text(json.dumps(record))
    (ev / "cube" / "cube-upstream-test.log").write_text("1: ok  : cube(3) == 27\n1: PASS\n")
    fp = _json(cli, project, up)["fingerprint"]
    side = {"result": "build", "prefix": 0, "compiled": 1, "failed_target": "cube.o",
            "seconds": {"build": 0.5}}
    repro = {**record, "name": "reproduce-tiny", "argv": ["patchctl", "reproduce"],
             "stack": {"pin": "0" * 40, "fingerprint": fp}, "output_file": "none.log",
             "extra": {"reproduce": {"patches": [
                 {"name": "0001-tiny-add-tiny_cube.patch", "concern": "cube",
                  "outcome": "fails-before/passes-after",
                  "before": side, "after": {**side, "result": "passed", "prefix": 1,
                                            "failed_target": None}}]}}}
    (ev / "reproduce-tiny.json").write_text(json.dumps(repro))
    (ev / "unrelated.json").write_text(json.dumps({**record, "name": "other"}))
    text = _brief(cli, project, up, "cube")
    assert markdown_problems(text) == []
    assert "| `evidence/cube/cube-upstream-test.json` | 0 | pass | yes | 0.25 | no: fingerprint " \
           "ffffffffffffffff is of no stack holding this patch as it is now |" in text
    assert "| `evidence/reproduce-tiny.json` | 0 | pass (fails-before/passes-after) | yes |" in text
    assert "ok  : cube(3) == 27\n  PASS" in text
    assert "- before (pin \\+ 0 patches): failed at the build step (cube.o)" in text
    assert "ctest -R '^cube$'" in text
    assert "evidence/unrelated.json" not in text


def test_the_handoff_names_the_stack_a_record_of_another_stack_was_made_at(
    cli, forbids, tmp_path: Path
) -> None:
    """The handoff's evidence table said only whether a record covers the patch as it is,
    so a record made at an earlier stack that held the same patch read as made at the
    current one: the handoff check then failed after every change to another patch. A
    record of another stack now carries 'made at stack' and its fingerprint; one of the
    current stack carries none."""
    project, up = forbids
    ev = project / "evidence"
    (ev / "cube").mkdir(parents=True)
    fp = _json(cli, project, up)["fingerprint"]
    record = {
        "schema": "patchctl.evidence/1",
        "name": "cube-upstream-test",
        "argv": ["ctest"],
        "exit_code": 0,
        "expect": "pass",
        "as_expected": True,
        "seconds": 0.25,
        "started": "2026-11-29T00:00:00+00:00",
        "stack": {"pin": "0" * 40, "fingerprint": "ab" * 32},
        "extra": {},
    }
    (ev / "cube" / "cube-old.json").write_text(json.dumps({**record, "name": "cube-old"}))
    (ev / "cube" / "cube-now.json").write_text(
        json.dumps({**record, "name": "cube-now", "stack": {"pin": "0" * 40, "fingerprint": fp}})
    )
    handoff = tmp_path / "HANDOFF.md"
    r = cli(
        "-C",
        str(project),
        "draft-outreach",
        "--upstream",
        str(up.path),
        "--out",
        str(tmp_path / "briefs"),
        "--handoff",
        str(handoff),
    )
    assert r.code == 0, r.err
    rows = {
        line.split("|")[1].strip(): line
        for line in handoff.read_text().splitlines()
        if line.startswith("| `evidence/cube/")
    }
    assert rows["`evidence/cube/cube-old.json`"].endswith("(made at stack abababab) |")
    assert "made at stack" not in rows["`evidence/cube/cube-now.json`"]


def test_records_a_reviewer_question_cites_are_shown_with_their_rerun_command(cli,
                                                                           forbids) -> None:
    """A question of stack/outreach/<concern>.toml that cites a record outside the
    concern's folder (evidence/bench-vs-x.json, or its log) brings that record into the
    brief's Evidence records, with its command; a record nobody cites stays out."""
    project, up = forbids
    ev = project / "evidence"
    ev.mkdir(exist_ok=True)
    base = {"schema": "patchctl.evidence/1", "exit_code": 0, "expect": "pass",
            "as_expected": True, "seconds": 1.5, "started": "2026-12-02T00:00:00+00:00",
            "stack": {"pin": "0" * 40, "fingerprint": "e" * 64}, "extra": {}}
    for name in ("bench-vs-x", "bench-one-core", "bench-uncited"):
        (ev / f"{name}.json").write_text(json.dumps(
            {**base, "name": name, "argv": ["python", "bench/x.py", f"--{name}"],
             "output_file": f"{name}.log"}))
        (ev / f"{name}.log").write_text("result: OK\n")
    (project / "stack" / "outreach").mkdir(exist_ok=True)
    (project / "stack" / "outreach" / "cube.toml").write_text(
        '[[question]]\nquestion = "Why not the other backend?"\n'
        'evidence = ["evidence/bench-vs-x.json", "evidence/bench-one-core.log (one core)"]\n')
    text = _brief(cli, project, up, "cube")
    assert markdown_problems(text) == []
    for cited in ("bench-vs-x", "bench-one-core"):
        assert f"| `evidence/{cited}.json` | 0 | pass | yes | 1.5 |" in text, cited
        assert f"python bench/x.py --{cited}" in text
    assert "bench-uncited" not in text


# -- what --out and --handoff may replace, and upstream text that is not UTF-8 ----


def _refused(r, fragment: str) -> None:
    """Exit 2, one line naming what to pass instead, no traceback."""
    assert r.code == 2, (r.code, r.out, r.err)
    assert len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err, r.err
    assert fragment in r.err, r.err


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_out_refuses_a_folder_it_did_not_write(cli, forbids) -> None:
    """`--out docs` on a plain folder (no MANIFEST.json) deleted docs/NOTES.md
    and docs/design.diff and exited 0. Now a folder is replaced only when it is empty,
    absent or holds the MANIFEST.json of draft-outreach (patchctl.outreach-manifest/1)."""
    project, up = forbids
    docs = project / "docs"
    docs.mkdir()
    (docs / "NOTES.md").write_text("my notes\n")
    (docs / "design.diff").write_text("--- a/x\n+++ b/x\n")
    before = _tree(project)
    r = cli("-C", str(project), "draft-outreach", "--upstream", str(up.path), "--out", str(docs))
    _refused(r, "draft-outreach did not write (it has no MANIFEST.json): pass an empty or new")
    assert _tree(project) == before
    # a MANIFEST.json that is not draft-outreach's does not make the folder its own
    (docs / "MANIFEST.json").write_text('{"schema": "someone-else/1", "outputs": {}}')
    r = cli("-C", str(project), "draft-outreach", "--upstream", str(up.path), "--out", str(docs))
    _refused(r, "MANIFEST.json is not one draft-outreach wrote")
    assert (docs / "NOTES.md").read_text() == "my notes\n"
    assert (docs / "design.diff").exists()
    # an empty folder is fine, and so is rewriting the brief folder it made there
    empty = project / "briefs"
    empty.mkdir()
    for _ in range(2):
        r = cli("-C", str(project), "draft-outreach", "--upstream", str(up.path), "--out",
                str(empty))
        assert r.code == 0, r.err
    assert (empty / "MANIFEST.json").is_file() and (empty / "series.md").is_file()


@pytest.mark.parametrize("args", [
    ["--out", "{P}/stack/patches"],
    ["--out", "{P}/stack/briefs"],
    ["--out", "{T}/briefs", "--handoff", "{P}/stack/series"],
    ["--out", "{T}/briefs", "--handoff", "{P}/stack/patches/README.md"],
], ids=["out-patches", "out-new-in-stack", "handoff-series", "handoff-new-in-stack"])
def test_out_and_handoff_inside_the_stack_are_refused(cli, forbids, tmp_path: Path,
                                                      args: list[str]) -> None:
    """`--out stack/patches` deleted a quilt-style 0002-two.diff patch (verify
    then failed) and `--handoff stack/series` overwrote the series with Markdown. Nothing
    of draft-outreach goes inside stack/ now, new or not."""
    project, up = forbids
    (project / "stack/patches/0002-two.diff").write_text("--- a/x\n+++ b/x\n")
    before = _tree(project / "stack")
    argv = [a.replace("{T}", str(tmp_path)).replace("{P}", str(project)) for a in args]
    r = cli("-C", str(project), "draft-outreach", "--upstream", str(up.path), *argv)
    _refused(r, "inside the stack")
    assert "choose a path outside it" in r.err
    assert _tree(project / "stack") == before
    assert not (tmp_path / "briefs").exists()


def test_handoff_never_replaces_a_file_it_did_not_write(cli, forbids, tmp_path: Path) -> None:
    """--handoff FILE replaced whatever FILE was (stack/series with Markdown).
    An existing file is replaced only when the brief folder's manifest lists it."""
    project, up = forbids
    readme = project / "README.md"
    readme.write_text("# the project's own readme\n")
    out = tmp_path / "briefs"
    base = ["-C", str(project), "draft-outreach", "--upstream", str(up.path), "--out", str(out)]
    r = cli(*base, "--handoff", str(readme))
    _refused(r, "exists and draft-outreach did not write it")
    assert "name a new file" in r.err
    assert readme.read_text() == "# the project's own readme\n" and not out.exists()
    handoff = project / "HANDOFF.md"
    for _ in range(2):  # new, then the one it wrote (the manifest lists it)
        r = cli(*base, "--handoff", str(handoff))
        assert r.code == 0, r.err
    manifest = json.loads((out / "MANIFEST.json").read_text())
    assert os.path.relpath(handoff, out) in manifest["outputs"]
    assert cli("-C", str(project), "draft-outreach", "--check", "--out", str(out)).code == 0
    _refused(cli(*base, "--handoff", str(out / "MANIFEST.json")), "name another file")


def test_a_handoff_inside_the_brief_folder_is_kept(cli, forbids, tmp_path: Path) -> None:
    """A --handoff inside --out was written, then deleted with the
    old briefs (a .md the new set did not hold) and reported as removed."""
    project, up = forbids
    out = tmp_path / "briefs"
    r = cli("-C", str(project), "draft-outreach", "--upstream", str(up.path), "--out", str(out),
            "--handoff", str(out / "HANDOFF.md"), "--json")
    assert r.code == 0, r.err
    written = json.loads(r.out)
    assert "HANDOFF.md" in written["files"] and written["removed"] == []
    assert (out / "HANDOFF.md").read_text().startswith("#")
    assert cli("-C", str(project), "draft-outreach", "--check", "--out", str(out)).code == 0


def test_a_contributing_md_that_is_not_utf8(cli, tmp_path: Path) -> None:
    """Bytes that are not UTF-8 in the upstream's CONTRIBUTING.md made
    `draft-outreach --out` fail with UnicodeEncodeError, and without --out went to stdout
    raw. Both now write valid UTF-8: U+FFFD where the file is not, and a finding."""
    from tests.builders import commit_all

    up = policy_upstream(tmp_path / "up", FORBIDS)
    (up.path / "CONTRIBUTING.md").write_bytes(
        FORBIDS.encode() + b"- Caf\xe9 rules: use ASCII only \xff\xfe in code.\n")
    up.commits["policy"] = commit_all(up.path, "docs : a Latin-1 line")
    patch = api_patch(up, tmp_path / "scratch")
    project = _project(tmp_path, up, [("0001-tiny-add-tiny_cube.patch", patch)])
    line = FORBIDS.count("\n") + 1
    finding = f"CONTRIBUTING.md at the base is not valid UTF-8 (first at line {line})"
    r = cli("-C", str(project), "draft-outreach", "--upstream", str(up.path), "--series")
    assert r.code == 0, r.err
    r.out.encode("utf-8")  # strict: no undecodable byte smuggled through as a surrogate
    assert finding in r.out and "Caf\ufffd rules" in r.out
    out = tmp_path / "briefs"
    r = cli("-C", str(project), "draft-outreach", "--upstream", str(up.path), "--series",
            "--out", str(out))
    assert r.code == 0, r.err
    for path in out.iterdir():
        path.read_bytes().decode("utf-8")  # strict
    assert finding in (out / "series.md").read_text(encoding="utf-8")
    data = _json(cli, project, up)
    assert any(finding in m for m in data["missing"])


def test_a_bumped_version_macro_is_changed_api_not_added() -> None:
    """Bug: bumping a version macro the base already defines (LLAMA_SESSION_VERSION 9 -> 10)
    was briefed as "public API added", with questions about callers of the new API and the
    sized types of a macro."""
    from patchctl.model.patchfile import parse_patch
    from patchctl.outreach.facts import changed_macros, public_api

    patch = parse_patch(
        b"From: A <a@b.c>\nSubject: [PATCH] x\n\n---\n"
        b"diff --git a/include/x.h b/include/x.h\n--- a/include/x.h\n+++ b/include/x.h\n"
        b"@@ -1,2 +1,3 @@\n-#define X_VERSION 9\n+#define X_VERSION 10\n+#define X_NEW 1\n"
        b" int x(void);\n", path=Path("stack/patches/0001-x.patch"), name="0001-x.patch")
    base = {"include/x.h": "#define X_VERSION 9 // the format\nint x(void);\n"}
    assert [a.name for a in public_api(patch, base)] == ["X_NEW"]
    assert [(a.name, a.signature) for a in changed_macros(patch, base)] == \
        [("X_VERSION", "#define X_VERSION 10 (was: #define X_VERSION 9)")]


def test_a_question_the_outreach_data_asks_in_its_own_words_is_asked_once(cli, forbids) -> None:
    """Every patch adding API got "What happens for callers that never set the new API?",
    and the outreach data asked the same ("What does this cost a caller that never sets
    ...?"): the brief asked it twice. The data's wording stays, with the evidence of both."""
    project, up = forbids
    (project / "stack" / "outreach").mkdir()
    (project / "stack" / "outreach" / "cube.toml").write_text(
        'format = 1\nconcern = "cube"\nsummary = "Adds tiny_cube."\n'
        '[[question]]\nquestion = "What does this cost a caller that never sets it?"\n'
        'evidence = ["src/util.c (the default)"]\n')
    questions = _json(cli, project, up)["patches"][0]["questions"]
    asked = [q["question"] for q in questions]
    assert not [q for q in asked if q.startswith("What happens for callers that never set")]
    own = next(q for q in questions if q["question"].startswith("What does this cost"))
    assert own["evidence"][0] == "src/util.c (the default)"
    assert [e for e in own["evidence"] if e.startswith("include/tiny.h:")]
    assert own["source"] == "public API added; stack/outreach/cube.toml"
