"""The whole contribution surface, the code-standards lint, facts kept true.

Real upstreams in temp git repos (tests/outreach_helpers.surface_upstream), the real CLI.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from patchctl.model.fingerprint import fingerprint
from patchctl.model.patchfile import parse_patch
from patchctl.outreach import contrib, github, policy, standards, surface
from tests.builders import (
    Upstream,
    format_patch,
    git,
    make_project,
    replace_in,
    system_config_off,
    write,
)
from tests.outreach_helpers import (
    ENHANCEMENT_FORM,
    RANGE_TOML,
    markdown_problems,
    surface_patch,
    surface_upstream,
)

PATCH = "0001-tiny-run-a-range.patch"


@pytest.fixture(scope="module")
def _surface(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Upstream]:
    root = tmp_path_factory.mktemp("surface")
    with system_config_off():
        up = surface_upstream(root / "up")
        patch = surface_patch(up, root / "scratch")
    project = make_project(root / "proj", up, [(PATCH, patch)], pin=up.commits["policy"])
    (project / "stack" / "outreach").mkdir()
    (project / "stack" / "outreach" / "range.toml").write_text(RANGE_TOML)
    return project, up


@pytest.fixture
def surface_project(_surface, tmp_path: Path) -> tuple[Path, Upstream]:
    shutil.copytree(_surface[0], tmp_path / "p")
    return tmp_path / "p", _surface[1]


def _run(cli, project: Path, up: Upstream, *args: str) -> str:
    r = cli("-C", str(project), "draft-outreach", "--upstream", str(up.path), *args)
    assert r.code == 0, r.err
    return r.out


def _text(cli, project: Path, up: Upstream) -> str:
    """The patch's brief (Markdown)."""
    return _run(cli, project, up, "0001")


def _patch_json(cli, project: Path, up: Upstream) -> tuple[dict, dict]:
    doc = json.loads(_run(cli, project, up, "--json"))
    return doc, doc["patches"][0]


# -- item 2: the contribution surface ----------------------------------------------------------

def test_issue_forms_are_read_and_their_rules_cited_with_file_and_line(
        cli, surface_project) -> None:
    """.github/ISSUE_TEMPLATE/* was not read, so "discuss first in Discussion"
    and "copypasting language model outputs is strictly prohibited" appeared in no brief."""
    project, up = surface_project
    doc, p = _patch_json(cli, project, up)
    forms = {f["file"]: f for f in doc["issue_forms"]}
    form = forms[".github/ISSUE_TEMPLATE/020-enhancement.yml"]
    assert (form["name"], form["labels"]) == ("Enhancement", '["enhancement"]')
    assert form["description"] == "Used to request enhancements for tiny."
    assert {"line": 16, "key": "label", "text": "Motivation"} in form["lines"]
    config = forms[".github/ISSUE_TEMPLATE/config.yml"]
    assert {"line": 4, "key": "url",
            "text": "https://github.com/tiny-org/tiny/discussions/categories/ideas"} \
        in config["lines"]
    rules = {r["id"]: r for r in p["rules"]}
    cited = {(c["file"], c["line"]) for c in rules["discuss-first"]["citations"]}
    assert (".github/ISSUE_TEMPLATE/020-enhancement.yml", 9) in cited
    pasted = rules["no-pasted-model-output"]["citations"]
    assert [(c["file"], c["line"]) for c in pasted] == \
        [(".github/ISSUE_TEMPLATE/020-enhancement.yml", 11)]
    line = ENHANCEMENT_FORM.splitlines()[10].strip()
    assert pasted[0]["text"] == line
    # a rule stated for maintainers binds no contributor
    assert rules["commit-title"]["applies"] == "no"
    text = _text(cli, project, up)
    assert markdown_problems(text) == []
    assert "| `.github/ISSUE_TEMPLATE/020-enhancement.yml` | Enhancement |" in text
    assert "`.github/ISSUE_TEMPLATE/020-enhancement.yml:11`: Fill this in yourself" in text


