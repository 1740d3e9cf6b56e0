"""upstream-status: where each patch stands upstream, like Yocto's patchreview.

Offline: counts by Upstream-Status, malformed or missing statuses, patches
with no Forwarded/Bug/Submitted reference, how long each has been Pending,
and with ``--ref``, which patches landed upstream between the pin and REF
(REF's tree holds every change the patch makes, at its place; the landing found by
patch-id, reverse-apply, or by reference: the PR or commit the patch names merged there;
rebase-pin's machinery), which name such a change but are not so held (``superseded?``,
with the interdiff), and which upstream
probably superseded: the commit that first breaks the patch already holds
much of the patch's post-image. Online (``github.py``): the state of the
issues and pull requests the patches point at.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from patchctl import gitrepo
from patchctl.model import schemas
from patchctl.model.lint import UPSTREAM_STATUS_KINDA, UPSTREAM_STATUS_STRICT
from patchctl.model.patchfile import Patch
from patchctl.model.references import substantive
from patchctl.model.stack import Stack

SCHEMA = schemas.UPSTREAM_STATUS
_URL = re.compile(r"https?://\S+|\b[\w.-]+/[\w.-]+#\d+\b")
SUPERSEDED_AT = 0.5  # share of the patch's added lines already upstream


@dataclass
class PatchStatus:
    index: int
    file: str
    concern: str | None
    status: str | None  # Pending, Submitted, ... or None when missing/malformed
    detail: str  # the text after the status keyword (e.g. "[url]")
    problem: str | None  # "missing" | "malformed: ..." | None
    references: list[str]  # URLs and owner/repo#N from the status, Forwarded:, Bug:
    date: str | None  # the patch's Date:, ISO
    pending_days: int | None
    upstream: dict[str, Any] | None = None  # --ref: landed / superseded? / superseded / ...
    online: list[dict[str, Any]] = field(default_factory=list)
    # with an upstream at hand: what carrying it costs (`burden`): days, commits, files,
    # library and test lines
    burden: dict[str, Any] | None = None


@dataclass
class StatusReport:
    name: str
    pin: str
    ref: str | None
    ref_commit: str | None
    counts: dict[str, int]
    patches: list[PatchStatus]

    @property
    def malformed(self) -> list[str]:
        return [p.file for p in self.patches if p.problem]

    @property
    def unreferenced(self) -> list[str]:
        return [p.file for p in self.patches if not p.references]

    @property
    def ok(self) -> bool:
        return not self.malformed

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, **asdict(self), "malformed": self.malformed,
                "unreferenced": self.unreferenced, "ok": self.ok}


def patch_status(index: int, patch: Patch, today: dt.date) -> PatchStatus:
    header = "\n".join(patch.text.split("\n")[: patch.diff_line - 1])
    strict = UPSTREAM_STATUS_STRICT.search(header)
    status, detail, problem = None, "", None
    if strict:
        status, detail = strict.group(1), (strict.group(2) or "").strip()
    elif near := UPSTREAM_STATUS_KINDA.search(header):
        problem = f"malformed: {near.group(0).strip()}"
    else:
        problem = "missing"
    refs: list[str] = []
    for text in [detail, *patch.metadata.get("Forwarded", []), *patch.metadata.get("Bug", [])]:
        refs += [r.rstrip("]).,") for r in _URL.findall(text) if r not in refs]
    when = _date(patch.date)
    days = (today - when.date()).days if when and status == "Pending" else None
    return PatchStatus(index, patch.name, patch.concern, status, detail, problem,
                       list(dict.fromkeys(refs)), when.date().isoformat() if when else None, days)


def _date(value: str) -> dt.datetime | None:
    try:
        return email.utils.parsedate_to_datetime(value) if value else None
    except (TypeError, ValueError):
        return None


def report(stack: Stack, *, today: dt.date | None = None) -> StatusReport:
    pin = stack.pin()
    today = today or dt.date.today()
    rows = [patch_status(i, p, today) for i, p in enumerate(stack.patches(), start=1)]
    counts = Counter(r.status or (r.problem or "").split(":")[0]
                     for r in rows if r.status or r.problem)
    return StatusReport(pin.name, pin.commit, None, None, dict(sorted(counts.items())), rows)


def against(result: StatusReport, stack: Stack, upstream: Path, ref: str, *,
            progress: Callable[[str], None] | None = None) -> None:
    """Fill in, for each patch, what upstream did to it between the pin and ``ref``."""
    from patchctl.errors import InputError
    from patchctl.rebase import engine as rebase
    from patchctl.rebase.bisect import Searcher, name_and_bisect
    from patchctl.rebase.cited import cited

    upstream = gitrepo.git_dir(upstream)
    pin = stack.pin()
    new = gitrepo.resolve_commit(upstream, ref)
    if new is None:
        raise InputError(f"{ref!r} is not a commit, tag or branch in upstream {upstream}")
    result.ref, result.ref_commit = ref, new
    sources = rebase.sources_of(stack)
    with gitrepo.temp_index(upstream) as index:
        rebase.seed(index, pin.commit, sources)
        steps = rebase.classify(index, sources, new, progress=progress,
                                cited=cited(upstream, pin.commit, new, sources, pin.url))
        searcher = None
        if pin.commit != new and gitrepo.is_ancestor(upstream, pin.commit, new):
            searcher = Searcher(index, upstream, pin.commit, new, sources, progress)
        name_and_bisect(steps, searcher, bisect=True)
    for row, step in zip(result.patches, steps, strict=True):
        r = step.result
        info: dict[str, Any] = {"grade": r.grade}
        if r.landed:
            info["verdict"] = "landed"
            info["commit"] = asdict(r.landed.commit) if r.landed.commit else None
            info["how"] = r.landed.how
            if r.landed.reference:
                info["reference"] = r.landed.reference
        elif r.superseded:
            info["verdict"] = "superseded?"
            info["commit"] = asdict(r.superseded.commit)
            info["reference"] = r.superseded.reference
            info["interdiff"] = r.superseded.interdiff
        elif r.bisect and r.bisect.commit:
            share = contained(upstream, pin.commit, r.bisect.commit.id, step.source.patch)
            info["first_breaking"] = asdict(r.bisect.commit)
            info["contains"] = round(share, 3)
            info["verdict"] = "superseded" if share >= SUPERSEDED_AT else "broken"
        else:
            info["verdict"] = "applies" if r.grade in rebase.APPLIES else "broken"
        if r.conflicts:
            info["conflicts"] = r.conflicts
        row.upstream = info


def with_burden(result: StatusReport, stack: Stack, upstream: Path, *, days: int,
                progress: Callable[[str], None] | None = None) -> None:
    """Fill in each patch's burden: the upstream commits of ``days`` before the pin on the
    lines it stands on, its files, its library and test lines."""
    from patchctl.burden.engine import burden

    found = burden(stack, upstream, days=days, progress=progress)
    for row, b in zip(result.patches, found.patches, strict=True):
        row.burden = {"days": days, "commits": b.commits, "files": b.files,
                      "library": b.library, "tests": b.tests}
        if b.skipped:  # a hunk does not match the pin: its commits are not counted
            row.burden["skipped"] = b.skipped


def contained(upstream: Path, pin: str, commit: str, patch: Patch) -> float:
    """The share of the patch's added lines (ignoring blank and brace-only ones) that
    upstream holds at ``commit`` *in the patch's place*: the lines each hunk covers at the
    pin are followed through upstream's changes to ``commit``, and only that region counts,
    so a line that merely occurs elsewhere in the file does not. How far upstream got
    toward the same result."""
    from difflib import SequenceMatcher

    files = [f for f in patch.files if f.target]
    paths = [f.path for f in files]
    old, new = gitrepo.read_files(upstream, pin, paths), gitrepo.read_files(upstream, commit,
                                                                              paths)
    found = total = 0
    for f in files:
        before = [ln.strip() for ln in (old.get(f.path) or "").splitlines()]
        after = [ln.strip() for ln in (new.get(f.path) or "").splitlines()]
        ops = SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
        for h in f.hunks:
            start = max(h.source_start - 1, 0)
            end = start + h.source_length
            near = [op for op in ops if op[1] <= end and op[2] >= start]
            lo = min((j1 + max(0, start - i1) if tag == "equal" else j1)
                     for tag, i1, _, j1, _ in near) if near else 0
            hi = max((j1 + min(end, i2) - i1 if tag == "equal" else j2)
                     for tag, i1, i2, j1, j2 in near) if near else len(after)
            region = set(after[lo:hi])
            for ln in h.lines:
                text = ln[1:].strip()
                if ln[:1] == "+" and substantive(text):
                    total += 1
                    found += text in region
    return found / total if total else 0.0


def outreach_refs(stack: Stack, concern: str | None) -> list[str]:
    """The issues and pull requests ``stack/outreach/<concern>.toml`` names as prior art."""
    from patchctl.errors import StackError
    from patchctl.outreach.facts import load_outreach

    try:
        data = load_outreach(stack.root, concern)
    except StackError:
        return []  # draft-outreach names a malformed file; the report does not need it
    return [a.ref for a in (data.prior_art if data else []) if a.kind in ("issue", "pr")]
