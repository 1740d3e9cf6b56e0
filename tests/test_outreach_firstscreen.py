"""draft-outreach: a first screen that says what to do, and no prose anywhere.

A brief opens with what the patch does, its test results in one line each, and next
actions derived from the data (where to post first, the order of pull requests, what the
upstream asks that the evidence does not cover); the guide collapses one change repeated
across files; the rules are quoted once, in series.md.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.builders import (
    Upstream,
    commit_all,
    format_patch,
    git,
    make_project,
    replace_in,
    system_config_off,
    write,
)
from tests.outreach_helpers import api_patch, markdown_problems, policy_upstream, prose_problems

ROOT = Path(__file__).resolve().parent.parent

CONTRIBUTING = """# Contributing

## Before you start

- Features must begin with an issue, not a PR.
- If you are a new contributor, limit your open PRs to 1
- Pull request descriptions must not be machine-written.

## Testing

- Execute the full CI locally (ci/run.sh) before publishing
- Verify that perplexity and speed are not affected (use `llama-perplexity` and `llama-bench`)
- If you modified the `ggml` source, run the `test-backend-ops` tool
"""

TEMPLATE = """## Overview

<!-- Describe what this PR does and why -->

## Requirements

- AI usage disclosure: <!-- YES / NO -->
"""

MODELS = ("alpha", "beta", "gamma")


def _model(name: str) -> str:
    return (f"void build_{name}(void)\n{{\n    for (int il = 0; il < n_layer; ++il) {{\n"
            f"        {name}_layer(il);\n    }}\n    {name}_head();\n}}\n")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Upstream]:
    """Three patches: 0001 adds tiny_cube (a declaration and a definition); 0002 edits the
    line after 0001's declaration (its context holds it), calls tiny_cube, and makes the same
    change in three model files; 0003 touches only README.md."""
    with system_config_off():
        return _stack(tmp_path_factory.mktemp("firstscreen"))


def _stack(root: Path) -> tuple[Path, Upstream]:
    up = policy_upstream(root / "up", CONTRIBUTING, template=TEMPLATE)
    write(up.path, {f"src/models/{m}.c": _model(m) for m in MODELS})
    write(up.path, {".github/ISSUE_TEMPLATE/010-bug.yml": "name: Bug\n",
                    ".github/ISSUE_TEMPLATE/020-enhancement.yml": "name: Feature\n",
                    ".github/ISSUE_TEMPLATE/config.yml": "blank_issues_enabled: false\n"})
    up.commits["policy"] = commit_all(up.path, "models and issue forms (#5)")
    scratch = root / "scratch"
    first = api_patch(up, scratch, trailers={"Concern": "cube", "Scope": "include/* src/*"})
    after_first = git(scratch, "rev-parse", "HEAD").strip()

    def second(work: Path) -> None:
        replace_in(work / "include/tiny.h", "int tiny_cube(int v);\n\n",
                   "int tiny_cube(int v);\nint tiny_cube_sum(int a, int b);\n\n")
        replace_in(work / "src/util.c", "int tiny_abs(int v)",
                   "int tiny_cube_sum(int a, int b)\n{\n    return tiny_cube(a) + tiny_cube(b);"
                   "\n}\n\nint tiny_abs(int v)")
        for m in MODELS:
            replace_in(work / f"src/models/{m}.c", "il = 0; il < n_layer;",
                       "il = il_start; il < il_end;")
            replace_in(work / f"src/models/{m}.c", f"    {m}_head();\n",
                       f"    if (stop_early()) {{\n        return;\n    }}\n    {m}_head();\n")

    second_patch = format_patch(up, after_first, second, subject="tiny : add tiny_cube_sum",
                                trailers={"Concern": "sum", "Upstream-Status": "Pending"},
                                scratch=scratch)
    after_second = git(scratch, "rev-parse", "HEAD").strip()
    third = format_patch(up, after_second,
                         lambda w: replace_in(w / "README.md", "A small C library.",
                                              "A small C library in C."),
                         subject="docs : say C", trailers={"Concern": "docs",
                                                           "Upstream-Status": "Pending"},
                         scratch=scratch)
    project = make_project(root / "proj", up, [
        ("0001-tiny-add-tiny_cube.patch", first), ("0002-tiny-add-tiny_cube_sum.patch",
                                                    second_patch),
        ("0003-docs-say-c.patch", third)], pin=up.commits["policy"])
    (project / "stack" / "outreach").mkdir()
    (project / "stack" / "outreach" / "cube.toml").write_text(
        'format = 1\nconcern = "cube"\n'
        'summary = "Adds tiny_cube. Callers no longer write x*x*x (e.g. in ops)."\n'
        'motivation = "Three ops cube their input. Each spells it differently."\n'
        '[[prior_art]]\nkind = "issue"\nref = "tiny/tiny#3"\nurl = "https://example.invalid/3"\n'
        'title = "Old cube request"\nstate = "closed"\nverified = true\n'
        'checked_via = "read it (closed, labels enhancement+stale)"\nnote = "Closed unanswered."\n'
        '[[prior_art]]\nkind = "issue"\nref = "tiny/tiny#7"\nurl = "https://example.invalid/7"\n'
        'title = "Please add cube"\nstate = "open"\nverified = true\n'
        'checked_via = "thread excerpt (state open, label stale, opened 2026-07-12)"\n'
        'note = "Asked for in 2026."\n'
        '[[question]]\nquestion = "How was it tested, and how are the tests rerun?"\n'
        'evidence = ["evidence/cube"]\n')
    ev = project / "evidence" / "cube"
    ev.mkdir(parents=True)
    record = {"schema": "patchctl.evidence/1", "argv": ["build/bin/test-cube"], "exit_code": 0,
              "expect": "pass", "as_expected": True, "seconds": 1.5,
              "stack": {"pin": "0" * 40, "fingerprint": "f" * 64}, "extra": {}}
    for name, log, backend in (
            ("cube-upstream-test", "28: |alpha |OK |bit-identical\n"
             "28: cube ranges: 3 bit-identical, 1 rejected, 0 failed, 2 not synthesized\n"
             "100% tests passed, 0 tests failed out of 1\n", {"name": "cpu", "driver": None}),
            ("cube-ci", "run ci/run.sh\nall good\n", None),
            ("cube-pytest", "==== 4 passed, 1 skipped in 0.52s ====\n", {"name": "cuda"})):
        data = {**record, "name": name, "output_file": f"{name}.log",
                "argv": ["ci/run.sh"] if name == "cube-ci" else record["argv"]}
        if backend:
            data["backend"] = backend
        (ev / f"{name}.json").write_text(json.dumps(data))
        (ev / f"{name}.log").write_text(log)
    return project, up


def _render(cli, project: Path, up: Path, out: Path, *args: str) -> dict[str, str]:
    r = cli("-C", str(project), "draft-outreach", "--upstream", str(up), "--out", str(out),
            *args)
    assert r.code == 0, r.err
    return {p.name: p.read_text(encoding="utf-8") for p in out.glob("*.md")}


@pytest.fixture
def briefs(stack, cli, tmp_path: Path) -> dict[str, str]:
    project, up = stack
    return _render(cli, project, up.path, tmp_path / "out", "--series")


def _first_screen(text: str) -> str:
    return text.split("## Understanding guide")[0]


def test_first_screen_order_and_one_line_results(briefs) -> None:
    """The brief opened with 80 lines of rules; test totals (127/5/0/14) and
    the backend appeared nowhere. Now it opens with what the patch does, one line per
    result with its backend and record, then next actions, then facts, then the guide, and
    the rules last."""
    text = briefs["0001-tiny-add-tiny_cube.md"]
    heads = [ln for ln in text.splitlines() if ln.startswith("## ")]
    assert heads[:5] == ["## What it does", "## Test results", "## Next actions",
                         "## Facts and sources", "## Understanding guide"]
    assert heads[-2:] == ["## Rules", "## Missing parts"]
    results = text.split("## Test results")[1].split("## Next actions")[0]
    assert ("- cube ranges: 3 bit-identical, 1 rejected, 0 failed, 2 not synthesized (cpu: "
            "`evidence/cube/cube-upstream-test.json` (other stack))") in results
    # a runner's summary when the log states no totals of its own; its backend as recorded
    assert "- 4 passed, 1 skipped (cuda: `evidence/cube/cube-pytest.json` (other stack))" \
        in results
    # no totals in the log: said, not invented; no backend in the record: said
    assert "- more records (Details): 1 without totals" in results
    # the summary is facts, one a sentence, with its source
    assert "- summary, from `stack/outreach/cube.toml`" in text
    assert "  - Callers no longer write x\\*x\\*x (e.g. in ops).\n" in text
    assert len(_first_screen(text).split()) < 800


def test_next_actions_post_first_on_the_open_issue_or_the_issue_form(briefs) -> None:
    """No brief said to comment on the open issue first (#25577, labelled
    stale), nor, for a patch with no issue, which issue form to use."""
    cube = briefs["0001-tiny-add-tiny_cube.md"]
    assert ("1. Post first: comment on [tiny/tiny\\#7](https://example.invalid/7) (open; "
            "labels: stale; per `stack/outreach/cube.toml`)") in cube
    assert "   - issue first: `CONTRIBUTING.md:5`" in cube
    assert "   - other issues recorded: tiny/tiny\\#3 (closed)" in cube
    docs = briefs["0003-docs-say-c.md"]
    assert ("1. Post first: no open issue recorded: open one with the upstream's form "
            "`.github/ISSUE_TEMPLATE/020-enhancement.yml`") in docs
    assert "   - other forms there: `010-bug.yml`\n" in docs  # config.yml is not a form


def test_pr_order_from_the_patches_dependencies(briefs) -> None:
    """The briefs gave no PR order. 0002's hunk in include/tiny.h has 0001's
    added line as context (it does not apply without 0001) and it calls 0001's tiny_cube;
    0003 needs nothing; the upstream's open-PR limit is quoted."""
    order = briefs["series.md"].split("## Next actions")[1].split("2. Post first")[0]
    assert "1. PR order: 0001 -> 0002 -> 0003 (apply order)\n" in order
    assert ("   - 0002 needs 0001: its hunks touch lines 0001 adds in `include/tiny.h`, "
            "`src/util.c`; it uses 0001's `tiny_cube`\n") in order
    assert "0003 needs" not in order
    assert "   - open PRs: `CONTRIBUTING.md:6`: - If you are a new contributor, limit your " \
           "open PRs to 1" in order
    assert "   - 0003 needs no earlier patch" in briefs["0003-docs-say-c.md"]