def test_read_form_keeps_block_text_and_ignores_nested_keys_at_top() -> None:
    form = surface.read_form("f.yml", ENHANCEMENT_FORM)
    assert [x.line for x in form.lines if x.key == "value"] == [9, 11]
    assert form.name == "Enhancement"
    assert ("id", "motivation") not in [(x.key, x.text) for x in form.lines]


def test_a_touched_path_without_codeowners_entry_is_named(cli, surface_project) -> None:
    """Include/llama.h has no CODEOWNERS entry and no brief said so."""
    project, up = surface_project
    _, p = _patch_json(cli, project, up)
    assert p["unowned"] == ["include/tiny.h"]
    assert "- no CODEOWNERS entry matches: `include/tiny.h`" in _text(cli, project, up)


def test_discussions_named_by_the_issues_come_from_the_github_cache(
        cli, surface_project) -> None:
    """Discussion #20252, named by the issue the patch answers, was not cited;
    draft-outreach reads upstream-status's cache (offline) for the issues the data names."""
    project, up = surface_project
    url = "https://github.com/tiny-org/tiny/discussions/20252"
    answer = github._state({"state": "open", "title": "Run a range", "html_url": "u",
                            "body": f"Follow-up of {url}#discussioncomment-1 and of {url}."})
    assert answer["discussions"] == [url]
    cache = project / ".patchctl" / github.CACHE_FILE
    cache.parent.mkdir()
    github.save_cache(cache, {"tiny-org/tiny#7": {**answer,
                                                  "fetched_at": "2026-11-30T00:00:00+00:00"}})
    assert github.load_cache(cache)  # a valid entry of the cache's schema
    _, p = _patch_json(cli, project, up)
    assert [d["url"] for d in p["discussions"]] == [url]
    assert p["discussions"][0]["named_by"].startswith("tiny-org/tiny#7 (its text in the "
                                                      "GitHub cache")
    rules = {r["id"]: r for r in p["rules"]}
    assert rules["discuss-first"]["applies"] == "yes"
    assert f"- discussion <{url}> (named by tiny-org/tiny\\#7" in _text(cli, project, up)


# -- item 3: the code standards -----------------------------------------------------------------

def test_code_standards_lint_cites_the_patch_line_and_the_rule_line(
        cli, surface_project) -> None:
    """AGENTS.md's "1-2 line comments" and "no mid-sentence split" were not
    checked; the public struct's new field (an ABI change for bindings) was not flagged."""
    project, up = surface_project
    _, p = _patch_json(cli, project, up)
    found = {(x["code"], x["file"], x["line"], x["rule"]) for x in p["lint"]}
    # the three-line comment starts at util.c's line where the patch puts it
    util = [x for x in p["lint"] if x["file"] == "src/util.c"]
    start = util[0]["line"]
    assert ("comment-length", "src/util.c", start, "AGENTS.md:10") in found
    assert ("mid-sentence-split", "src/util.c", start, "AGENTS.md:12") in found
    assert len([x for x in util if x["code"] == "mid-sentence-split"]) == 1
    abi = [x for x in p["lint"] if x["code"] == "abi"]
    assert len(abi) == 1 and abi[0]["file"] == "include/tiny.h"
    assert abi[0]["message"].startswith("ABI: struct tiny_params layout changes (adds b)")
    assert abi[0]["rule"] == "CONTRIBUTING.md:3"
    manual = {(m["rule"], m["fact"]) for m in p["manual"]}
    assert ("AGENTS.md:11", "not checkable mechanically: name the existing mechanism each "
            "new one could have used, and why it does not suffice") in manual
    assert any(r == "AGENTS.md:13" and f.endswith("lines in 5 files; the rule states no number")
               for r, f in manual)


def _parsed(text: str, tmp_path: Path):
    return parse_patch(text.encode(), path=tmp_path / "x.patch", name="x.patch")


