"""draft-outreach: a brief for the person who proposes a patch upstream.

The brief holds facts with their sources (the upstream's own rules at the
base commit, the diff, evidence records, the concern's outreach data) and
never prose meant to be pasted upstream as a person's words. Everything is
sorted and free of clocks, so the same inputs give the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

from patchctl import gitrepo
from patchctl.model.fingerprint import fingerprint
from patchctl.model.patchfile import Hunk, Patch
from patchctl.model.stack import Pin, Stack, select_names
from patchctl.outreach import (
    claims,
    contrib,
    ctest,
    decls,
    facts,
    firstscreen,
    policy,
    recorded,
    surface,
)

# re-exported: callers name them from here
from patchctl.outreach.briefmodel import SCHEMA as SCHEMA
from patchctl.outreach.briefmodel import Brief as Brief
from patchctl.outreach.briefmodel import CheckResult as CheckResult
from patchctl.outreach.briefmodel import HunkGuide as HunkGuide
from patchctl.outreach.briefmodel import PatchBrief as PatchBrief
from patchctl.outreach.briefmodel import PolicyFileInfo as PolicyFileInfo
from patchctl.outreach.briefmodel import Relied as Relied
from patchctl.outreach.briefmodel import Reviewer as Reviewer
from patchctl.outreach.briefmodel import ReviewerQuestion as ReviewerQuestion
from patchctl.outreach.disclosure import disclose
from patchctl.untrusted import printable

# Identifiers an added line uses that are too common to be worth a pointer.
_STOP = {
    "auto", "bool", "break", "case", "char", "class", "const", "continue", "default",
    "delete", "double", "else", "enum", "explicit", "extern", "false", "float", "for",
    "goto", "if", "inline", "int", "long", "namespace", "new", "nullptr", "private",
    "protected", "public", "return", "short", "signed", "sizeof", "static", "struct",
    "switch", "template", "this", "throw", "true", "try", "typedef", "typename", "union",
    "unsigned", "using", "virtual", "void", "volatile", "while", "size_t", "int32_t",
    "int64_t", "uint32_t", "uint64_t", "uint8_t", "int8_t", "std", "string", "vector",
    "format", "c_str", "to_string", "runtime_error", "__func__", "INT32_MAX", "INT64_MAX",
    "SIZE_MAX", "printf", "fprintf", "stderr", "stdout", "size", "empty", "push_back",
    "begin", "end", "emplace_back"
}
_IDENT = re.compile(r"\b[A-Za-z_]\w{3,}\b")
_DECL = re.compile(r"^\s*(?:static\s+|const\s+|inline\s+)*([\w:<>]+)[\s\*&]+(\w+)\s*[(=;\[{]")
_PARAM = re.compile(r"[\w:<>]+\s*[\*&]*\s+[\*&]?(\w+)\s*(?:[,)=]|$)")
_NOT_TYPE = {"return", "else", "case", "goto", "delete", "throw", "new", "co_return"}


def draft(project: Path, stack: Stack, upstream: Path, names: Sequence[str] = (),
          *, progress: Callable[[str], None] | None = None) -> Brief:
    """The brief for the named patches (all when none are named), at the stack's pin."""
    pin = stack.pin()
    upstream = gitrepo.git_dir(upstream)
    all_patches = stack.patches()
    chosen = [all_patches[i] for i in select_names(
        [p.name for p in all_patches], names, concerns=[p.concern for p in all_patches],
        where=str(stack.series_path))] if names else all_patches
    base = pin.commit
    if gitrepo.resolve_commit(upstream, base) is None:
        from patchctl.errors import InputError

        raise InputError(f"the pin {base} is not in upstream {upstream}; pass --upstream "
                         "with a clone that has it")
    files, not_utf8 = _read(upstream, base, policy.ALL_FILES)
    series = contrib.series_facts(upstream, base, _github_cache(project))
    rules_all = policy.find_rules(files, surface.form_rule_lines(series.forms))
    template_path = next((p for p in policy.TEMPLATE_FILES if files.get(p)), None)
    template_text = files.get(template_path) if template_path else None
    template = policy.template_sections(template_text) if template_text else []
    owners_path = next((p for p in policy.CODEOWNERS_FILES if files.get(p)), None)
    ref = gitrepo.commit_ref(upstream, base)
    fp = fingerprint(base, all_patches)
    apis = {p.name: _api(upstream, base, p) for p in all_patches}
    forms = firstscreen.issue_forms(sorted(printable(p) for p in gitrepo.list_files(
        upstream, base, [".github/ISSUE_TEMPLATE/"])))
    from patchctl.burden.engine import burden

    carried = burden(stack, upstream, progress=progress)
    # what upstream's tests need, for a ctest log of the pin (ctest.py)
    cmake = _read(upstream, base, [ctest.CMAKE])[0][ctest.CMAKE] or ""
    briefs = []
    for patch in chosen:
        if progress:
            progress(f"brief {patch.name}")
        index = all_patches.index(patch) + 1
        briefs.append(_patch_brief(project, stack, upstream, pin, patch, index, files, rules_all,
                                   template, template_path, owners_path, series,
                                   recorded.stack_at(pin.commit, all_patches, index, cmake),
                                   apis[patch.name], forms))
        briefs[-1].churn = facts.churn(carried, index)
    prose = next((r.citations for r in rules_all if r.id == "no-machine-prose"), [])
    missing = [f"no {name} at the base" for name, group in (
        ("contribution guide (CONTRIBUTING.md or AGENTS.md)", policy.RULE_FILES),
        ("pull request template", policy.TEMPLATE_FILES),
        ("CODEOWNERS", policy.CODEOWNERS_FILES),
        (".editorconfig", (policy.EDITORCONFIG,))) if not any(files.get(p) for p in group)]
    missing += not_utf8
    infos = [PolicyFileInfo(p, files.get(p) is not None,
                            len((files.get(p) or "").splitlines()))
             for p in policy.ALL_FILES if files.get(p) is not None]
    deps = firstscreen.dependencies(all_patches, {k: v[0] for k, v in apis.items()})
    return Brief(pin.name, pin.url, base, ref.date, ref.subject, fp, infos, prose, briefs,
                 missing=missing, rules=rules_all, order=[p.name for p in all_patches],
                 dependencies=deps, issue_forms=series.forms, declarations=series.declarations,
                 architectures=sorted(series.known))


