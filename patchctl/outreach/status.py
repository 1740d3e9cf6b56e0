"""upstream-status: where each patch stands upstream, like Yocto's patchreview.

Offline: counts by Upstream-Status, malformed or missing statuses, patches
with no Forwarded/Bug/Submitted reference, how long each has been Pending,
and with ``--ref``, which patches landed upstream between the pin and REF
(patch-id or reverse-apply, rebase-pin's machinery) and which upstream
probably superseded: the commit that first breaks the patch already holds
much of the patch's post-image. Online (``github.py``): the state of the
issues and pull requests the patches point at.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from patchctl import gitrepo
from patchctl.lint import UPSTREAM_STATUS_KINDA, UPSTREAM_STATUS_STRICT
from patchctl.outreach.facts import added_lines
from patchctl.patchfile import Patch
from patchctl.stack import Stack

SCHEMA = "patchctl.upstream-status/1"
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
    upstream: dict | None = None  # --ref: landed / superseded / applies / conflict ...
    online: list[dict] = field(default_factory=list)


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

    def to_dict(self) -> dict:
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
    counts = Counter(r.status or r.problem.split(":")[0] for r in rows if r.status or r.problem)
    return StatusReport(pin.name, pin.commit, None, None, dict(sorted(counts.items())), rows)


def against(result: StatusReport, stack: Stack, upstream: Path, ref: str, *,
            progress=None) -> None:
    """Fill in, for each patch, what upstream did to it between the pin and ``ref``."""
    from patchctl import rebase
    from patchctl.errors import InputError

    upstream = gitrepo.git_dir(upstream)
    pin = stack.pin()
    new = gitrepo.resolve_commit(upstream, ref)
    if new is None:
        raise InputError(f"{ref!r} is not a commit, tag or branch in upstream {upstream}")
    result.ref, result.ref_commit = ref, new
    sources = rebase.sources_of(stack)
    with gitrepo.temp_index(upstream) as index:
        rebase.seed(index, pin.commit, sources)
        steps = rebase.classify(index, sources, new, progress=progress)
        searcher = None
        if pin.commit != new and gitrepo.is_ancestor(upstream, pin.commit, new):
            searcher = rebase.Searcher(index, upstream, pin.commit, new, sources, progress)
        rebase.name_and_bisect(steps, searcher, bisect=True)
    for row, step in zip(result.patches, steps, strict=True):
        r = step.result
        info: dict = {"grade": r.grade}
        if r.landed:
            info["verdict"] = "landed"
            info["commit"] = asdict(r.landed.commit) if r.landed.commit else None
            info["how"] = r.landed.how
        elif r.bisect and r.bisect.commit:
            share = contained(upstream, r.bisect.commit.id, step.source.patch)
            info["first_breaking"] = asdict(r.bisect.commit)
            info["contains"] = round(share, 3)
            info["verdict"] = "superseded" if share >= SUPERSEDED_AT else "broken"
        else:
            info["verdict"] = "applies" if r.grade in rebase.APPLIES else "broken"
        if r.conflicts:
            info["conflicts"] = r.conflicts
        row.upstream = info


def contained(upstream: Path, commit: str, patch: Patch) -> float:
    """The share of the patch's added lines (ignoring blank and brace-only ones) that the
    files it touches already hold at ``commit``: how far upstream got to the same result."""
    files = [f for f in patch.files if f.target]
    texts = gitrepo.read_files(upstream, commit, [f.path for f in files])
    wanted = total = 0
    for f in files:
        have = {ln.strip() for ln in (texts.get(f.path) or "").splitlines()}
        for added in added_lines(f):
            line = added.text.strip()
            if len(line.strip("{}();, ")) < 2:
                continue
            total += 1
            wanted += line in have
    return wanted / total if total else 0.0
