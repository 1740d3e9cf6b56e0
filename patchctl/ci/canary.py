"""The upstream canary's verdict: this run's rebase-pin report against the previous one.

Input is ``patchctl rebase-pin TIP --check --bisect --json`` (schema
``patchctl.rebase/1``; fields this module does not know are ignored, so the
report can grow). A patch is *broken* when its grade is ``conflict``: it no
longer applies, even three-way (or ``waiting``: it stands on such a patch, left
out). It is *newly* broken when the previous report (kept by the workflow
between runs) did not have it broken, or when there is no previous report: then
the baseline is the pin, where every patch applies.
Only new breaks fail the canary; a break that persists is reported, not
re-raised every night.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from patchctl.errors import InputError
from patchctl.model import schemas
from patchctl.textout import count
from patchctl.untrusted import BadDocument, printable, read_json

SCHEMA = schemas.CANARY
BROKEN = frozenset({"conflict", "waiting"})  # waiting: stands on a conflict left out
NEW, STILL, FIXED, APPLIES, LANDED = "newly broken", "still broken", "fixed", "applies", \
    "landed"

_GITHUB = re.compile(r"^(?:https://|git@|ssh://git@)github\.com[/:]([\w.-]+/[\w.-]+?)(?:\.git)?/?$")
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|#])")


@dataclass
class Row:
    index: int
    name: str
    grade: str
    state: str
    offsets: int = 0
    conflicts: list[str] = field(default_factory=list)
    first_bad: dict[str, Any] | None = None  # {"id", "subject"}
    bisect_note: str | None = None
    landed: dict[str, Any] | None = None  # {"commit": {"id", "subject"} | None, "how"}
    superseded: object = None  # as the report has it (another command fills it in)
    # what carrying it costs at the pin, as upstream-status gives it: {days, commits (ids),
    # files, library, tests}; None when the status report has none
    burden: dict[str, Any] | None = None


@dataclass
class Canary:
    old: str
    new: str
    new_ref: str
    commits: int | None
    rows: list[Row]
    previous: dict[str, Any] | None = None  # {"old", "new"} of the report compared with
    name: str | None = None
    url: str | None = None

    def named(self, state: str) -> list[str]:
        return [r.name for r in self.rows if r.state == state]

    @property
    def broken(self) -> list[str]:
        return [r.name for r in self.rows if r.grade in BROKEN]

    @property
    def ok(self) -> bool:
        return not self.named(NEW)

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "ok": self.ok, "broken": self.broken,
                "newly_broken": self.named(NEW), "fixed": self.named(FIXED),
                **asdict(self)}

    def outputs(self) -> str:
        """``key=value`` lines for ``$GITHUB_OUTPUT``."""
        return (f"broken={len(self.broken)}\nnew={len(self.named(NEW))}\n"
                f"fixed={len(self.named(FIXED))}\nlanded={len(self.named(LANDED))}\n")


# What the canary reads of a report: it comes from the Actions cache (the previous run's)
# and from files a user names, so it is untrusted (patchctl/untrusted.py). Other fields
# are allowed and ignored; commit ids are hex and names one line, as rebase-pin writes them.
_CONTROL = {"pattern": "[\\x00-\\x1f\\x7f]"}  # as "not": `$` also matches before a final \n
_SHA = {"type": "string", "pattern": "^[0-9a-f]{40}(?:[0-9a-f]{24})?$", "not": _CONTROL}
_LINE = {"type": "string", "minLength": 1, "not": _CONTROL}
_COMMIT = {"type": "object", "required": ["id"],
           "properties": {"id": _SHA, "subject": {"type": ["string", "null"]}}}
_MAYBE_COMMIT = {"anyOf": [{"type": "null"}, _COMMIT]}
_COUNT = {"type": "integer", "minimum": 0}
REPORT_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["schema", "old", "new", "patches"],
    "properties": {
        "schema": {"type": "string",
                   "pattern": "^" + re.escape(schemas.family(schemas.REBASE))},
        "old": _SHA, "new": _SHA, "new_ref": {"type": "string"},
        "commits": {"type": ["integer", "null"]},
        "patches": {"type": "array", "items": {
            "type": "object", "required": ["name", "grade"],
            "properties": {
                "index": {"type": "integer"}, "name": _LINE,
                "grade": {"type": "string", "pattern": "^[a-z0-9-]+$", "not": _CONTROL},
                "offsets": {"type": ["array", "null"]},
                "conflicts": {"type": ["array", "null"], "items": _LINE},
                "bisect": {"type": ["object", "null"], "properties": {
                    "commit": _MAYBE_COMMIT, "note": {"type": ["string", "null"]}}},
                "landed": {"type": ["object", "null"], "properties": {
                    "commit": _MAYBE_COMMIT, "how": {"type": "string"},
                    "reference": {"type": ["string", "null"]}}},
                "superseded": {"properties": {
                    "commit": {"anyOf": [{"type": "null"}, _SHA, _COMMIT]},
                    "reference": {"type": ["string", "null"]},
                    "interdiff": {"type": ["string", "null"]}}}}}}}}
STATUS_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["schema", "patches"],
    "properties": {
        "schema": {"type": "string",
                   "pattern": "^" + re.escape(schemas.family(schemas.UPSTREAM_STATUS))},
        "ref_commit": {"anyOf": [{"type": "null"}, _SHA]},
        "patches": {"type": "array", "items": {
            "type": "object", "required": ["file"],
            "properties": {"file": _LINE, "upstream": {"type": ["object", "null"], "properties": {
                "first_breaking": {"anyOf": [{"type": "null"}, _SHA, _COMMIT]},
                "contains": {"type": ["number", "null"]}}},
                "burden": {"type": ["object", "null"],
                           "required": ["days", "commits", "files", "library", "tests"],
                           "properties": {"days": _COUNT, "commits": {"type": "array",
                                                                      "items": _SHA},
                                          "files": _COUNT, "library": _COUNT,
                                          "tests": _COUNT}}}}}}}


def load_report(path: Path, *, what: str = "report") -> dict[str, Any]:
    """A ``rebase-pin --check --bisect --json`` report, validated (one-line InputError)."""
    try:
        report: dict[str, Any] = read_json(path, REPORT_SCHEMA)
    except BadDocument as e:
        raise InputError(f"{what} {path} is not a rebase-pin report ({e}); give the output "
                         "of `patchctl rebase-pin NEW --check --bisect --json`") from None
    return report


def load_status(path: Path) -> dict[str, Any]:
    """An ``upstream-status --ref TIP --json`` report (its verdicts: landed, superseded)."""
    try:
        status: dict[str, Any] = read_json(path, STATUS_SCHEMA)
    except BadDocument as e:
        raise InputError(f"{path} is not an upstream-status report ({e}); give the output "
                         "of `patchctl upstream-status --ref TIP --json`") from None
    return status


def superseded_in(status: dict[str, Any], new: str) -> dict[str, dict[str, Any]]:
    """Patch file -> {commit, contains} for the patches upstream-status calls superseded."""
    if status.get("ref_commit") not in (None, new):
        raise InputError(f"the upstream-status report is for {status['ref_commit'][:12]}, the "
                         f"rebase report for {new[:12]}; run both at the same commit")
    out = {}
    for p in status["patches"]:
        up = p.get("upstream") or {}
        if up.get("verdict") == "superseded":
            out[p["file"]] = {"commit": up.get("first_breaking"), "contains": up.get("contains")}
        elif up.get("verdict") == "superseded?":  # names a change merged upstream, does more
            out[p["file"]] = {"commit": up.get("commit"), "reference": up.get("reference")}
    return out


def compare(report: dict[str, Any], previous: dict[str, Any] | None, *,
            status: dict[str, Any] | None = None, name: str | None = None,
            url: str | None = None) -> Canary:
    before = {p["name"]: p["grade"] for p in previous["patches"]} if previous else {}
    superseded = superseded_in(status, report["new"]) if status else {}
    burdens = {p["file"]: p.get("burden") for p in status["patches"]} if status else {}
    rows: list[Row] = []
    for p in report["patches"]:
        grade, was = p["grade"], before.get(p["name"])
        if grade in BROKEN:
            state = STILL if was in BROKEN else NEW
        elif grade == "upstream":
            state = LANDED
        else:
            state = FIXED if was in BROKEN else APPLIES
        bisect = p.get("bisect") or {}
        rows.append(Row(
            index=int(p.get("index", len(rows) + 1)), name=p["name"], grade=grade, state=state,
            offsets=len(p.get("offsets") or []), conflicts=list(p.get("conflicts") or []),
            first_bad=bisect.get("commit"), bisect_note=bisect.get("note"),
            landed=p.get("landed"), superseded=p.get("superseded") or superseded.get(p["name"]),
            burden=burdens.get(p["name"])))
    prev = {"old": previous["old"], "new": previous["new"]} if previous else None
    return Canary(old=report["old"], new=report["new"], new_ref=str(report.get("new_ref", "")),
                  commits=report.get("commits"), rows=rows, previous=prev, name=name, url=url)


# -- Markdown -------------------------------------------------------------------------------


def markdown(c: Canary) -> str:
    """The job summary (and tracking-issue body): GitHub-flavoured Markdown, deterministic."""
    title = f"patchctl upstream canary: {c.name}" if c.name else "patchctl upstream canary"
    span = f"{c.commits} first-parent commits after" if c.commits is not None else \
        "not a descendant of"
    ref = f" ({_code(c.new_ref)})" if c.new_ref and c.new_ref != c.new else ""
    out = [f"## {_text(title)}", "",
           f"Upstream {_commit(c, c.new)}{ref}, {span} the pin {_commit(c, c.old)}.", ""]
    new, broken = c.named(NEW), c.broken
    if new:
        out.append(f"**Newly broken: {len(new)} patch{'es' if len(new) > 1 else ''}** "
                   f"({', '.join(_code(n) for n in new)}). "
                   f"{len(broken)} of {len(c.rows)} patches no longer apply.")
    elif broken:
        out.append(f"No patch newly broken; {len(broken)} of {len(c.rows)} patches still "
                   "do not apply.")
    else:
        out.append(f"Every patch applies ({len(c.rows)} patches).")
    if c.previous:
        out.append(f"Compared with the previous run (pin {_commit(c, c.previous['old'])}, "
                   f"upstream {_commit(c, c.previous['new'])}).")
    else:
        out.append("No previous report (first run, or it expired): compared with the pin, "
                   "where every patch applies.")
    out += ["", "| # | patch | grade | first broken by | since last run |",
            "| ---: | --- | --- | --- | --- |"]
    for r in c.rows:
        grade = r.grade + (f" ({r.offsets} hunk{'s' if r.offsets > 1 else ''} moved)"
                           if r.offsets else "")
        first = _commit(c, r.first_bad["id"], r.first_bad.get("subject")) if r.first_bad \
            else (_text(r.bisect_note) if r.bisect_note else "")
        state = f"**{r.state}**" if r.state == NEW else r.state
        out.append(f"| {r.index} | {_code(r.name)} | {grade} | {first} | {state} |")
    conflicts = [r for r in c.rows if r.conflicts]
    if conflicts:
        out += ["", "### Conflicts", ""]
        out += [f"- {_code(r.name)}: " + ", ".join(_code(f) for f in r.conflicts)
                for r in conflicts]
    landed = [r for r in c.rows if r.state == LANDED]
    if landed:
        out += ["", "### Landed upstream", ""]
        for r in landed:
            info = r.landed or {}
            lc = info.get("commit")
            how = " ".join(str(x) for x in (info.get("how", "unknown"), info.get("reference"))
                           if x)
            where = _commit(c, lc["id"], lc.get("subject")) if lc else \
                "an upstream commit not found"
            out.append(f"- {_code(r.name)}: landed in {where} ({_text(how)}); drop it when "
                       "the pin moves (`rebase-pin --drop-upstream`).")
    superseded = [r for r in c.rows if r.superseded]
    if superseded:
        out += ["", "### Superseded upstream", ""]
        out += [f"- {_code(r.name)}: {_superseded(c, r.superseded)}" for r in superseded]
    out += _burden(c)
    out += ["", f"Reproduce locally: `patchctl rebase-pin {c.new} --check --bisect`."]
    return "\n".join(out) + "\n"


def _burden(c: Canary) -> list[str]:
    """What carrying each patch costs (upstream-status's burden): the upstream commits of the
    days before the pin on its lines; the patch upstream churn hits most is the one to
    propose first."""
    rows = [r for r in c.rows if r.burden]
    if not rows:
        return []
    days = rows[0].burden["days"] if rows[0].burden else 0
    total = len({x for r in rows for x in (r.burden or {}).get("commits", [])})
    out = ["", "### Upstream churn on the patches' lines", "",
           f"{count(total, 'distinct upstream commit')} of the {count(days, 'day')} "
           f"before the pin changed lines the patches stand on: had the stack been made then, "
           "each would have been a conflict or a three-way merge.", ""]
    for r in rows:
        b = r.burden or {}
        out.append(f"- {_code(r.name)}: {count(len(b.get('commits', [])), 'commit')}, "
                   f"{count(b.get('files', 0), 'file')}, library ±{b.get('library', 0)}, "
                   f"tests ±{b.get('tests', 0)}")
    return out


def _superseded(c: Canary, value: object) -> str:
    """As upstream-status gives it (the breaking commit and the share of the patch's added
    lines it already holds), or a plain note; other fields are shown as they are."""
    if isinstance(value, str):
        return _text(value)
    if not isinstance(value, dict):
        return "yes"
    parts = []
    commit = value.get("commit")
    if isinstance(commit, dict) and commit.get("id"):
        parts.append("by " + _commit(c, str(commit["id"]), commit.get("subject")))
    elif isinstance(commit, str):
        parts.append("by " + _commit(c, commit))
    contains = value.get("contains")
    if isinstance(contains, int | float):
        parts.append(f"(it already holds {contains:.0%} of the patch's added lines)")
    reference = value.get("reference")
    if isinstance(reference, str):  # rebase-pin's superseded?: the interdiff is in its report
        parts.append(f"(the patch names {_text(reference)} but the new pin does not hold all "
                     "it changes: its interdiff is in the rebase-pin report)")
    shown = {"commit", "name", "patch", "interdiff",
             *(("contains",) if isinstance(contains, int | float) else ()),
             *(("reference",) if isinstance(reference, str) else ())}
    extra = [f"{k}: {v}" for k, v in sorted(value.items())
             if k not in shown and isinstance(v, str | int | float)]
    if extra:
        parts.append("(" + _text("; ".join(extra)) + ")")
    return " ".join(parts) or "yes"


def _commit(c: Canary, commit: str, subject: str | None = None) -> str:
    ref = f"`{commit[:12]}`"
    m = _GITHUB.match(c.url or "")
    if m:
        ref = f"[{ref}](https://github.com/{m.group(1)}/commit/{commit})"
    return ref + (f" {_text(subject)}" if subject else "")


def _code(text: str) -> str:
    return "`" + printable(text).replace("`", "'").replace("|", "\\|") + "`"


def _text(text: str) -> str:
    return _MD_SPECIAL.sub(r"\\\1", printable(" ".join(str(text).split())))


def upstream_tip(repo: Path, ref: str, *, fetch: bool) -> str:
    """The commit ``ref`` names now: fetched from the upstream's origin into the cache
    clone when ``fetch`` (HEAD: the upstream's default branch), else resolved locally."""
    from patchctl import gitrepo

    commit = gitrepo.fetch_ref(repo, ref) if fetch else gitrepo.resolve_commit(repo, ref)
    if commit is None:
        where = "fetched from the upstream" if fetch else f"found in {repo}"
        raise InputError(f"{ref!r} is not a commit, tag or branch that can be {where}")
    return commit