def test_what_the_upstream_asks_that_no_evidence_covers(briefs) -> None:
    """CONTRIBUTING.md asks for a ci/ run, perplexity and llama-bench; no brief
    said that no record ran them. A record running ci/run.sh covers the first; the ggml ask
    does not apply to a patch that touches no ggml/ path; the template's disclosure item is
    open while the patch records no Assisted-by trailer."""
    asks = briefs["0002-tiny-add-tiny_cube_sum.md"].split("3. Asked upstream")[1].split("##")[0]
    assert "no evidence record runs ci/\n" in asks  # the sum concern has no evidence
    # the ask is that they are "not affected": a record must compare the pin with the patch
    assert "no evidence record compares llama-perplexity, llama-bench before and after the " \
        "patch" in asks
    assert "test-backend-ops" not in asks
    # a missing trailer is never read as "no AI": the submitter answers (the item's own line)
    assert "md:7`: AI usage disclosure: the patch records no trailer (not a NO): ask whoever " \
        "wrote it; yours to answer truthfully" in asks
    cube = briefs["0001-tiny-add-tiny_cube.md"].split("3. Asked upstream")[1].split("##")[0]
    # evidence/cube/cube-ci.json runs ci/run.sh, on another stack
    assert ("no record of this patch as it is runs ci/ (records of other stacks do): "
            "`evidence/cube/cube-ci.json`\n") in cube
    assert "no evidence record compares llama-perplexity, llama-bench before and after the " \
        "patch" in cube


