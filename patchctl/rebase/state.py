"""The state of a rebase-pin stopped at a conflict: one typed record, one load, one save.

It lives in ``<project>/.patchctl/rebase/state.json`` beside the conflict work
tree (``work/``), the new text of each patch already rebased (``staged/``) and
the header of the patch waiting in the work tree (``header``, the user's to edit).
``head`` is the work tree's commit the state describes: every effect on the
work tree (a commit) is followed by a save, so a run killed between the two
leaves the work tree ahead of the state, and --continue puts it back to
``head`` before it goes on (rebase/session.py). Nothing here runs git.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from patchctl.errors import InputError
from patchctl.model import stackwrite, statefile
from patchctl.model.schemas import OLDER_REBASE_STATE, REBASE_STATE
from patchctl.model.statefile import NONE
from patchctl.rebase.results import PatchResult


def rebase_dir(project: Path, *, create: bool = False) -> Path:
    return stackwrite.state_dir(project, create=create) / "rebase"


@dataclass
class DoneEntry:
    """A patch already rebased: its result, and its staged text (None: the old bytes)."""

    result: PatchResult
    strip: int
    staged: str | None = None  # file name under staged/


@dataclass
class RebaseState:
    stack: str
    upstream: str
    old: str
    new: str
    new_ref: str
    tag: str | None
    drop_upstream: bool
    commits: int | None
    bisect_checks: int
    snapshot: dict[str, str]
    head: str  # the work tree's commit this state describes
    done: list[DoneEntry] = field(default_factory=list)
    conflict: PatchResult | None = None  # the patch waiting in the work tree, if any
    strict: bool = False  # rebase-pin --strict: --continue tries no resolving strategy either
    # The .rej files the stop's `git apply --reject` wrote in the work tree, each with the
    # sha256 of what it wrote: patchctl's own leftovers, removed at --continue while unchanged.
    rejects: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RebaseState:
        f = statefile.field
        return cls(
            stack=f(d, "stack", str), upstream=f(d, "upstream", str), old=f(d, "old", str),
            new=f(d, "new", str), new_ref=f(d, "new_ref", str), tag=f(d, "tag", (str, NONE)),
            drop_upstream=f(d, "drop_upstream", bool), commits=f(d, "commits", (int, NONE)),
            bisect_checks=f(d, "bisect_checks", int), snapshot=f(d, "snapshot", dict),
            head=f(d, "head", str),
            done=[DoneEntry(PatchResult.from_dict(f(e, "result", dict)), f(e, "strip", int),
                            f(e, "staged", (str, NONE))) for e in f(d, "done", list)],
            conflict=PatchResult.from_dict(f(d, "conflict", dict))
            if d.get("conflict") is not None else None,
            strict=f(d, "strict", bool) if "strict" in d else False,
            rejects=_rejects(f(d, "rejects", dict)) if "rejects" in d else {})


def _rejects(d: dict[str, Any]) -> dict[str, str]:
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in d.items()):
        raise ValueError("'rejects' holds a path or digest that is not a string")
    return dict(d)


def state_path(project: Path) -> Path:
    return rebase_dir(project) / "state.json"


def header_path(project: Path) -> Path:
    """The header (From, Date, Subject, body, trailers) of the patch waiting at a stop:
    written by the stop, edited by the user if the resolution changes what the patch
    says or touches; --continue takes the patch's new header from it."""
    return rebase_dir(project) / "header"


def load(project: Path) -> RebaseState | None:
    """The state of the rebase in progress; None when there is none."""
    return statefile.load(state_path(project), REBASE_STATE, RebaseState.from_dict,
                          what="rebase state",
                          again="run `patchctl rebase-pin --abort` and start again",
                          older=OLDER_REBASE_STATE)


def save(project: Path, state: RebaseState) -> None:
    statefile.save(state_path(project), REBASE_STATE, asdict(state))


def refuse_if_in_progress(project: Path) -> None:
    state = load(project)
    if state is not None:
        waiting = (f" (the header of {state.conflict.name}, where it stopped, is changed in "
                   f"{header_path(project)})") if state.conflict is not None else ""
        raise InputError(f"a rebase-pin to {state.new[:12]} is in progress "
                         f"({rebase_dir(project)}); finish it with `patchctl rebase-pin "
                         f"--continue`{waiting} or undo it with `patchctl rebase-pin --abort`")