def test_abi_change_found_when_the_hunk_starts_inside_the_struct(tmp_path: Path) -> None:
    """The struct is found in the header at the base when the hunk's context
    does not reach its opening line; a removed and re-added field is a move."""
    base = "struct big {\n" + "".join(f"    int f{i};\n" for i in range(10)) + "};\n"
    text = ("From 0 Mon Sep 17 00:00:00 2001\nFrom: A <a@b>\nSubject: [PATCH] x\n\n---\n"
            "diff --git a/include/x.h b/include/x.h\n--- a/include/x.h\n+++ b/include/x.h\n"
            "@@ -6,5 +6,5 @@\n     int f4;\n-    int f5;\n     int f6;\n+    int f5;\n"
            "     int f7;\n     int f8;\n")
    found = standards.abi_changes(_parsed(text, tmp_path), {"include/x.h": base}, None)
    assert [(f.file, f.line, f.rule) for f in found] == \
        [("include/x.h", 7, "patchctl (public struct layout)")]
    assert "struct big layout changes (moves or retypes f5)" in found[0].message


def test_comment_rule_limit_is_read_from_the_rule_line() -> None:
    rule = policy.Rule("comment-length", "t", [policy.Citation("A.md", 3, "- Keep code "
                                                                "comments to one or two lines")])
    assert standards.comment_limit(rule) == 2
    rule = policy.Rule("large-change", "t", [policy.Citation("A.md", 4, "- Keep changes "
                                                              "under 400 changed lines")])
    assert standards.size_limit(rule) == 400


# -- item 4: facts kept true ------------------------------------------------------------------

def test_an_outreach_claim_the_patch_contradicts_is_a_lint_finding(cli, surface_project) -> None:
    """Boundary-io.toml said only llama and deepseek4 run a range while the
    patch changes 29 builders; the brief repeated the stale claim."""
    project, up = surface_project
    _, p = _patch_json(cli, project, up)
    claims = [x for x in p["lint"] if x["code"] == "outreach-claim"]
    assert [(x["file"], x["line"], x["rule"]) for x in claims] == [
        ("stack/outreach/range.toml", 4, "stack/outreach/range.toml:4"),
        ("stack/outreach/range.toml", 5, "stack/outreach/range.toml:5")]
    assert "summary names 2 (alpha, beta)" in claims[0]["message"]
    assert "of 3; not named: gamma" in claims[0]["message"]


def test_a_claim_that_matches_the_patch_is_not_a_finding(cli, surface_project) -> None:
    project, up = surface_project
    toml = project / "stack" / "outreach" / "range.toml"
    toml.write_text(RANGE_TOML.replace("(alpha, beta)", "(alpha, beta, gamma)")
                    .replace("other than alpha and beta", "other than alpha, beta and gamma"))
    _, p = _patch_json(cli, project, up)
    assert not [x for x in p["lint"] if x["code"] == "outreach-claim"]


def test_relies_on_points_at_the_declaration_in_a_source_directory(
        cli, surface_project) -> None:
    """GGML_ASSERT was linked to tools/mtmd/clip.h, a tool's use, not to its declaration in
    ggml/include/ggml.h: a name resolves in the headers the file includes."""
    project, up = surface_project
    doc, p = _patch_json(cli, project, up)
    assert doc["declarations"].startswith("tree-sitter's C++ grammar")
    relied = {r["name"]: r for h in p["guide"] for r in h["relies_on"]}
    assert relied["TINY_ASSERT"]["file"] == "include/tiny.h"
    header = (up.path / "include/tiny.h").read_text().splitlines()
    line = relied["TINY_ASSERT"]["line"]
    assert header[line - 1].startswith("#define TINY_ASSERT(x) do")
    assert relied["TINY_ASSERT"]["text"] == header[line - 1]