def test_a_record_running_the_asked_tool_covers_the_ask(cli, tmp_path: Path) -> None:
    """CONTRIBUTING's perplexity and performance ask was listed as not covered,
    and a record that ran the tool made the line vanish without naming the record. A record
    of the patch as it is whose command runs llama-bench (written by `patchctl record`)
    now lists the ask as covered, with the record and its rerun command; a record whose
    name says llama-perplexity but whose command is a wrapper covers nothing, nor does
    a file the command is given to read.
    The ask is that they are "not affected": a record that runs llama-bench without the pin
    (a baseline for another design, with the patch throughout) was listed as covering it."""
    with system_config_off():
        up = policy_upstream(tmp_path / "up", CONTRIBUTING, template=TEMPLATE)
        patch = api_patch(up, tmp_path / "scratch")
        project = make_project(tmp_path / "proj", up, [("0001-tiny-add-tiny_cube.patch", patch)],
                               pin=up.commits["policy"])
    bench = tmp_path / "bin" / "llama-bench"
    bench.parent.mkdir()
    bench.write_text("#!/bin/sh\necho '| model | test | t/s |'\n")
    bench.chmod(0o755)
    ev = project / "evidence" / "cube"
    scripts = project / "scripts"
    scripts.mkdir()
    (scripts / "says.sh").write_text("#!/bin/sh\n# would run llama-perplexity\necho PPL = 1.0\n")
    # a file the command reads is not a script it runs, whatever its lines say
    (scripts / "reads.txt").write_text("Run llama-perplexity -f text.txt to score a text.\n")
    pin = up.commits["policy"][:9]  # a record that names the pin ran it too: it compares
    for name, command in (("cube-llama-bench", [str(bench), "-m", "tiny.gguf", "-r", "3",
                                                f"pin={pin}"]),
                          # llama-bench as the baseline of another design, the patch applied
                          # throughout: it does not show the patch leaves speed alone
                          ("cube-rpc-baseline", [str(bench), "-m", "tiny.gguf", "--rpc", "h:1"]),
                          ("cube-llama-perplexity", ["sh", "-c", "echo PPL = 1.0"]),
                          ("cube-says", ["sh", str(scripts / "says.sh")]),
                          ("cube-reads", ["sh", str(scripts / "says.sh"),
                                          str(scripts / "reads.txt")])):
        r = cli("-C", str(project), "record", "--name", name, "--evidence-dir", str(ev), "--",
                *command)
        assert r.code == 0, r.err
    text = _render(cli, project, up.path, tmp_path / "out")["0001-tiny-add-tiny_cube.md"]
    actions = text.split("## Next actions")[1].split("## Facts")[0]
    assert ("4. Asked upstream, covered by records of this patch:\n"
            "   - `CONTRIBUTING.md:12`: - Verify that perplexity and speed are not affected "
            "(use ...: `llama-bench`\n"
            f"     - `evidence/cube/cube-llama-bench.json`, rerun: `{bench} -m tiny.gguf -r 3 "
            f"pin={pin}`\n"
            ) in actions
    assert ("\\`llama-...: no evidence record compares llama-perplexity before and after the "
            "patch\n") in actions
    assert "5. Policy lint" in actions
    assert "cube-rpc-baseline" not in actions
    assert prose_problems(text) == []
    # a script of the project whose own lines run the tool covers it (its comments do not)
    (scripts / "ppl.sh").write_text('#!/bin/sh\n"$1/bin/llama-perplexity" -m "$2" -f t.txt\n')
    r = cli("-C", str(project), "record", "--name", "cube-ppl", "--evidence-dir", str(ev),
            "--", "sh", str(scripts / "ppl.sh"), str(tmp_path), "tiny.gguf", pin)
    assert r.code != 0  # no such binary: the record says how it ended, it still counts
    text = _render(cli, project, up.path, tmp_path / "out2")["0001-tiny-add-tiny_cube.md"]
    actions = text.split("## Next actions")[1].split("## Facts")[0]
    assert "no evidence record compares llama-perplexity" not in actions
    # one entry for the ask: each record once, with the tools it runs when not all of them
    assert "(use ...: `llama-perplexity`, `llama-bench`\n" in actions
    assert ("`evidence/cube/cube-ppl.json` (`llama-perplexity` only), rerun: "
            f"`sh {scripts}/ppl.sh {tmp_path} tiny.gguf {pin}`") in actions
    assert "`evidence/cube/cube-llama-bench.json` (`llama-bench` only)" in actions
    # a record that runs every tool the ask names is rerun; those running part of it are
    # named on one line (the brief's first screen stays short as records accumulate)
    (scripts / "both.sh").write_text('#!/bin/sh\n"$1/bin/llama-perplexity" -m "$2"\n'
                                     '"$1/bin/llama-bench" -m "$2"\n')
    cli("-C", str(project), "record", "--name", "cube-both", "--evidence-dir", str(ev),
        "--", "sh", str(scripts / "both.sh"), str(tmp_path), "tiny.gguf", pin)
    text = _render(cli, project, up.path, tmp_path / "out3")["0001-tiny-add-tiny_cube.md"]
    actions = text.split("## Next actions")[1].split("## Facts")[0]
    assert (f"     - `evidence/cube/cube-both.json`, rerun: "
            f"`sh {scripts}/both.sh {tmp_path} tiny.gguf {pin}`\n"
            # it names a folder outside the project (tmp_path): a clone lacks it
            "       - needs the paths of the machine that recorded it\n"
            "     - and 2 running part of it (reruns under Evidence records): "
            "`evidence/cube/cube-ppl.json`, `evidence/cube/cube-llama-bench.json`\n") in actions
    assert "(`llama-bench` only)" not in actions and "rerun: `sh " + str(scripts) + "/ppl.sh" \
        not in actions
    details = _render(cli, project, up.path, tmp_path / "out4")[
        "0001-tiny-add-tiny_cube.details.md"]
    assert "cube-ppl:" in details.split("## Evidence records")[1]  # its rerun is still there


