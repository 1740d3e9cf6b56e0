"""The state of a rebase-pin stopped at a conflict: one typed record, one load, one save.

It lives in ``<project>/.patchctl/rebase/state.json`` beside the conflict work
tree (``work/``) and the new text of each patch already rebased (``staged/``).
``head`` is the work tree's commit the state describes: every effect on the
work tree (a commit) is followed by a save, so a run killed between the two
leaves the work tree ahead of the state, and --continue puts it back to
``head`` before it goes on (rebasing.py). Nothing here runs git.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from patchctl import fsutil, stackwrite
from patchctl.errors import InputError
from patchctl.rebase import PatchResult
from patchctl.schemas import REBASE_STATE

_OLDER = ("patchctl.rebase-state/1",)


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

    def to_dict(self) -> dict:
        return {"schema": REBASE_STATE, **asdict(self)}

    @classmethod
    def from_dict(cls, d: dict) -> RebaseState:
        return cls(
            stack=_typed(d, "stack", str), upstream=_typed(d, "upstream", str),
            old=_typed(d, "old", str), new=_typed(d, "new", str),
            new_ref=_typed(d, "new_ref", str), tag=_typed(d, "tag", (str, type(None))),
            drop_upstream=_typed(d, "drop_upstream", bool),
            commits=_typed(d, "commits", (int, type(None))),
            bisect_checks=_typed(d, "bisect_checks", int),
            snapshot=_typed(d, "snapshot", dict), head=_typed(d, "head", str),
            done=[DoneEntry(PatchResult.from_dict(_typed(e, "result", dict)),
                            _typed(e, "strip", int), _typed(e, "staged", (str, type(None))))
                  for e in _typed(d, "done", list)],
            conflict=PatchResult.from_dict(d["conflict"]) if d.get("conflict") else None)


def _typed(d: object, key: str, kind: type | tuple[type, ...]):
    if not isinstance(d, dict) or key not in d or not isinstance(d[key], kind):
        raise ValueError(f"{key!r} missing or of the wrong type")
    return d[key]


def state_path(project: Path) -> Path:
    return rebase_dir(project) / "state.json"


def load(project: Path) -> RebaseState | None:
    """The state of the rebase in progress; None when there is none."""
    path = state_path(project)
    if not path.is_file():
        return None
    again = "run `patchctl rebase-pin --abort` and start again"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: unreadable rebase state ({e}); {again}") from e
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema in _OLDER:
        raise InputError(f"{path}: a rebase state from an older patchctl ({schema}); {again}")
    if schema != REBASE_STATE:
        raise InputError(f"{path}: not a patchctl rebase state this version understands; "
                         f"{again}")
    try:
        return RebaseState.from_dict(data)
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(f"{path}: damaged rebase state ({e}); {again}") from e


def save(project: Path, state: RebaseState) -> None:
    fsutil.atomic_write(state_path(project),
                        json.dumps(state.to_dict(), indent=2, sort_keys=True) + "\n")


def refuse_if_in_progress(project: Path) -> None:
    state = load(project)
    if state is not None:
        raise InputError(f"a rebase-pin to {state.new[:12]} is in progress "
                         f"({rebase_dir(project)}); finish it with `patchctl rebase-pin "
                         "--continue` or undo it with `patchctl rebase-pin --abort`")