def _api(upstream: Path, base: str, patch: Patch
         ) -> tuple[list[facts.ApiItem], list[str], dict[str, str | None]]:
    """The public API a patch adds, a finding for each header at the base that is not
    UTF-8, and those headers' text at the base."""
    headers = [f.path for f in patch.files if f.source and facts.is_public_header(f.path)]
    base_files, not_utf8 = _read(upstream, base, headers)
    return facts.public_api(patch, base_files), not_utf8, base_files


def _github_cache(project: Path) -> Path | None:
    """The cache of ``upstream-status --online`` (read only; never fetched here)."""
    from patchctl.model import stackwrite
    from patchctl.outreach import github

    path = stackwrite.state_dir(project, create=False) / github.CACHE_FILE
    return path if path.is_file() else None


def _patch_brief(project: Path, stack: Stack, upstream: Path, pin: Pin, patch: Patch,
                 index: int, files: dict[str, str | None], rules_all: list[policy.Rule],
                 template: list[policy.TemplateSection], template_path: str | None,
                 owners_path: str | None, series: contrib.SeriesFacts, at: recorded.StackAt,
                 api_found: tuple[list[facts.ApiItem], list[str], dict[str, str | None]],
                 forms: list[str]) -> PatchBrief:
    base = pin.commit
    touched = sorted({p for f in patch.files for p in f.paths})
    api, not_utf8, base_files = api_found
    outreach = facts.load_outreach(stack.root, patch.concern)
    cited = recorded.cited_records(outreach)
    evidence = recorded.evidence_for(project, patch, at, cited)
    # records the outreach data says are of this project's own code, not the upstream's
    dropped = facts.left_out(outreach, [e.file for e in evidence], cited)
    left_out = [e for e in evidence if e.file in dropped]
    evidence = [e for e in evidence if e.file not in dropped]
    assistance, coauthors = facts.assistance(patch)
    lint = facts.policy_lint(patch, rules_all, files.get(policy.EDITORCONFIG), api)
    questions = _questions(patch, api, rules_all, outreach, evidence)
    more = contrib.patch_facts(
        upstream, base, series, patch, rules_all,
        (owners_path, files[owners_path] or "") if owners_path else None, outreach,
        [q.question for q in questions], base_files, stack.root)
    if outreach is not None:  # the files and builders its text counts, against the patches
        lint += claims.stale_claims(outreach, claims.toml_text(stack.root, outreach), patch,
                                    stack.patches(), series.known)
    lint = sorted(lint + more.lint, key=lambda x: (x.file, x.line or 0, x.code))
    rules = [_applies(r, patch, api, outreach, assistance, lint, more) for r in rules_all]
    reviewers = _owners(files.get(owners_path) if owners_path else None, owners_path, touched)
    authors = [Reviewer(a.name, f"git log: {a.commits} of the last 200 commits touching "
                        "these paths", touched)
               for a in contrib.authors(upstream, base, touched)]
    guide = _guide(upstream, base, patch, api, stack.patches()[: index - 1])
    checks = [_check(upstream, base, c) for c in (outreach.checks if outreach else [])]
    missing = []
    if not patch.concern:
        missing.append("no Concern: trailer, so no outreach data can be found")
    elif outreach is None:
        missing.append(f"no stack/outreach/{patch.concern}.toml: why, prior art and reviewer "
                       "questions are not recorded")
    if not evidence:
        missing.append("no evidence records for this patch under evidence/")
    if not patch.reproducer:
        missing.append("no Reproducer: trailer")
    missing += not_utf8
    return PatchBrief(
        index=index, file=patch.name, subject=patch.subject, author=_name_only(patch.author),
        concern=patch.concern, upstream_status=patch.upstream_status, scope=patch.scope,
        body_present=bool(patch.body.strip()), reproducer=patch.reproducer,
        stats=facts.diffstat(patch), api=api,
        rules=rules, template=template, outreach=outreach, evidence=evidence, checks=checks,
        guide=guide, questions=questions,
        assistance=assistance, coauthors=coauthors, lint=lint, reviewers=reviewers,
        authors=authors, missing=missing, results=firstscreen.results(evidence),
        post_first=firstscreen.post_first(outreach, forms, rules_all),
        gaps=firstscreen.gaps(rules_all, template, template_path, evidence, assistance, touched,
                              project),
        guide_groups=firstscreen.guide_groups(patch), disclosure=disclose(project, patch, files),
        unowned=more.unowned, discussions=more.discussions, subsystems=more.subsystems,
        manual=more.manual, api_changed=facts.changed_macros(patch, base_files),
        left_out=left_out, tests=list(pin.tests))