def test_the_same_change_in_many_files_is_one_guide_entry(briefs) -> None:
    """526 of 926 lines of a brief were a per-hunk guide over 29 near-identical
    model files. One change repeated across files (a name that is the file's own stem
    counts as the same) is one entry listing the files and showing the change once."""
    text = briefs["0002-tiny-add-tiny_cube_sum.md"]
    guide = text.split("## Understanding guide")[1].split("## Questions")[0]
    assert "### 2. The same change in 3 files" in guide
    assert ("- files: `src/models/alpha.c`, `src/models/beta.c`, `src/models/gamma.c`"
            in guide)
    assert "-    for (int il = 0; il < n_layer; ++il) {" in guide
    assert "### 3. src/util.c" in guide and "### 4." not in guide
    # hunk by hunk in the details file: the first file's hunks only
    details = briefs["0002-tiny-add-tiny_cube_sum.details.md"]
    hunks = details.split("## Hunk by hunk")[1].split("\n## ")[0]
    assert "### 2. The same change in 3 files" in hunks
    assert hunks.count("hunk 1 of `src/models/") == 1
    assert "- `src/models/alpha.c` and 2 more, the same change: +4 -1 each" in details


def test_rules_are_quoted_once_in_the_series(stack, briefs, cli, tmp_path: Path) -> None:
    """Every brief repeated the 80-line rules block. With series.md written,
    it quotes the rules and each brief links to it with what applies to its patch; a
    brief written alone still quotes them, last."""
    series = briefs["series.md"]
    assert "- [ ] **Features begin with an issue**" in series
    assert "  - `CONTRIBUTING.md:5`: - Features must begin with an issue, not a PR." in series
    for name, text in briefs.items():
        assert markdown_problems(text, files=set(briefs)) == [], name
        if name != "series.md" and not name.endswith(".details.md"):
            assert "- [ ]" not in text and "`CONTRIBUTING.md:5`: -" not in text
            assert "Quoted once for the series in [series.md](series.md)" in text
            assert re.search(r"^\| Features begin with an issue \| (yes|check) \|", text,
                             re.M)
    project, up = stack
    alone = _render(cli, project, up.path, tmp_path / "one", "0001")
    text = alone["0001-tiny-add-tiny_cube.md"]
    assert "series.md" not in text
    rules = text.split("## Rules")[1]
    assert "- [ ] **Features begin with an issue**: applies: yes" in rules