def _second_patch_project(tmp_path: Path) -> tuple[Path, Upstream]:
    up = surface_upstream(tmp_path / "up")
    first = surface_patch(up, tmp_path / "s")

    def edit(work: Path) -> None:
        replace_in(work / "src/tiny.c", "#include", "/* two */\n#include")

    second = format_patch(up, up.commits["policy"], edit, subject="tiny : two",
                          trailers={"Concern": "two"}, scratch=tmp_path / "s2")
    project = make_project(tmp_path / "proj", up, [(PATCH, first), ("0002-two.patch", second)],
                           pin=up.commits["policy"])
    return project, up


def _record(project: Path, concern: str, stack: dict) -> None:
    folder = project / "evidence" / concern
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{concern}-test.json").write_text(json.dumps({
        "schema": "patchctl.evidence/2", "name": f"{concern}-test", "argv": ["true"],
        "exit_code": 0, "expect": "pass", "as_expected": True, "seconds": 1.0,
        "started": "2026-11-29T00:00:00+00:00", "stack": stack, "output_file": "x.log"}))


def test_evidence_is_matched_by_the_patch_digest_not_the_whole_stack(cli, tmp_path: Path) -> None:
    """A record made before a later patch existed was called "recorded for
    another stack fingerprint" though the lock's per-patch digest of its patch was unchanged."""
    project, up = _second_patch_project(tmp_path)
    from patchctl.model.stack import Stack

    stack = Stack(project / "stack")
    patches, pin = stack.patches(), stack.pin().commit
    _record(project, "range", {"pin": pin, "fingerprint": fingerprint(pin, patches[:1])})
    _record(project, "two", {"pin": pin, "fingerprint": fingerprint(pin, patches[:1])})
    doc = json.loads(_run(cli, project, up, "--json"))
    first, second = doc["patches"]
    assert first["evidence"][0]["current"] is True
    assert first["evidence"][0]["match"].startswith("yes: the stack's first 1 of 2 patches")
    assert second["evidence"][0]["current"] is False  # made before patch 2 existed
    # a record listing per-patch digests is matched by the digest alone
    _record(project, "two", {"pin": pin, "fingerprint": "0" * 64, "patches": [
        {"file": p.name, "digest": p.digest} for p in patches]})
    doc = json.loads(_run(cli, project, up, "--json"))
    assert doc["patches"][1]["evidence"][0]["match"] == \
        "yes: the record lists this patch's digest"


def test_records_store_each_patch_digest(cli, surface_project) -> None:
    """`patchctl record` kept only the whole-stack fingerprint, so a record
    could not be matched to one patch's digest."""
    project, _ = surface_project
    r = cli("-C", str(project), "record", "--name", "probe", "--", "true")
    assert r.code == 0, r.err
    rec = json.loads(next((project / "evidence").rglob("probe.json")).read_text())
    from patchctl.model.stack import Stack

    [patch] = Stack(project / "stack").patches()
    assert rec["stack"]["patches"] == [{"file": PATCH, "digest": patch.digest}]


def test_handles_only_from_codeowners_and_git_log_names_stay_names(cli,
                                                                   surface_project) -> None:
    """The owners of ggml-rpc were not suggested for the "why not RPC?"
    question. Authors from git log were shown as @handles read off their GitHub
    no-reply addresses (`@alice-gh (Alice Dev)`), which the upstream's own files never
    give; a handle now comes only from CODEOWNERS, and a git log author stays a name,
    marked as one."""
    project, up = surface_project
    _, p = _patch_json(cli, project, up)
    assert {a["name"] for a in p["authors"]} >= {"Alice Dev", "Upstream Dev"}
    assert all("handle" not in a for a in p["authors"])
    assert [r["name"] for r in p["reviewers"]] == ["@carol"]  # CODEOWNERS: /src/ @carol
    [sub] = p["subsystems"]
    assert (sub["word"], sub["team"]) == ("RPC", "@tiny-org/tiny-rpc")
    assert sub["members"] == "rgerganov (as listed at CODEOWNERS:1)"
    assert sub["entries"] == ["CODEOWNERS:3 /src/rpc/ @tiny-org/tiny-rpc"]
    assert [(a["name"], a["commits"]) for a in sub["authors"]] == [("Radoslav", 1)]
    text = _text(cli, project, up)
    assert "alice-gh" not in text and "@rgerganov" not in text
    assert "| author (git log name, not a handle) | commits |" in text
    assert "| Alice Dev | git log: 2 of the last 200" in text
    assert "- @carol: `CODEOWNERS:4 (/src/)`" in text
    assert "- recent authors (git log names): see Details" in text
    assert "- owners of RPC (a likely question: Why not use the RPC backend?): " \
        "@tiny-org/tiny-rpc" in text
    assert "; top authors, git log names: Radoslav (1)" in text


