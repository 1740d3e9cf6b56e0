"""What rebase-pin says about each patch and about the whole move: typed, JSON-ready.

``PatchResult`` is one patch's grade and findings, ``RebaseResult`` the report a
command returns (rendered by commands/rebase.py, saved in a stopped rebase's state by
rebase/state.py). Nothing here runs git.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from patchctl import gitrepo
from patchctl.model.grades import APPLIES, CONFLICT, WAITING
from patchctl.model.schemas import REBASE as SCHEMA
from patchctl.rebase import absorbed as rebase_absorbed
from patchctl.rebase import gone as rebase_gone
from patchctl.rebase import review as rebase_review
from patchctl.rebase.absorbed import Absorbed
from patchctl.rebase.gone import GoneNames
from patchctl.rebase.moved import MovedHunk
from patchctl.rebase.resolve import PlacedHunk


@dataclass(frozen=True)
class Commit:
    id: str
    subject: str


@dataclass
class Bisect:
    """Where a patch stopped applying (or, for ``landed``, started reverse-applying)."""

    commit: Commit | None
    checks: int  # index-only checks made, both ends included
    commits: int  # n: first-parent commits between the old and the new pin
    bound: int  # ceil(log2 n) + 2
    note: str | None = None


@dataclass
class Landing:
    commit: Commit | None
    how: str  # patch-id | reverse-apply | reference | unknown
    checks: int = 0
    reference: str | None = None  # how: reference: the PR or commit the patch names


@dataclass
class Superseded:
    """``superseded?``: the patch names an upstream change that merged between the pins, but
    the new pin does not hold all it changes, each at its place (rebase/cited.py). Never
    dropped."""

    commit: Commit
    reference: str  # as model.references labels it: #123, or a commit id
    interdiff: str  # the patch's diff against the commit's, bounded


@dataclass(frozen=True)
class Cited:
    """A patch names an upstream change that merged between the pins (rebase/cited.py): a
    candidate, never proof that the patch landed."""

    commit: Commit
    reference: str  # as model.references labels it
    contained: bool  # the commit's diff holds every line the patch changes: it may be
    # named as the landing once the tree proves one
    interdiff: str  # the patch's diff against the commit's, bounded (or why there is none)

    def superseded(self) -> Superseded:
        return Superseded(self.commit, self.reference, self.interdiff)


@dataclass
class PatchResult:
    index: int
    name: str
    grade: str
    offsets: list[gitrepo.HunkOffset] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)  # files left with conflict markers
    after_conflict: bool = False  # classified with an earlier conflicting patch left out
    waits_on: list[str] = field(default_factory=list)  # waiting: the left-out patches it
    # stands on (rebase/waiting.py)
    landed: Landing | None = None
    superseded: Superseded | None = None
    bisect: Bisect | None = None
    change: str | None = None  # unchanged | context-only | content-changed | dropped
    interdiff: str | None = None
    resolved: bool = False  # its conflict was resolved by hand (--continue)
    widened: list[str] = field(default_factory=list)  # paths --widen-scope added to Scope:
    followed: list[str] = field(default_factory=list)  # paths Scope: took by itself: where
    # moved-code detection proved the patch's lines went (a renamed file, moved lines)
    moved: list[MovedHunk] = field(default_factory=list)  # moved: the hunks re-targeted
    moved_note: str | None = None  # why its lines were not followed, when looked for
    placed: list[PlacedHunk] = field(default_factory=list)  # union, anchored: the hunks
    # re-placed (rebase/resolve.py)
    tried: list[str] = field(default_factory=list)  # a conflict: each strategy tried and
    # why it did not resolve it ("union: a.c hunk #1: ...")
    class_: str | None = None  # a conflict: its class (rebase/classify.py); "class" in JSON
    absorbed: list[Absorbed] = field(default_factory=list)  # its changes the rebased patch no
    # longer makes, most often because upstream made the same edit (rebase/absorbed.py)
    gone: list[GoneNames] = field(default_factory=list)  # names its added lines use that
    # upstream removed between the pins (rebase/gone.py)

    @property
    def doubted(self) -> bool:
        """It goes on, but what went on is likely not the patch's intent: a merge took part
        of its change as upstream's, or its lines use names upstream removed. Every check
        at the new pin passes there, so only a person can tell: it stops as a conflict
        does, with its automatic form applied to look at, until resolved."""
        return self.grade in APPLIES and not self.resolved and bool(self.absorbed or self.gone)

    @property
    def doubts(self) -> str:
        """Its findings that doubt it, as the stop and the range-diff say them; '' if none."""
        return "; ".join([rebase_absorbed.tag(self.absorbed)] * bool(self.absorbed)
                         + [rebase_gone.tag(self.gone)] * bool(self.gone))

    @property
    def stops(self) -> bool:
        """A person meets it: a conflict, or a doubted move."""
        return self.grade == CONFLICT or self.doubted

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PatchResult:
        def commit(c: dict[str, Any] | None) -> Commit | None:
            return Commit(**c) if c else None

        landed = d.get("landed")
        sup = d.get("superseded")
        bis = d.get("bisect")
        return cls(
            index=d["index"],
            name=d["name"],
            grade=d["grade"],
            offsets=[gitrepo.HunkOffset(**o) for o in d.get("offsets", [])],
            conflicts=list(d.get("conflicts", [])),
            after_conflict=d.get("after_conflict", False),
            waits_on=list(d.get("waits_on", [])),
            landed=Landing(
                commit(landed["commit"]), landed["how"], landed["checks"], landed.get("reference")
            )
            if landed
            else None,
            superseded=Superseded(Commit(**sup["commit"]), sup["reference"], sup["interdiff"])
            if sup
            else None,
            bisect=Bisect(
                commit(bis["commit"]), bis["checks"], bis["commits"], bis["bound"], bis.get("note")
            )
            if bis
            else None,
            change=d.get("change"),
            interdiff=d.get("interdiff"),
            resolved=d.get("resolved", False),
            widened=list(d.get("widened", [])),
            followed=list(d.get("followed", [])),
            moved=[MovedHunk(**m) for m in d.get("moved", [])],
            moved_note=d.get("moved_note"),
            placed=[PlacedHunk(**h) for h in d.get("placed", [])],
            tried=list(d.get("tried", [])),
            class_=d.get("class", d.get("class_")),  # JSON, or the state file
            absorbed=[Absorbed(**a) for a in d.get("absorbed", [])],
            gone=[GoneNames(**g) for g in d.get("gone", [])],
        )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["class"] = out.pop("class_")
        out["doubted"] = self.doubted
        return out


@dataclass
class RebaseResult:
    stack: str
    old: str
    new: str
    new_ref: str
    mode: str  # check | rebase | continue | abort
    status: str  # checked | up-to-date | rebased | stopped | needs-drop | aborted
    patches: list[PatchResult]
    commits: int | None = None  # first-parent commits old..new; None when not a descendant
    base: str | None = None  # where --bisect searched from when NEW does not descend from OLD
    bisect_checks: int = 0
    fingerprint: str | None = None
    work: str | None = None  # the conflict work tree, when stopped
    conflict: str | None = None  # the patch waiting there
    header: str | None = None  # its header, to edit with the resolution, when stopped
    rejects: list[str] = field(default_factory=list)  # .rej files the stop left in work
    message: str = ""
    seconds: float = 0.0
    causes: list[rebase_review.Cause] = field(default_factory=list)  # why patches conflict
    range_diff: str | None = None  # the stack before and after, when rebased

    @property
    def ok(self) -> bool:
        if self.status == "checked":
            return all(p.grade in APPLIES and not p.doubted for p in self.patches)
        return self.status in ("up-to-date", "rebased", "aborted")

    @property
    def to_resolve(self) -> int:
        """The stops a person will meet: conflicts and doubted moves; a ``waiting`` patch is
        not one of its own."""
        return sum(p.stops for p in self.patches)

    @property
    def doubts(self) -> int:
        return sum(p.doubted for p in self.patches)

    @property
    def waiting(self) -> int:
        return sum(p.grade == WAITING for p in self.patches)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "ok": self.ok,
            "to_resolve": self.to_resolve,
            "doubted": self.doubts,
            "waiting": self.waiting,
            **asdict(self),
            "patches": [p.to_dict() for p in self.patches],
        }