def test_no_paragraph_of_argument_in_any_brief(briefs) -> None:
    """The toml's motivation was rendered as one paste-ready paragraph. Every
    rendered brief passes the prose check; the outreach data's text is one fact a line."""
    for name, text in briefs.items():
        assert prose_problems(text) == [], name
    facts = briefs["0001-tiny-add-tiny_cube.md"].split("## Facts and sources")[1]
    assert "- motivation:\n  - Three ops cube their input.\n  - Each spells it differently." \
        in facts


@pytest.mark.parametrize("text", [
    "We propose this change because the current code is slow and the users have asked for "
    "it many times; clearly it should be merged.\n",
    " ".join(["word"] * 45) + "\n",
    "- " + " ".join(["word"] * 85) + "\n",
    "- I believe this is right.\n",
], ids=["persuasive", "long-paragraph", "long-item", "first-person-item"])
def test_the_prose_check_finds_argument(text: str) -> None:
    """The check itself: a paragraph of argument, a long paragraph or list item,
    or first person fails; quotes with a citation, code, tables and the banner pass."""
    assert prose_problems(text)
    fine = ("> We never post anything: a quote block is the banner.\n\n"
            "- `AGENTS.md:108`: Agent: I'm sorry, I cannot submit the PR for you.\n"
            "- `we believe` in code is data\n\n| a | b |\n| --- | --- |\n| we | us |\n")
    assert prose_problems(fine) == []


