"""draft-outreach: who or what wrote each patch (from the project's own git history), and
the warning while what `git am` would send upstream is the stack's own text."""

from __future__ import annotations

import json
from pathlib import Path

from patchctl.model.patchfile import read_patch
from patchctl.outreach.disclosure import disclose, placeholder
from tests.builders import Upstream, git, make_project

EXPORT = "patchctl export --format upstream DIR"


def _commit(repo: Path, message: str, name: str) -> None:
    email = f"{name.lower()}@people.test"
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message,
        env={"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email,
             "GIT_COMMITTER_NAME": "Lead", "GIT_COMMITTER_EMAIL": "lead@people.test"})


def _outreach(cli, project: Path, upstream: Upstream, *args: str):
    return cli("-C", str(project), "draft-outreach", "--upstream", str(upstream.path), *args)


def test_the_disclosure_states_the_history_of_the_patch_file(cli, project: Path,
                                                             upstream: Upstream) -> None:
    """The disclosure section said "Only you know whether a tool helped write
    it"; it now states who committed the patch file and the Assisted-by:, Co-authored-by:
    and Generated-by: trailers of those commits (renames followed), names only."""
    git(project, "init", "-q", "-b", "main")
    _commit(project, "stack: three patches\n\nAssisted-by: ToolX", "Alice")
    name = "stack/patches/0001-util-add-tiny_square.patch"
    with (project / name).open("a") as f:
        f.write("\n")
    _commit(project, "0001: a blank line\n\nCo-authored-by: Carol <carol@people.test>\n"
            "Generated-by: GenY\nSigned-off-by: Bob <bob@people.test>", "Bob")
    git(project, "mv", name, "stack/patches/0001-util-add-square.patch")
    series = project / "stack/series"
    series.write_text(series.read_text().replace("tiny_square", "square"))
    _commit(project, "rename 0001", "Bob")
    r = _outreach(cli, project, upstream, "--json", "0001")
    assert r.code == 0, r.err
    facts = json.loads(r.out)["patches"][0]["disclosure"]
    assert facts["file"] == "stack/patches/0001-util-add-square.patch"
    assert (facts["history"], facts["commits"]) == (True, 3)
    assert facts["authors"] == ["Bob (2)", "Alice (1)"]
    assert facts["committers"] == ["Lead (3)"]
    assert facts["history_trailers"] == ["Co-authored-by: Carol", "Generated-by: GenY",
                                         "Assisted-by: ToolX"]
    text = _outreach(cli, project, upstream, "0001").out
    section = text.split("## AI-usage disclosure facts")[1].split("\n## ")[0]
    assert "3 commits by Bob (2), Alice (1); committed by Lead (3)" in section
    assert "trailers in those commits: Co-authored-by: Carol; Generated-by: GenY; " \
        "Assisted-by: ToolX" in section
    assert "only you know" not in text.lower() and "submitter knows" not in text
    assert "people.test" not in text  # addresses stay out of briefs


def test_without_history_the_disclosure_says_so(tmp_path: Path, project: Path) -> None:
    """A project that is no git repository has no history to state; a patch
    file no commit touches is named as such."""
    patch = read_patch(project / "stack/patches/0002-tiny-bump-op-02.patch")
    facts = disclose(project, patch)
    assert not facts.history
    assert facts.facts[0].endswith("no history available (the project is not a git "
                                   "repository)")
    git(project, "init", "-q")
    facts = disclose(project, patch)
    assert (facts.history, facts.commits) == (True, 0)
    assert "no commit of the project touches it" in facts.facts[0]
    assert facts.message and facts.stack_trailers == ["Concern", "Upstream-Status", "Scope"]
    assert facts.placeholder and facts.author == "Upstream Dev"


def test_placeholder_authors() -> None:
    """The addresses no one receives mail at (the stack's own default and the
    names reserved for examples) are placeholders; a person's is not."""
    for author in ("patchctl <patchctl@localhost>", "x <m@example.invalid>",
                   "S <m@users.noreply.a-seed.example>", "A <a@example.com>", "B <b@t.test>",
                   "No Address", ""):
        assert placeholder(author), author
    for author in ("Jane Doe <jane@kernel.org>", "J <j@example.company.org>"):
        assert placeholder(author) is None, author