def test_authors_keep_everyone_tied_with_the_last(tmp_path: Path) -> None:
    """Three authors with one commit each, a limit of two: all three are kept."""
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "master")
    for name in ("Cy", "Al", "Bo"):
        write(repo, {"a.c": f"/* {name} */\n"})
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", name, env={"GIT_AUTHOR_NAME": name,
                                                   "GIT_AUTHOR_EMAIL": f"{name}@x.invalid"})
    head = git(repo, "rev-parse", "HEAD").strip()
    got = contrib.authors(repo, head, ["a.c"], limit=2)
    assert [a.name for a in got] == ["Al", "Bo", "Cy"]


def test_upstream_status_online_caches_the_outreach_issues_for_their_discussions(
        cli, surface_project, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issues the outreach data names were never looked up, so the
    discussions their text names could not be listed; upstream-status --online now caches
    them (a real HTTP server on 127.0.0.1), and draft-outreach reads the cache offline."""
    from tests.github_server import github_server
    from tests.test_upstream_status import _online_env

    project, up = surface_project
    url = "https://github.com/tiny-org/tiny/discussions/20252"
    issue = {"state": "open", "title": "Run a range", "html_url": "https://github.com/x",
             "body": f"Discussed first in {url}.\n\x1b[2J"}
    with github_server(answer=(200, {"Content-Type": "application/json"}, issue)) as server:
        _online_env(monkeypatch, f"http://127.0.0.1:{server.server_port}")
        r = cli("-C", str(project), "upstream-status", "--online")
        assert r.code in (0, 1), r.err
        assert [p for p, _ in server.requests] == ["/repos/tiny-org/tiny/issues/7"]
    cached = github.load_cache(project / ".patchctl" / github.CACHE_FILE)
    assert cached["tiny-org/tiny#7"]["discussions"] == [url]
    assert "body" not in cached["tiny-org/tiny#7"]  # only the URLs are kept
    _, p = _patch_json(cli, project, up)
    assert [d["url"] for d in p["discussions"]] == [url]


def test_a_comment_split_after_a_semicolon_is_a_mid_sentence_split(tmp_path: Path) -> None:
    """The lint took a semicolon for the end of a sentence, so "restored into the range that
    saved it only;" followed by "not into another range" passed as two sentences, and the
    brief said the patch splits no sentence across lines."""
    found = _split_lines(tmp_path, ["a state is restored into the range that saved it only;",
                                    "not into another range",
                                    "A sentence ends here.", "another one starts here"])
    assert found == [2]


def test_a_sentence_going_on_in_brackets_on_the_next_line_is_split(tmp_path: Path) -> None:
    """The lint read the first character of the next line only, so a sentence that went on
    with "(the latter not ...)" or "`name` ..." passed as two, and the brief said the patch
    splits no sentence across lines."""
    found = _split_lines(tmp_path, ["a partial state round-trips too",
                                    "(the latter not with a unified KV cache).",
                                    "the layers of the range", "`n_layer` of them.",
                                    "A sentence ends here.", "(A new one opens in brackets.)"])
    assert found == [2, 4]


def _split_lines(tmp_path: Path, comment: list[str]) -> list[int]:
    """The lines the lint finds a sentence split after, in a patch that adds `comment`
    (one `//` line each) between two lines of a C file; the comment starts at line 2."""
    added = "".join(f"+// {line}\n" for line in comment)
    text = ("From 0 Mon Sep 17 00:00:00 2001\nFrom: A <a@b>\nSubject: [PATCH] x\n\n---\n"
            "diff --git a/src/x.c b/src/x.c\n--- a/src/x.c\n+++ b/src/x.c\n"
            f"@@ -1,2 +1,{2 + len(comment)} @@\n int a;\n{added} int b;\n")
    rule = policy.Rule("no-mid-sentence-split", "t",
                       [policy.Citation("AGENTS.md", 5, "- Do not split a sentence mid-sentence")])
    found = standards.lint(_parsed(text, tmp_path), [rule], {})
    assert {f.code for f in found} <= {"mid-sentence-split"}
    return [f.line for f in found]


def test_check_fails_on_a_builder_count_the_patch_contradicts(cli, surface_project) -> None:
    """The outreach data's prose counted the builders a patch edits ("edits 2 builders")
    while the patch edits three; the brief repeated the count as a fact and
    `draft-outreach --check` still said the briefs were up to date."""
    project, up = surface_project
    toml = project / "stack" / "outreach" / "range.toml"
    toml.write_text(RANGE_TOML.replace(
        'summary = "Runs a range. Only the builders that run a range are accepted (alpha, beta)."',
        'summary = "Runs a range. It edits 2 builders and 3 files."'))
    out = project / "briefs"
    _run(cli, project, up, "--out", str(out))
    r = cli("-C", str(project), "draft-outreach", "--check", "--out", str(out))
    assert r.code == 1, r.out
    claims = [ln.strip() for ln in r.out.splitlines() if ln.strip().startswith("claim ")]
    assert claims == [
        "claim stack/outreach/range.toml:4: summary says '2 builders', but 0001 edits 3 "
        "builder(s) (per-architecture files under models/): alpha, beta, gamma: correct "
        "the outreach data",
        "claim stack/outreach/range.toml:4: summary says '3 files', but 0001 changes 5 "
        "file(s): correct the outreach data"]
    # the brief lists them too, in its policy lint
    _, p = _patch_json(cli, project, up)
    assert len([x for x in p["lint"] if "says '2 builders'" in x["message"]]) == 1
    # a count that is right is no finding, and the briefs written with it are current
    toml.write_text(RANGE_TOML.replace(
        'summary = "Runs a range. Only the builders that run a range are accepted (alpha, beta)."',
        'summary = "Runs a range. It edits 3 builders (the alpha, beta and gamma builders)."'))
    _run(cli, project, up, "--out", str(out))
    r = cli("-C", str(project), "draft-outreach", "--check", "--out", str(out))
    assert r.code == 0, r.out


def _builder_claims_of(clause: str) -> list[tuple[str, str]]:
    from pathlib import Path

    from patchctl.model.patchfile import parse_patch
    from patchctl.outreach import claims

    patch = parse_patch(b"Subject: [PATCH] x\n\n---\n"
                        b"diff --git a/src/models/alpha.cpp b/src/models/alpha.cpp\n"
                        b"--- a/src/models/alpha.cpp\n+++ b/src/models/alpha.cpp\n"
                        b"@@ -1 +1 @@\n-a\n+b\n", path=Path("0001-x.patch"), name="0001-x.patch")
    return claims._claims(clause, patch, {"alpha", "beta"})


def test_named_builders_are_read_in_linear_time() -> None:
    """The check of named builders ran one regex over the whole field, trying every start
    against every later "builders": 38 s for 20,000 characters, hours for the 500,000 of
    a hostile outreach file. The names are now read backwards from each "builder(s)"."""
    from tests.corpus import bounded

    assert bounded(_builder_claims_of, "s" * 500_000) == []
    assert bounded(_builder_claims_of, "a, " * 100_000 + "b builders") == []
    assert bounded(_builder_claims_of, "builders " * 60_000) == []
    said = _builder_claims_of("it edits the alpha and beta builders")
    assert [s for s, _ in said] == ["alpha and beta builders"]