def test_committed_old_briefs_fail_the_prose_check() -> None:
    """The briefs as rendered before (a motivation as one 116-word item) fail."""
    old = ("- **motivation**: " + re.sub(r"\s+", " ", """A stage of a pipeline-parallel
    runtime must be able to move from one process or host to another (a restart, a
    rebalance, a failed host) without recomputing its prompt: it saves its sequence state and
    a new process on the same layer range restores it. With range loading and boundary I/O
    alone, a stage still allocates and saves the KV cache of every layer (measured: a stage
    of 2 of 4 layers saves the state of all 4, 32984 bytes like the full model, on the tiny
    llama of the test), and the state records only the layer count.""") + "\n")
    assert prose_problems(old)


def test_a_patch_of_many_different_files_lists_ten_and_points_to_the_guide(cli,
                                                                          tmp_path: Path) -> None:
    """The boundary-io patch changes 112 files in 27 different ways; its changed-files
    list alone pushed the first screen to 1,001 words (the limit is 800). After ten entries the
    rest is one line that counts the files and names the guide's entries."""
    with system_config_off():
        up = policy_upstream(tmp_path / "up", CONTRIBUTING, template=TEMPLATE)
        write(up.path, {f"src/f{i:02d}.c": f"int f{i}(void)\n{{\n    return {i};\n}}\n"
                        for i in range(14)})
        base = commit_all(up.path, "fourteen files (#6)")

        def change(work: Path) -> None:
            for i in range(14):  # i + 1 added lines: no two files change the same way
                replace_in(work / f"src/f{i:02d}.c", f"    return {i};\n",
                           "".join(f"    (void) {j};\n" for j in range(i + 1))
                           + f"    return {i};\n")

        text = format_patch(up, base, change, subject="f : note the inputs",
                            trailers={"Concern": "many", "Upstream-Status": "Pending"},
                            scratch=tmp_path / "scratch")
        project = make_project(tmp_path / "proj", up, [("0001-f-note-the-inputs.patch", text)],
                               pin=base)
        out = _render(cli, project, up.path, tmp_path / "out")
    brief, details = out["0001-f-note-the-inputs.md"], out["0001-f-note-the-inputs.details.md"]
    listed = details.split("## Changed files")[1].split("##")[0]
    assert [line for line in listed.splitlines() if line.startswith("- `src/")] == \
        [f"- `src/f{i:02d}.c`: +{i + 1} -0" for i in range(10)]
    assert "- 4 more files: the guide's entries 11 to 14" in listed
    assert "### 14. src/f13.c: 1 hunk, +14 -0" in brief.split("## Understanding guide")[1]


