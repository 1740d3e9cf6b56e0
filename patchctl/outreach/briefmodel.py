"""The brief's types: what draft-outreach found for each patch and for the series.

``brief`` fills them at the pin, the templates render them and ``--json`` writes them
as they are (schema ``patchctl.outreach/1``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from patchctl import gitrepo
from patchctl.model import schemas
from patchctl.outreach import contrib, facts, firstscreen, policy, recorded, surface
from patchctl.outreach.disclosure import EXPORT_COMMAND, Disclosure
from patchctl.outreach.standards import ManualCheck

SCHEMA = schemas.OUTREACH


@dataclass
class PolicyFileInfo:
    path: str
    present: bool
    lines: int


@dataclass
class Reviewer:
    name: str
    source: str  # "CODEOWNERS:89 (/src/)" or "git log: 12 of the last 200 commits"
    paths: list[str]
    members: str | None = None  # a team's members as the file lists them


@dataclass
class Relied:
    name: str
    file: str
    line: int
    text: str


@dataclass
class HunkGuide:
    file: str
    number: int  # 1-based within the file
    header: str  # the @@ line
    added: int
    removed: int
    comments: list[str]  # comment lines the hunk adds (the author's words, quoted)
    declares: list[str]  # public API the hunk adds
    relies_on: list[Relied]


@dataclass
class ReviewerQuestion:
    question: str
    evidence: list[str]
    source: str  # "outreach data" or what triggered it


@dataclass
class CheckResult:
    what: str
    path: str
    text: str
    found: list[Relied]
    introduced: gitrepo.CommitRef | None


@dataclass
class PatchBrief:
    index: int
    file: str
    subject: str
    author: str
    concern: str | None
    upstream_status: str | None
    scope: list[str]
    body_present: bool
    reproducer: str | None
    stats: list[facts.FileStat]
    api: list[facts.ApiItem]
    rules: list[policy.Rule]
    template: list[policy.TemplateSection]
    outreach: facts.OutreachData | None
    evidence: list[recorded.EvidenceRun]
    checks: list[CheckResult]
    guide: list[HunkGuide]
    questions: list[ReviewerQuestion]
    assistance: list[facts.Assistance]
    coauthors: list[str]
    lint: list[facts.LintFinding]
    reviewers: list[Reviewer]
    authors: list[Reviewer]
    missing: list[str]
    results: list[firstscreen.ResultLine] = field(default_factory=list)
    post_first: firstscreen.PostFirst | None = None
    gaps: list[firstscreen.Gap] = field(default_factory=list)
    guide_groups: list[firstscreen.GuideGroup] = field(default_factory=list)
    port: dict[str, Any] | None = None  # filled by --onto
    # who or what wrote it (the project's history of the file) and what git am would send
    disclosure: Disclosure | None = None
    # touched paths no CODEOWNERS entry matches (None: no CODEOWNERS), discussions
    # the issues name, owners of subsystems the questions name, standards not mechanical
    unowned: list[str] | None = None
    discussions: list[surface.Discussion] = field(default_factory=list)
    subsystems: list[contrib.SubsystemOwners] = field(default_factory=list)
    manual: list[ManualCheck] = field(default_factory=list)
    churn: facts.Churn | None = None  # `patchctl burden`: what carrying it costs
    api_changed: list[facts.ApiItem] = field(default_factory=list)  # macros redefined
    # records the outreach data leaves out of the brief (the worker's handoff lists them)
    left_out: list[recorded.EvidenceRun] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)  # the upstream's test paths (the pin file)

    @property
    def library(self) -> int:
        """Lines added and removed outside the upstream's test paths: the size a reviewer
        reads in the library, from the patch as it is."""
        return sum(s.added + s.removed for s in self.stats
                   if not s.path.startswith(tuple(self.tests)))

    @property
    def added(self) -> int:
        return sum(s.added for s in self.stats)

    @property
    def removed(self) -> int:
        return sum(s.removed for s in self.stats)

    @property
    def verified_prior_art(self) -> list[facts.PriorArt]:
        return [p for p in (self.outreach.prior_art if self.outreach else []) if p.verified]

    @property
    def unverified_prior_art(self) -> list[facts.PriorArt]:
        return [p for p in (self.outreach.prior_art if self.outreach else []) if not p.verified]


@dataclass
class Brief:
    name: str
    url: str
    base: str
    base_date: str
    base_subject: str
    fingerprint: str
    policy_files: list[PolicyFileInfo]
    prose_rule: list[policy.Citation]  # lines forbidding machine-written descriptions
    patches: list[PatchBrief]
    onto: str | None = None
    missing: list[str] = field(default_factory=list)
    # how to submit: the plain diffs, no commit message, trailers or author
    submit: list[str] = field(default_factory=lambda: list(EXPORT_COMMAND))
    rules: list[policy.Rule] = field(default_factory=list)  # as the files state them
    order: list[str] = field(default_factory=list)  # every patch of the stack, apply order
    dependencies: list[firstscreen.Dependency] = field(default_factory=list)
    issue_forms: list[surface.IssueForm] = field(default_factory=list)
    declarations: str = ""  # how "relies on" found declarations (decls.DESCRIBE)
    # the upstream's per-architecture files at the base, by name: what a claim of the outreach
    # data may name as a builder (--check reads them from the manifest, without the upstream)
    architectures: list[str] = field(default_factory=list)

    @property
    def churn_order(self) -> list[PatchBrief]:
        """The briefed patches by upstream churn on their lines, most first (then in order)."""
        return sorted((p for p in self.patches if p.churn),
                      key=lambda p: (-len(p.churn.commits) if p.churn else 0, p.index))

    @property
    def owners(self) -> list[str]:
        return sorted({r.name for p in self.patches for r in p.reviewers})

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, **asdict(self)}