def _read(upstream: Path, base: str, paths: Sequence[str]
          ) -> tuple[dict[str, str | None], list[str]]:
    """Upstream files whose lines a brief quotes (policy files, CODEOWNERS, a check's
    context) at ``base`` (None: absent): decoded by ``policy.decode``, CRLF read as LF and
    every other control character escaped; and a finding for each that is not valid UTF-8."""
    blobs = gitrepo.read_blobs(upstream, base, paths)
    texts, findings = policy.decode_files(
        {p: blobs[p][1] if p in blobs else None for p in paths})
    return ({p: None if t is None else printable(t.replace("\r\n", "\n"), newlines=True)
             for p, t in texts.items()}, findings)


def _name_only(author: str) -> str:
    return author.split("<", 1)[0].strip().strip('"') or author


def _applies(rule: policy.Rule, patch: Patch, api: list[facts.ApiItem],
             outreach: facts.OutreachData | None, assistance: list[facts.Assistance],
             lint: list[facts.LintFinding], more: contrib.PatchFacts) -> policy.Rule:
    r = policy.Rule(rule.id, rule.title, list(rule.citations))
    prior = [p for p in (outreach.prior_art if outreach else []) if p.kind in ("issue", "pr")]
    issues = [p for p in prior if p.kind == "issue"]
    lint_codes = {x.code for x in lint}
    names = ", ".join(sorted({a.name for a in api}))
    table = {
        "no-machine-prose": ("yes", "write the issue comment, PR description and commit "
                             "message yourself; this brief has facts only"),
        "no-automated-submission": ("yes", "patchctl never posts, comments or pushes"),
        "issue-first": ("yes", f"recorded issue(s): {', '.join(p.ref for p in issues)}")
        if issues else ("check", "no issue recorded in the outreach data"),
        "check-existing": ("yes", "recorded: " + ", ".join(
            f"{p.ref} ({p.state}{'' if p.verified else ', unverified'})" for p in prior))
        if prior else ("check", "no existing issue or PR recorded in the outreach data"),
        "api-bar": ("yes", f"the patch adds public API: {names}") if api
        else ("no", "no public API added (no declarations added to an include/ header)"),
        "sized-types": ("yes", f"check the types of: {names}") if api
        else ("no", "no public API added"),
        "ai-disclosure": ("yes", "the patch records " + "; ".join(a.trailer for a in assistance)
                          + ": answer the disclosure YES and describe the use yourself")
        if assistance else ("yes", "the patch records no trailer, which does not mean no AI "
                            "was used: ask whoever wrote it and answer truthfully"),
        "assisted-by": ("yes", "the patch records " + "; ".join(a.trailer for a in assistance)
                        + "; `patchctl export --format upstream` drops trailers: a commit you "
                        "make with an agent's help carries your own") if assistance
        else ("check", "the patch records no Assisted-by trailer"),
        "ascii": ("yes", "policy lint found non-ASCII added lines") if "non-ascii" in lint_codes
        else ("yes", "policy lint found no non-ASCII added line"),
        "trailing-whitespace": ("yes", "policy lint found trailing whitespace")
        if "trailing-whitespace" in lint_codes
        else ("yes", "policy lint found none in added lines"),
        "one-open-pr": ("check", "applies while the submitter is a new contributor"),
        "test-asks": ("yes", "see the next actions: what no evidence record runs"),
        "regression-test": ("check", "applies if this is a bug fix"),
        "commit-title": ("check", "the format of the squashed commit title"),
    }
    r.applies, r.reason = contrib.applies(rule, lint, more) or table.get(rule.id, ("yes", ""))
    return r