def test_totals_of_other_stacks_fold_once_the_patch_has_its_own() -> None:
    """The first screen leads with what holds for the patch as it is. Once a
    record of this patch states totals, lines that only other stacks' records state become
    one line (their records stay under Evidence records), as do other stacks' records of a
    line the patch's own record states; with no current totals, every line stays."""
    from patchctl.outreach import firstscreen, recorded

    def run(file: str, current: bool, totals: list[str]) -> recorded.EvidenceRun:
        return recorded.EvidenceRun(name=file, file=file, command=[], exit_code=0, expect="pass",
                                 as_expected=True, seconds=1.0, started="", pin=None,
                                 fingerprint=None, current=current, totals=totals,
                                 backend="cpu")

    old = [run("evidence/x/old-a.json", False, ["x: 1 ok, 0 failed"]),
           run("evidence/x/old-b.json", False, ["x: 2 ok, 0 failed"])]
    bare = run("evidence/x/bare.json", True, [])
    bare_vk = run("evidence/x/bare-vulkan.json", True, [])
    bare_vk.backend = "vulkan"  # records without totals share one line, whatever the backend
    now = run("evidence/hooks/now.json", True, ["x: 3 ok, 0 failed"])
    # an older record of the same totals is folded too: the line names the current one
    same = run("evidence/x/old-same.json", False, ["x: 3 ok, 0 failed"])
    lines = firstscreen.results([*old, same, bare, bare_vk, now])
    assert [(r.text, r.records) for r in lines] == [
        ("x: 3 ok, 0 failed", ["evidence/hooks/now.json"]),
        (firstscreen.OTHER_STACKS, ["evidence/x/old-a.json", "evidence/x/old-b.json",
                                    "evidence/x/old-same.json"]),
        (firstscreen.NO_TOTALS, ["evidence/x/bare.json", "evidence/x/bare-vulkan.json"])]
    assert [r.text for r in firstscreen.results([*old, bare])] == [
        "x: 1 ok, 0 failed", "x: 2 ok, 0 failed", firstscreen.NO_TOTALS]


def test_a_recorded_wrapper_script_is_read_from_the_project_wherever_it_is(tmp_path: Path
                                                                          ) -> None:
    """Bug: a record's relative script (`scripts/perf-prefixes.sh`) was looked up in the
    folder the record was made in, so a clone elsewhere rendered "no evidence record runs
    llama-bench" where the original checkout said covered, and the same records gave
    different briefs depending on where the project was checked out."""
    from patchctl.outreach.firstscreen import runs, scripts

    clone = tmp_path / "elsewhere" / "project"
    (clone / "scripts").mkdir(parents=True)
    (clone / "scripts" / "wrap.sh").write_text("#!/bin/sh\n\"$1\"/bin/llama-bench -p 512\n")
    made_in = str(tmp_path / "original")  # the record's cwd: another checkout, since gone
    for command in (["scripts/wrap.sh", "x"], ["bash", "scripts/wrap.sh"],
                    [f"{made_in}/scripts/wrap.sh"]):
        assert runs(command, "bench", clone, made_in), command
        assert scripts(command, clone, made_in) == [(clone / "scripts/wrap.sh").resolve()]
    assert not runs(["/usr/bin/wrap.sh"], "bench", clone, made_in)
    (clone / ".venv" / "bin").mkdir(parents=True)  # what this checkout installed: not read
    (clone / ".venv" / "bin" / "tool").write_text("#!/bin/sh\nllama-bench\n")
    assert scripts([".venv/bin/tool"], clone, made_in) == []
    assert scripts(["../../outside.sh"], clone, made_in) == []


