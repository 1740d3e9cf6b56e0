"""The committed briefs for the real stack (evidence/outreach, evidence/DGR-069) are current.

The default test needs neither network nor llama.cpp: the brief directory's manifest records
the sha256 of every offline input (stack files, outreach data, the evidence records the
briefs cite, templates, the outreach code) and of every file written, and `draft-outreach
--check` recomputes them. The full regeneration compare needs the llama.cpp history
(PATCHCTL_LLAMA_CPP) and runs under `-m llama`.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BRIEFS = ROOT / "evidence" / "outreach"
HANDOFF = ROOT / "evidence" / "DGR-069" / "README.md"
LLAMA_CPP = os.environ.get("PATCHCTL_LLAMA_CPP", "")


def test_committed_briefs_are_not_stale(cli) -> None:
    """Fails when the stack, its outreach data or evidence, the templates or the outreach
    code changed after the briefs were written, or a brief was edited by hand: regenerate
    with the command the manifest names (see evidence/DGR-069/README.md)."""
    r = cli("-C", str(ROOT), "draft-outreach", "--check", "--out", str(BRIEFS), "--json")
    result = json.loads(r.out)
    assert result["ok"], (f"stale briefs: {result['stale']}; regenerate with: "
                          f"{result['command']} (UPSTREAM: a llama.cpp clone)")
    assert r.code == 0
    manifest = json.loads((BRIEFS / "MANIFEST.json").read_text())
    pin = (ROOT / "stack" / "upstream.toml").read_text()
    assert f'commit = "{manifest["base"]}"' in pin
    assert "../DGR-069/README.md" in manifest["outputs"]


@pytest.mark.llama
@pytest.mark.skipif(not LLAMA_CPP, reason="set PATCHCTL_LLAMA_CPP to a llama.cpp clone")
def test_regenerating_the_briefs_gives_the_committed_bytes(cli, tmp_path: Path) -> None:
    out = tmp_path / "outreach"
    r = cli("-C", str(ROOT), "draft-outreach", "--series", "--upstream", LLAMA_CPP,
            "--out", str(out), "--handoff", str(tmp_path / "README.md"))
    assert r.code == 0, r.err
    for path in sorted(BRIEFS.glob("*.md")):
        assert (out / path.name).read_text() == path.read_text(), path.name
    rel = os.path.relpath(out, ROOT)
    assert (tmp_path / "README.md").read_text().replace(rel, "evidence/outreach") == \
        HANDOFF.read_text()


def test_committed_briefs_have_a_short_first_screen_and_no_prose() -> None:
    """Each brief's part before the guide is under
    FIRST_SCREEN_WORDS, opens with what the patch does, its results and next actions, and no brief
    holds a paragraph of argument (tests/outreach_helpers.py's prose check)."""
    from tests.outreach_helpers import prose_problems

    briefs = sorted(b for b in BRIEFS.glob("0*.md") if not b.name.endswith(".details.md"))
    series = [line.split()[0] for line in (ROOT / "stack" / "series").read_text().splitlines()
              if line.strip() and not line.startswith("#")]
    assert [b.stem for b in briefs] == [s.removesuffix(".patch") for s in series]
    for path in briefs:
        text = path.read_text(encoding="utf-8")
        first = text.split("\n## Understanding guide\n")[0]
        assert len(first.split()) < FIRST_SCREEN_WORDS, (path.name, len(first.split()))
        heads = [line for line in first.splitlines() if line.startswith("## ")]
        heads = [h for h in heads if h != "## Expect these objections"]
        assert heads[:4] == ["## What it does", "## Test results", "## Next actions",
                             "## Facts and sources"], (path.name, heads)
        assert prose_problems(text) == [], path.name
    assert prose_problems((BRIEFS / "series.md").read_text(encoding="utf-8")) == []


GOLDEN = Path(__file__).resolve().parent / "golden" / "outreach-tiny"
# what a person reads before the guide; the stack data's api and scope, the reviewers and
# all but four prior-art leads are in the details file, which keeps it there
FIRST_SCREEN_WORDS = 800
BRIEF_WORDS = 3000  # the whole brief, read before putting a name on a PR


@pytest.mark.parametrize("folder", [BRIEFS, GOLDEN], ids=["evidence", "golden"])
def test_each_patch_brief_keeps_its_word_budget(folder: Path) -> None:
    """A patch's brief ran to 3,375-8,028 words (a per-hunk guide with every declaration
    and the whole Details section inline), too long to read before a PR. Each brief is at
    most FIRST_SCREEN_WORDS before its guide and 3,000 in all; the rest is in its details file,
    which it links, and which links back."""
    briefs = sorted(b for b in folder.glob("0*.md") if not b.name.endswith(".details.md"))
    assert briefs
    for path in briefs:
        text = path.read_text(encoding="utf-8")
        first = text.split("\n## Understanding guide\n")[0]
        assert len(first.split()) <= FIRST_SCREEN_WORDS, (path.name, len(first.split()))
        assert len(text.split()) <= BRIEF_WORDS, (path.name, len(text.split()))
        details = path.with_name(path.name.removesuffix(".md") + ".details.md")
        assert details.is_file(), details.name
        assert f"]({details.name})" in text
        assert f"]({path.name})" in details.read_text(encoding="utf-8")


def perf_record_is_current() -> bool:
    """Whether the per-prefix perplexity, llama-bench and ctest record was made at the stack
    as it is (it needs two GGUF models and a llama.cpp build per prefix to redo)."""
    import tomllib

    record = json.loads((ROOT / "evidence" / "perf-prefixes.json").read_text(encoding="utf-8"))
    lock = tomllib.loads((ROOT / "stack" / "stack.lock").read_text(encoding="utf-8"))
    return bool(record.get("stack", {}).get("fingerprint") == lock["fingerprint"])


def test_committed_briefs_answer_the_first_screen_findings() -> None:
    """On the real stack: the first screens of the patches after the fixture
    say that upstream's ctest fails the same tests at the pin as after the patch, count
    CONTRIBUTING's perplexity and performance ask as covered by the record that runs
    llama-perplexity and llama-bench at every prefix (one entry for both), and show each
    patch's burden."""
    briefs = sorted(b for b in BRIEFS.glob("0*.md") if not b.name.endswith(".details.md"))
    for path in briefs[1:]:
        first = path.read_text(encoding="utf-8").split("\n## Facts and sources\n")[0]
        assert re.search(r"upstream churn: \d+ commit\(s\) of the 90 days", first), path.name
        if not perf_record_is_current():
            # the patches changed after the per-prefix run: the brief must not count it
            assert "covered by records of this patch" not in first, path.name
            # (a patch the record never saw, split out since, has no record at all)
            seen = ("no record of this patch as it is compares llama-perplexity, llama-bench"
                    in first)
            assert seen or ("no evidence record compares llama-perplexity, llama-bench before "
                            "and after the patch" in first), path.name
            if seen:
                # its figures are still shown, with its spread, as the other stack's
                details = path.with_name(path.name.removesuffix(".md") + ".details.md").read_text(
                    encoding="utf-8")
                assert re.search(r"pp512 [\d.]+ \(\d+-\d+\).*\(made at stack [0-9a-f]{12}, not "
                                 r"the patches as they are\)", details), path.name
            continue
        assert re.search(r"upstream ctest, pin and \d+ prefixes: the same (\d+) fail at each, "
                         r"of [\d/]+ (\(pin to last prefix\) )?tests; 0 changed by the patch",
                         first), path.name
        covered = first.split("Asked upstream, covered by records of this patch:")[1]
        assert "`llama-perplexity`, `llama-bench`\n     - `evidence/perf-prefixes.json`" \
            in covered, path.name
        assert "perplexity" not in first.split("Asked upstream, not covered yet:")[1] \
            .split("Asked upstream, covered")[0], path.name
        # llama-bench run as the baseline of another design (pipeline-vs-rpc) does not
        # show that the patch leaves performance alone: it is not listed under the ask
        assert "pipeline-vs-rpc" not in covered.split("\n5. ")[0], path.name


def test_the_manifest_hashes_the_scripts_the_records_run() -> None:
    """Bug: what a brief says a record covers depends on the wrapper script the record runs
    (scripts/perf-prefixes.sh runs llama-bench), but the manifest did not hash it, so
    `--check` said "up to date" after the script changed; and tools a checkout installed
    (.venv/bin) must not be inputs, or a fresh clone is stale before it is touched."""
    inputs = json.loads((BRIEFS / "MANIFEST.json").read_text())["inputs"]
    assert "scripts/perf-prefixes.sh" in inputs
    assert not [k for k in inputs if any(p.startswith(".") for p in k.split("/"))]


def _library_lines(patch: Path) -> tuple[int, int]:
    """Files and lines added or removed outside tests/, counted from the diff's text."""
    files, lines, path, in_hunk = 0, 0, "", False
    for ln in patch.read_text(encoding="utf-8").splitlines():
        if ln.startswith("diff --git "):
            files, path, in_hunk = files + 1, ln.split(" b/", 1)[1], False
        elif ln.startswith("@@ "):
            in_hunk = True
        elif in_hunk and ln[:1] in "+-" and not path.startswith("tests/"):
            lines += 1
    return files, lines


def test_the_range_brief_expects_the_mlock_and_size_objections() -> None:
    """Bug: the range patch's first screen listed the objections a maintainer would raise
    but not two that docs/layer-window.md names: mlock refused for a range that starts
    after layer 0, and the size of the patch for one PR. The size is counted from the
    patch, not written by hand, so it stays true when the patch changes."""
    name = "0004-llama-load-and-run-a-range-of-layers"
    first = (BRIEFS / f"{name}.md").read_text(encoding="utf-8")
    block = first.split("## Expect these objections\n")[1].split("\n## ")[0]
    assert "- mlock refused for a range that starts after layer 0" in block
    files, lines = _library_lines(ROOT / "stack" / "patches" / f"{name}.patch")
    assert (f"- size for one PR: {files} files, {lines} library lines (± outside `tests/`; "
            "from the patch)\n") in block


def test_the_briefs_name_the_discussion_and_the_other_rpc_pr() -> None:
    """Bug: prior art lacked Discussion #20252 (which #25577 cites; the feature-request form
    asks for a Discussion first) and upstream's other RPC events/async PR #24675, and the
    rule "Discuss the idea first" said no discussion was recorded. The discussion was not
    read, so it is named as unverified and the rule stays for the person to check."""
    for name in ("0004-llama-load-and-run-a-range-of-layers",
                 "0006-llama-run-a-layer-range-of-DeepSeek-V4"):
        text = (BRIEFS / f"{name}.md").read_text(encoding="utf-8")
        assert ("| Discuss the idea first | check | discussion named, not read (prior art, "
                "unverified): https://github.com/ggml-org/llama.cpp/discussions/20252 |"
                ) in text, name
        assert "- UNVERIFIED ggml-org/llama.cpp discussion \\#20252 (discussion)" in text, name
        assert "ggml-org/llama.cpp\\#24675 (closed)" in text.split("### Prior art")[1], name
        details = (BRIEFS / f"{name}.details.md").read_text(encoding="utf-8")
        assert "it and \\#18626 implement the same design" in details, name