def _owners(text: str | None, path: str | None, touched: list[str]) -> list[Reviewer]:
    if not text or not path:
        return []
    teams = policy.team_members(text)
    found: dict[tuple[str, str], list[str]] = {}
    for p in touched:
        entry = policy.codeowners_for(text, p)
        if entry is None:
            continue
        for owner in entry.owners:
            found.setdefault((owner, f"{path}:{entry.line} ({entry.pattern})"), []).append(p)
    out = []
    for (owner, source), paths in sorted(found.items()):
        team = teams.get(owner)
        members = f"{team[0]} (as listed at {path}:{team[1]})" if team else None
        if "@" in owner.lstrip("@"):
            owner = "(an e-mail address; left out)"
        out.append(Reviewer(owner, source, sorted(paths), members))
    return out


def _guide(upstream: Path, base: str, patch: Patch, api: list[facts.ApiItem],
           before: Sequence[Patch]) -> list[HunkGuide]:
    """Per hunk: where, how big, the comments it adds, the API it declares, and where the
    upstream code it uses is declared at the base (resolved in its scope: ``decls``)."""
    lines = patch.text.split("\n")
    introduced = _introduced(patch, api)
    per_hunk = [(f.path, number, h, _identifiers(h, introduced))
                for f in patch.files for number, h in enumerate(f.hunks, start=1)]
    uses = {(path, number): [decls.Use(path, decls.added_lines(h), i) for i in ids]
            for path, number, h, ids in per_hunk}
    where = decls.resolve(upstream, base, before, patch, [u for us in uses.values() for u in us])
    out = []
    for path, number, h, _ in per_hunk:
        added = [ln[1:] for ln in h.lines if ln[:1] == "+"]
        comments = [c for ln in added for c in [ln.strip()]
                    if c.startswith(("//", "/*", "*")) and
                    not facts.strip_comments(c).strip().strip("*/").strip()]
        decl = sorted({a.name for a in api if a.file == path and
                       h.target_start <= a.line < h.target_start + max(h.target_length, 1)})
        out.append(HunkGuide(path, number, lines[h.line - 1] if h.line - 1 < len(lines) else "",
                             len(added), sum(1 for ln in h.lines if ln[:1] == "-"),
                             [c[:200] for c in comments], decl,
                             [Relied(d.name, d.file, d.line, d.text)
                              for u in uses[path, number] if (d := where.get(u))]))
    return out


def _introduced(patch: Patch, api: list[facts.ApiItem]) -> set[str]:
    """Names the patch itself declares (its API, variables, parameters): not upstream's."""
    names = {a.name for a in api}
    for f in patch.files:
        for h in f.hunks:
            for ln in h.lines:
                if ln[:1] != "+":
                    continue
                if (m := _DECL.match(ln[1:])) and m.group(1) not in _NOT_TYPE:
                    names.add(m.group(2))
                if "(" in ln:
                    names.update(_PARAM.findall(ln[1:].split("(", 1)[1]))
    return names