def test_draft_outreach_warns_while_the_stacks_text_would_be_sent(
        cli, project: Path, upstream: Upstream) -> None:
    """Nothing said that `git am` of the stack's patches sends its commit
    messages, trailers and placeholder author upstream; draft-outreach warns, one line per
    condition, and every brief names the export that leaves them out."""
    r = _outreach(cli, project, upstream)
    assert r.code == 0, r.err
    warnings = [ln for ln in r.err.splitlines() if ln.startswith("warning:")]
    assert warnings == [
        "warning: 3 patches carry a commit message (Concern:, Upstream-Status:, Scope:, ...) "
        f"that `git am` would send upstream as written; submit the plain diffs `{EXPORT}` "
        "writes, with a commit message you write",
        "warning: 3 patches name a placeholder author (an address under .invalid, a name "
        f"reserved for examples); the diffs `{EXPORT}` writes carry no author: commit them "
        "as yourself"]
    # the banner of series.md, of each brief and of each brief's details
    assert r.out.count(f"Submit the plain diffs `{EXPORT}` writes") == 7


def test_no_warning_for_a_plain_patch_by_a_person(cli, tmp_path: Path, upstream: Upstream,
                                                 patches) -> None:
    """A patch with only a subject, no trailers and a person's address gives
    no warning."""
    name, text = patches[1]
    head, diff = text.split("\n---\n", 1)
    head = head.split("\n\n", 1)[0].replace("Upstream Dev <dev@upstream.invalid>",
                                            "Jane Doe <jane@kernel.org>")
    project = make_project(tmp_path / "plain", upstream, [(name, f"{head}\n\n---\n{diff}")])
    r = _outreach(cli, project, upstream)
    assert r.code == 0, r.err
    assert "warning:" not in r.err
    facts = json.loads(_outreach(cli, project, upstream, "--json").out)["patches"][0]
    assert facts["disclosure"]["message"] is False
    assert facts["disclosure"]["stack_trailers"] == []
    assert facts["disclosure"]["placeholder"] is None


def test_the_disclosure_quotes_the_rule_and_never_reads_a_missing_trailer_as_no_ai() -> None:
    """Bug: a patch without an `Assisted-by:` trailer was briefed as "the patch records no
    machine assistance", and the disclosure item was cited at its section heading: the rule
    asks whether AI generated any part of the code, which a missing trailer cannot answer."""
    from patchctl.outreach.disclosure import Disclosure, rule_lines

    files = {"CONTRIBUTING.md": "# Guide\n\nIf AI is used to generate any portion of the code:\n"
             "1. Explicitly disclose the manner in which AI was employed.\n"
             "2. Perform a comprehensive manual review.\n"
             "3. Be prepared to explain every line of code.\n",
             ".github/pull_request_template.md": "## Requirements\n\n- AI usage disclosure:\n",
             "AGENTS.md": "Disclose AI use.\n"}
    rule = rule_lines(files)
    assert [(f, n) for f, n, _ in rule] == [("CONTRIBUTING.md", 3), ("CONTRIBUTING.md", 4),
                                            ("CONTRIBUTING.md", 5), ("CONTRIBUTING.md", 6),
                                            (".github/pull_request_template.md", 3)]
    bare = Disclosure("stack/patches/x.patch", True, False, 1, [], [], [], [], "A", None,
                      False, [], rule)
    assert "does not mean no AI was used" in bare.records
    assert "no machine assistance" not in bare.records
    todo = bare.todo
    assert todo[0].endswith("(CONTRIBUTING.md:3, .github/pull_request_template.md:3)")
    assert todo[1].endswith("(CONTRIBUTING.md:4)") and todo[2].endswith(
        "(CONTRIBUTING.md:5, CONTRIBUTING.md:6)")
    marked = Disclosure("stack/patches/x.patch", True, False, 1, [], [], [],
                        ["Assisted-by: Claude"], "A", None, False, [], rule)
    assert marked.records == "the patch records Assisted-by: Claude"
