"""The facts of the upstream's forms, owners and standards for a brief, read once per
series and once per patch.

Series: the issue forms, how declarations are found, the architectures at the base, the
cached issue answers. Patch: CODEOWNERS gaps,
discussions named by its issues, owners of subsystems its questions name, the code
standards lint, contradicted outreach claims and the manual checks. ``brief`` copies
the results into its dataclasses; only ``gitrepo`` runs git.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchctl import gitrepo
from patchctl.model.patchfile import Patch
from patchctl.outreach import claims, decls, facts, policy, standards, surface
from patchctl.untrusted import printable

AUTHORS = 8  # authors shown per table, and every one with as many commits as the last


@dataclass
class Author:
    """An author as git log names them: a name, never a GitHub handle. Only CODEOWNERS
    (or another upstream file) gives handles; a handle guessed from an address would
    suggest someone the upstream does not list as a reviewer."""
    name: str
    commits: int


@dataclass
class SubsystemOwners:
    question: str
    word: str
    team: str | None
    members: str | None
    entries: list[str]  # "CODEOWNERS:72 /ggml/src/ggml-rpc/ @ggml-org/ggml-rpc"
    authors: list[Author]


@dataclass
class SeriesFacts:
    forms: list[surface.IssueForm]
    known: set[str]  # architectures at the base (names of its per-architecture files)
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)  # cached GitHub answers

    @property
    def declarations(self) -> str:
        return decls.DESCRIBE


def series_facts(upstream: Path, base: str, cache: Path | None) -> SeriesFacts:
    form_paths = [p for p in gitrepo.list_files(upstream, base, surface.ISSUE_TEMPLATE_DIRS)
                  if p.endswith((".yml", ".yaml")) and p.count("/") == 2]
    blobs = gitrepo.read_blobs(upstream, base, form_paths)
    # decoded and escaped as every upstream file a brief quotes (brief._read)
    forms = [surface.read_form(p, printable(policy.decode(blobs[p][1])[0].replace("\r\n", "\n"),
                                            newlines=True))
             for p in form_paths if p in blobs]
    models = gitrepo.list_files(upstream, base, [])
    answers: dict[str, dict[str, Any]] = {}
    if cache is not None:
        from patchctl.outreach import github

        answers = github.load_cache(cache)
    return SeriesFacts(forms, claims.architectures(models), answers)


def authors(upstream: Path, base: str, paths: Sequence[str], limit: int = AUTHORS
            ) -> list[Author]:
    """The most frequent authors of ``paths`` by name: the first ``limit`` and everyone
    tied with the last of them."""
    ranked = gitrepo.path_authors(upstream, base, paths)
    if len(ranked) > limit:
        floor = ranked[limit - 1][1]
        ranked = [r for r in ranked if r[1] >= floor]
    return [Author(name, n) for name, n in ranked]


@dataclass
class PatchFacts:
    unowned: list[str] | None  # None: no CODEOWNERS file
    discussions: list[surface.Discussion]
    subsystems: list[SubsystemOwners]
    lint: list[facts.LintFinding]
    manual: list[standards.ManualCheck]


def patch_facts(upstream: Path, base: str, series: SeriesFacts, patch: Patch,
                rules: list[policy.Rule], codeowners: tuple[str, str] | None,
                outreach: facts.OutreachData | None, questions: Sequence[str],
                base_headers: dict[str, str | None], stack_root: Path) -> PatchFacts:
    touched = sorted({p for f in patch.files for p in f.paths})
    unowned = surface.unowned(codeowners[1], touched) if codeowners else None
    lint = standards.lint(patch, rules, base_headers)
    if outreach is not None:
        toml = stack_root.parent / outreach.file
        text = toml.read_text(encoding="utf-8") if toml.is_file() else ""
        lint += claims.contradictions(outreach, text, patch, series.known)
    subs = []
    if codeowners is not None:
        path, text = codeowners
        for q in questions:
            for s in surface.subsystems(q, text, path):
                subs.append(SubsystemOwners(
                    q, s.word, s.team, s.members,
                    [f"{path}:{e.line} {e.pattern} {' '.join(e.owners)}" for e in s.entries],
                    authors(upstream, base, s.paths, limit=3)
                    if s.paths else []))
    return PatchFacts(unowned, _discussions(series, patch, outreach), subs,
                      sorted(lint, key=lambda x: (x.file, x.line or 0, x.code)),
                      standards.manual_checks(patch, rules))


def _discussions(series: SeriesFacts, patch: Patch, outreach: facts.OutreachData | None
                 ) -> list[surface.Discussion]:
    """Discussions the patch's issues name: in the cached GitHub answers for the issues and
    PRs the outreach data and the patch's trailers name (``upstream-status --online``
    caches them), and in the outreach data's own text."""
    from patchctl.outreach import github

    texts: dict[str, str] = {}
    refs = [p.ref for p in (outreach.prior_art if outreach else []) if p.kind in ("issue", "pr")]
    refs += [v for k in ("Forwarded", "Bug", "Submitted") for v in patch.metadata.get(k, [])]
    for ref in refs:
        parsed = github.parse_ref(ref)
        key = github.key(parsed) if parsed else ""
        answer = series.answers.get(key)
        if answer and answer.get("discussions"):
            texts[f"{key} (its text in the GitHub cache, fetched {answer.get('fetched_at')})"] \
                = " ".join(answer["discussions"])
    if outreach is not None:
        texts[outreach.file] = " ".join(
            [*outreach.fields.values(), *(f"{p.url} {p.note}" for p in outreach.prior_art
                                          if p.verified)])
        texts[f"{outreach.file}, {UNREAD}"] = " ".join(
            f"{p.url} {p.note}" for p in outreach.prior_art if not p.verified)
    return surface.discussions(texts)


def applies(rule: policy.Rule, lint: list[facts.LintFinding], more: PatchFacts
            ) -> tuple[str, str] | None:
    """Whether a rule of the forms, owners or standards applies, and why; None for the
    others. A rule every line of which is in a section for maintainers binds no
    contributor."""
    headings = [c.heading for c in rule.citations]
    if headings and all(re.search(r"maintainer", h, re.I) and
                        not re.search(r"contributor", h, re.I) for h in headings):
        return "no", f"stated for maintainers (section: {headings[0]})"
    found = [x for x in lint if x.code == _LINT_OF.get(rule.id)]
    if rule.id in _LINT_OF:
        return ("yes", f"policy lint: {len(found)} finding(s) (Details, Policy lint)") if found \
            else ("yes", "policy lint found none")
    if rule.id in ("reuse-infrastructure", "keep-simple", "large-change"):
        return "check", "not mechanical: see the manual checks (Details, Policy lint)"
    if rule.id == "discuss-first":
        read = [d.url for d in more.discussions if not d.named_by.endswith(UNREAD)]
        unread = [d.url for d in more.discussions if d.named_by.endswith(UNREAD)]
        if read:
            return "yes", "discussions named: " + ", ".join(read + unread)
        return ("check", "discussion named, not read (prior art, unverified): "
                + ", ".join(unread)) if unread else \
            ("check", "no discussion recorded or cached for the patch's issues")
    if rule.id == "no-pasted-model-output":
        return "yes", "fill any issue form yourself; this brief has facts, not text to paste"
    return None


UNREAD = "unverified prior art"  # a discussion only the outreach data's unverified entries name
_LINT_OF = {"comment-length": "comment-length", "no-mid-sentence-split": "mid-sentence-split"}