def _identifiers(hunk: Hunk, introduced: set[str]) -> list[str]:
    """Up to 12 distinctive identifiers the hunk's added code uses (not in strings or
    comments, not declared by the patch), in order of appearance."""
    ids: list[str] = []
    for ln in hunk.lines:
        if ln[:1] != "+":
            continue
        code = re.sub(r'"(\\.|[^"\\])*"', "", facts.strip_comments(ln[1:]))
        for m in _IDENT.finditer(code):
            word = m.group(0)
            if word not in _STOP and word not in introduced and word not in ids and \
                    ("_" in word or re.search(r"[a-z][A-Z]", word)):
                ids.append(word)
    return ids[:12]


def _questions(patch: Patch, api: list[facts.ApiItem], rules: list[policy.Rule],
               outreach: facts.OutreachData | None,
               evidence: list[recorded.EvidenceRun]) -> list[ReviewerQuestion]:
    out: list[ReviewerQuestion] = []
    cite = {r.id: f"{r.citations[0].file}:{r.citations[0].line}" for r in rules}
    prior = [p.ref for p in (outreach.prior_art if outreach else []) if p.verified]
    runs = [f"Test results: {len(evidence)} evidence record(s)"] if evidence else []
    if api:
        out.append(ReviewerQuestion(
            "Why is a new public API needed; why does an existing mechanism not suffice?",
            [*(["outreach data: motivation"] if outreach and "motivation" in outreach.fields
               else []), *prior], f"public API added; rule {cite['api-bar']}"
            if "api-bar" in cite else "public API added"))
        out.append(ReviewerQuestion(
            "What happens for callers that never set the new API (defaults, cost when unused)?",
            [f"{a.file}:{a.line}" for a in api][:6] + runs, "public API added"))
    if "issue-first" in cite:
        out.append(ReviewerQuestion("Which issue asked for this, and what did maintainers say?",
                                    [p.ref for p in (outreach.prior_art if outreach else [])
                                     if p.kind == "issue"], f"rule {cite['issue-first']}"))
    out.append(ReviewerQuestion("How was it tested, and how are the tests rerun?", runs,
                                "every patch"))
    unique: dict[str, ReviewerQuestion] = {}  # the outreach data may repeat one asked here
    for q in outreach.questions if outreach else []:
        asked = ReviewerQuestion(q.question, q.evidence, outreach.file if outreach else "")
        # the outreach data asking one of the questions above in its own words replaces it,
        # with the evidence of both
        for generic in [g for g in out if (m := _SAME_ASK.get(g.question)) and
                        m.search(q.question)]:
            out.remove(generic)
            asked.evidence = list(dict.fromkeys([*asked.evidence, *generic.evidence]))
            asked.source = f"{generic.source}; {asked.source}"
        out.append(asked)
    for asked in out:
        unique.setdefault(" ".join(asked.question.lower().split()), asked)
    return list(unique.values())


# a question asked of every patch with an API -> how the outreach data asks the same
_SAME_ASK = {
    "What happens for callers that never set the new API (defaults, cost when unused)?":
        re.compile(r"\bnever sets?\b|\bwhen unused\b|\bdefaults?\b", re.I),
    "Which issue asked for this, and what did maintainers say?":
        re.compile(r"\bwhich issue\b", re.I),
    "How was it tested, and how are the tests rerun?":
        re.compile(r"\bhow (?:was|is) it tested\b", re.I),
}


def _check(upstream: Path, base: str, c: facts.UpstreamCheck) -> CheckResult:
    hits = gitrepo.grep_fixed(upstream, base, [c.text], [c.path], whole_words=False)[:10]
    texts = _read(upstream, base, sorted({h.path for h in hits}))[0] if c.context else {}
    found = []
    for h in hits:
        lines = (texts.get(h.path) or "").splitlines()[h.line - 1 : h.line + c.context]
        text = " / ".join(x.strip() for x in lines) if lines else \
            policy.decode(h.text)[0].strip()
        found.append(Relied(c.text, h.path, h.line, text[:240]))
    introduced = gitrepo.first_adding(upstream, base, c.text, c.path) if found else None
    return CheckResult(c.what, c.path, c.text, found, introduced)