def test_the_projects_own_ci_folder_is_not_the_upstreams_ci(tmp_path: Path) -> None:
    """Bug: CONTRIBUTING.md's "Execute the full CI locally" (the upstream's ci/) was shown
    as covered by the project's Vulkan lane, because `bash native/ci/vulkan-lane.sh` has a
    ci/ folder in its path; the upstream's ci/run.sh in a llama.cpp tree still counts."""
    from patchctl.outreach.firstscreen import runs

    (tmp_path / "native" / "ci").mkdir(parents=True)
    (tmp_path / "native" / "ci" / "vulkan-lane.sh").write_text("#!/bin/sh\nctest\n")
    made_in = "/home/dev/project"
    for own in (["bash", "native/ci/vulkan-lane.sh", "/scratch/lane"],
                ["bash", f"{made_in}/native/ci/vulkan-lane.sh"]):
        assert not runs(own, "ci/", tmp_path, made_in), own
    for theirs in (["bash", "ci/run.sh", "/tmp/results"],
                   ["bash", "/src/llama.cpp/ci/run.sh", "/tmp/results", "/tmp/mnt"]):
        assert runs(theirs, "ci/", tmp_path, made_in), theirs
    # what the project's script runs: its own ci/ files, however it spells their path, are
    # not the upstream's; the upstream's ci/run.sh in a tree it is given is
    lane = tmp_path / "native" / "ci" / "lane.sh"
    lane.write_text('#!/bin/sh\nbash "$REPO/native/ci/vulkan-lane.sh"\n'
                    'bash native/ci/vulkan-lane.sh\n')
    assert not runs(["bash", "native/ci/lane.sh"], "ci/", tmp_path, made_in)
    lane.write_text('#!/bin/sh\ncd "$1" && bash ci/run.sh "$2"\n')
    assert runs(["bash", "native/ci/lane.sh", "/src/llama.cpp"], "ci/", tmp_path, made_in)


def test_a_record_of_another_stack_is_read_at_this_patchs_place_there() -> None:
    """Bug: a record of another stack gave each brief the per-prefix figures of the patch at
    the same series position there; after a split renumbered the series, the range patch
    (now 0004) showed the figures the record holds for the state patch (its 0004). The
    place is found by the file name without its number."""
    from patchctl.outreach import recorded

    stack = {"patches": [{"file": "0001-tests-fixture.patch"}, {"file": "0002-llama-range.patch"},
                         {"file": "0003-llama-state.patch"}]}
    assert recorded.place_in(stack, "0004-llama-range.patch") == 2
    assert recorded.place_in(stack, "0003-llama-state.patch") == 3
    assert recorded.place_in(stack, "0002-model-new-fix.patch") is None
    assert recorded.place_in({}, "0001-tests-fixture.patch") is None
    details = (Path(__file__).resolve().parents[1] / "evidence" / "outreach" /
               "0004-llama-load-and-run-a-range-of-layers.details.md").read_text(encoding="utf-8")
    if "made at stack 306bde107c0a" in details:
        # the per-prefix record is of 306bde10, where the range patch was the second
        assert "llama-bench t/s, median (min-max of 5 rounds) at pin / p1 / p2:" in details
