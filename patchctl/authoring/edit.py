"""Changing one patch in a work tree: new, edit and refresh, and closing the work tree.

The edit work tree lives in ``<project>/.patchctl/edit/``: a repository at the
pin (borrowing the upstream's objects) with the patches up to the one being
edited applied as commits, each message holding the patch's subject, body and
trailers. ``refresh`` writes the patch back through
``stackwrite.replace_stack`` (one atomic swap) under the project lock, in
patchctl's deterministic form (model/patchtext.py), and rewrites the lock;
``refresh --all`` (restack.py) writes every commit back as a patch.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from patchctl import gitrepo
from patchctl.authoring.init_import import diff_paths, series_items
from patchctl.errors import GitError, InputError, StackError
from patchctl.globs import check_globs, glob_match, valid_globs
from patchctl.model import lint, patchtext, schemas, stackwrite, statefile
from patchctl.model.fingerprint import make_lock
from patchctl.model.patchfile import Patch
from patchctl.model.stack import (
    Stack,
    check_patch_name,
    render_lock,
    resolve_name,
)
from patchctl.textout import count
from patchctl.untrusted import shorten


@dataclass
class EditState:
    """An open edit work tree (``.patchctl/edit/state.json``)."""

    stack: str
    pin: str
    target: str  # the patch file being edited (or written, when ``new``)
    base: str  # the work tree's commit the patch is diffed against
    new: bool
    header: str | None  # the mail header of a new patch
    tree: str  # the work tree as the edit left it, to notice unrefreshed changes

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EditState:
        f = statefile.field
        return cls(stack=f(d, "stack", str), pin=f(d, "pin", str), target=f(d, "target", str),
                   base=f(d, "base", str), new=f(d, "new", bool),
                   header=f(d, "header", (str, statefile.NONE)), tree=f(d, "tree", str))


@dataclass
class EditResult:
    work: str
    target: str
    new: bool
    applied: list[str]  # patches committed in the work tree, in order (target last if not new)
    discarded: str = ""  # what --reset threw away, in words

    def to_dict(self) -> dict[str, Any]:
        return {"schema": schemas.EDIT, **asdict(self)}


@dataclass
class RefreshResult:
    file: str
    change: str  # unchanged | context-only | content-changed | new
    fingerprint: str
    outside_scope: list[str] = field(default_factory=list)
    later_failing: list[str] = field(default_factory=list)  # later patches that no longer apply
    interdiff: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"schema": schemas.REFRESH, **asdict(self)}


def edit_dir(project: Path, *, create: bool = False) -> Path:
    return stackwrite.state_dir(project, create=create) / "edit"


def _find(stack: Stack, name: str) -> int:
    """Index in the series of the patch NAME names (``stack.resolve_name``: the one way)."""
    return resolve_name([e.name for e in stack.series()], name, where=str(stack.series_path))


def open_edit(project: Path) -> EditState | None:
    """The open edit's state (target, base, tree), or None when no edit is open."""
    state = _load_edit(project)
    return state if state is not None and (edit_dir(project) / "work" / ".git").is_dir() else None


def close_clean_edit(project: Path, what: str) -> str:
    """Before a verb reorders or rewrites the stack: an edit that holds nothing
    unrefreshed is closed (its work tree would go stale); one that does refuses, naming
    what (``_unrefreshed``), and so does one whose repository holds git work patchctl did
    not make (``keep_git_work``). Returns what was closed, in words, for the verb to say
    ("" when there was nothing): a build may point at that work tree."""
    work = edit_dir(project) / "work"
    remedy = "discard them with `patchctl edit --close --reset`"
    state = open_edit(project)
    pending = _unrefreshed(work, state) if state is not None else ""
    if state is not None and pending:
        raise InputError(f"the edit of {state.target} has changes not yet refreshed "
                         f"({pending}); run `patchctl refresh` (or {remedy}) before {what}")
    keep_git_work(work, state, f"or {remedy}, before {what}")
    if state is not None:
        closed = f"closed the edit of {state.target} ({work}): it held nothing unrefreshed"
    elif work.exists():
        closed = f"removed {work}, an edit work tree without edit state"
    else:
        closed = ""
    shutil.rmtree(edit_dir(project), ignore_errors=True)
    return closed


def _unrefreshed(work: Path, state: EditState) -> str:
    """What the open edit in ``work`` holds that no refresh wrote, in words ("" when
    nothing): a new patch not written yet, and the files changed since the edit was
    opened or last refreshed (``snapshot_tree``: committed or not)."""
    tree = gitrepo.snapshot_tree(work)
    paths = [] if tree == state.tree else gitrepo.changed_paths(work / ".git", state.tree, tree)
    parts = ["a new patch, not written yet"] if state.new else []
    if paths:
        more = f" and {len(paths) - 5} more" if len(paths) > 5 else ""
        parts.append(f"{count(len(paths), 'changed file')}: "
                     f"{', '.join(shorten(path, 200) for path in paths[:5])}{more}")
    elif tree != state.tree:  # trees differ in what diff-tree does not name: still changed
        parts.append("changed files")
    return "; ".join(parts)


@dataclass
class CloseResult:
    """`edit --close`: the work tree, the patch whose edit was closed ("" when none was
    open), what it said, and what ``--reset`` threw away, in words."""

    work: str
    target: str
    message: str
    discarded: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"schema": schemas.EDIT_CLOSE, **asdict(self)}


def close_edit(project: Path, *, discard: bool = False) -> CloseResult:
    """`edit --close`: close the open edit without opening another, so no upstream is
    needed. Refused as a verb that closes one refuses (``close_clean_edit``), unless
    ``discard`` (`--reset`), which throws away whatever it holds and says what
    (``_discarding``)."""
    work = edit_dir(project) / "work"
    with stackwrite.stack_lock(project, f"edit --close in {project}"):
        if not discard:
            state = open_edit(project)
            closed = close_clean_edit(project, "closing it")
            return CloseResult(str(work), state.target if state else "",
                               closed or "no edit is open")
        try:
            state = _load_edit(project)
        except InputError:  # an edit state this patchctl cannot use: _discarding says so
            state = None
        discarded = _discarding(project, work)
        shutil.rmtree(edit_dir(project), ignore_errors=True)
        if not discarded:
            return CloseResult(str(work), "", "no edit is open")
        return CloseResult(str(work), state.target if state else "",
                           f"closed {work}: discarded {discarded}", discarded)


def keep_git_work(work: Path, state: EditState | None, remedy: str) -> None:
    """Refuse to delete the edit work tree ``work`` while its repository holds git work
    patchctl did not make (``gitrepo.unrecorded_work``: the user's branches, tags, linked
    work trees, stash, a stopped rebase, commits that change nothing), naming it; the
    files themselves are the caller's tree check. ``remedy`` ends the message. An edit
    interrupted while git created its repository (no edit state: that is written last)
    leaves one git cannot read yet and nothing else: nothing to keep, and the caller
    makes the work tree again."""
    if not (work / ".git").is_dir():
        return
    try:
        found = gitrepo.unrecorded_work(work, since=state.pin if state else None)
    except GitError as e:
        if state is None and gitrepo.cut_short_checkout(work):
            return
        raise InputError(f"git cannot read the repository of the edit work tree {work} "
                         f"({shorten(str(e))}): save what you need from it, {remedy}") from e
    if found:
        raise InputError(f"the edit work tree {work} holds git work patchctl did not make "
                         f"({found.describe()}): push or remove them, {remedy}")


def _load_edit(project: Path) -> EditState | None:
    path = edit_dir(project) / "state.json"
    state = statefile.load(path, schemas.EDIT_STATE, EditState.from_dict, what="edit state",
                           again="start again with `patchctl edit NAME --reset`",
                           older=(schemas.EDIT,))  # what the edit state used to be called
    if state is not None:
        try:
            check_patch_name(state.target)
        except StackError as e:
            raise InputError(f"{path}: {e}; start again with `patchctl edit NAME "
                             "--reset`") from e
    return state


def _start_edit(project: Path, stack: Stack, upstream: Path, upto: int, *, reset: bool,
                target: str, header: str | None, scope: Sequence[str] = (),
                full: bool = False) -> EditResult:
    work = edit_dir(project, create=True) / "work"
    discarded = _discarding(project, work) if reset else ""
    state = None if reset else _load_edit(project)  # --reset clears any state, even a bad one
    if state is not None and (work / ".git").is_dir() and \
            gitrepo.snapshot_tree(work) != state.tree:
        raise InputError(f"the edit of {state.target} in {work} has changes not yet "
                         "refreshed; run `patchctl refresh`, or pass --reset to discard them")
    if not reset:
        keep_git_work(work, state, "or pass --reset to discard them")
    shutil.rmtree(edit_dir(project), ignore_errors=True)
    edit_dir(project, create=True)
    pin = stack.pin()
    upstream = gitrepo.git_dir(upstream)
    if not gitrepo.resolve_commit(upstream, pin.commit):
        raise InputError(f"pin {pin.commit} is not in upstream {upstream}")
    patches = stack.patches()
    touched = [path for p in patches for f in p.files for path in f.paths]
    # a broken Scope glob matches nothing here; verify names it
    scope = valid_globs(scope if header is not None else patches[upto - 1].scope)
    gitrepo.scratch_checkout(  # a sparse work tree still holds the patch's Scope
        upstream, work, pin.commit, needed=touched,
        wanted=(lambda path: any(glob_match(path, g) for g in scope)) if scope else None,
        patterns=gitrepo.sparse_patterns(scope), full=full)
    applied: list[str] = []
    base = pin.commit
    for i, p in enumerate(patches[:upto]):
        if i == upto - 1 and header is None:
            base = gitrepo.resolve_commit(work / ".git", "HEAD") or base
        gitrepo.commit_patch(work, p.path.absolute(), strip=p.strip,  # read back by --all
                             subject=p.subject or p.name, body=p.body, author=p.author,
                             trailers=patchtext.trailers(p))
        applied.append(p.name)
    if header is not None:
        base = gitrepo.resolve_commit(work / ".git", "HEAD") or base
    state = EditState(stack=str(stack.root), pin=pin.commit, target=target, base=base,
                      new=header is not None, header=header, tree=gitrepo.snapshot_tree(work))
    save_edit(project, state)
    return EditResult(str(work), target, header is not None, applied, discarded)


def save_edit(project: Path, state: EditState) -> None:
    statefile.save(edit_dir(project) / "state.json", schemas.EDIT_STATE, asdict(state))


def edit_state_file(project: Path, state: EditState) -> dict[Path, bytes]:
    """``save_edit``'s file, for ``replace_stack(then=)``: the edit state that names what
    a swap writes goes with that swap, so a kill just after it leaves no stale state."""
    return {edit_dir(project) / "state.json":
            statefile.render(schemas.EDIT_STATE, asdict(state)).encode()}


def _discarding(project: Path, work: Path) -> str:
    """What ``--reset`` is about to throw away, in words ("" when nothing)."""
    state = None
    try:
        state = _load_edit(project)
    except InputError as e:
        parts = [f"an edit state this patchctl cannot use ({e})"]
    else:
        if state is None:
            parts = ["a work tree without edit state"] if work.exists() else []
        else:
            parts = [f"the edit of {state.target}"]
            if (work / ".git").is_dir() and gitrepo.snapshot_tree(work) != state.tree:
                parts.append("its unrefreshed changes")
    if (work / ".git").is_dir():
        try:
            found = gitrepo.unrecorded_work(work, since=state.pin if state else None)
        except GitError:
            parts.append("a repository git cannot read")
        else:
            if found:
                parts.append(f"git work patchctl did not make ({found.describe()})")
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else "".join(parts)


def edit_patch(project: Path, stack: Stack, upstream: Path, name: str, *,
               reset: bool = False, full: bool = False) -> EditResult:
    with stackwrite.stack_lock(project, f"edit in {stack.root}"):
        i = _find(stack, name)
        return _start_edit(project, stack, upstream, i + 1, reset=reset,
                           target=stack.series()[i].name, header=None, full=full)


def new_patch(project: Path, stack: Stack, upstream: Path, name: str, *, concern: str,
              scope: list[str], subject: str | None = None, reset: bool = False,
              assisted_by: Sequence[str] = (), body: str = "",
              trailers: Sequence[tuple[str, str]] = (), full: bool = False) -> EditResult:
    """Open the edit work tree on top of the whole stack for a patch not yet written;
    ``refresh`` writes it and appends it to the series. NAME may carry the next
    number (``0004-foo``); ``trailers`` join (or, for Upstream-Status, replace) the
    defaults and are checked as verify checks them."""
    with stackwrite.stack_lock(project, f"new in {stack.root}"):
        names = [e.name for e in stack.series()]
        try:
            check_patch_name(name, subdirs=False)
        except StackError as e:
            raise InputError(f"NAME: {e}") from e
        file, stem = _new_file_name(names, name)
        if file in names or os.path.lexists(stack.patches_dir / file):
            raise InputError(f"{file} already exists in {stack.patches_dir}")
        if not scope:
            raise InputError("--scope: give at least one path glob the patch may touch")
        check_globs(scope, "--scope")
        patchtext.check_options([
            ("--concern", lint.trailer_problem("Concern", concern)),
            ("--scope", lint.trailer_problem("Scope", " ".join(scope))),
            *(("--assisted-by", lint.trailer_problem("Assisted-by", a)) for a in assisted_by),
            ("--subject", None if subject is None else lint.line_problem("the subject", subject)),
            ("--message", lint.body_problem(body, trailers_follow=True))])
        extra = _check_trailers(trailers)
        status = [v for k, v in extra if k == "Upstream-Status"] or ["Pending"]
        header = patchtext.mail_header(
            author=gitrepo.author_ident(), date=patchtext.now_rfc2822(),
            subject=subject or stem, body=body.strip("\n"),
            trailers=[("Concern", concern), ("Upstream-Status", status[-1]),
                      ("Scope", " ".join(scope)),
                      *((k, v) for k, v in extra if k != "Upstream-Status"),
                      *(("Assisted-by", t) for t in assisted_by)])
        return _start_edit(project, stack, upstream, len(names), reset=reset, target=file,
                           header=header, scope=scope, full=full)


def _new_file_name(names: list[str], name: str) -> tuple[str, str]:
    """(file name, name without number or .patch) of a new patch called NAME: numbered
    with the next number, or carrying it already (a different number is refused)."""
    stem = name.removesuffix(".patch")
    number = patchtext.next_number(names)
    head, sep, rest = stem.partition("-")
    if sep and rest and head.isdigit() and len(head) == 4:
        if int(head) != number:
            raise InputError(f"NAME {name} carries number {head}, but the next patch is "
                             f"{number:04d}; give {number:04d}-{rest}, or just {rest}")
        stem = rest
    return patchtext.numbered_name(number, stem), stem


_OWN_OPTION = {"Concern": "--concern", "Scope": "--scope", "Assisted-by": "--assisted-by"}


def _check_trailers(trailers: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    out = []
    for key, value in trailers:
        if key in _OWN_OPTION:
            raise InputError(f"--trailer {key}=...: set it with {_OWN_OPTION[key]}")
        problem = lint.trailer_problem(key, value)
        if problem:
            raise InputError(f"--trailer {shorten(key)}=...: {problem}")
        out.append((key, value.strip()))
    return out


def refresh_patch(project: Path, stack: Stack, name: str | None = None) -> RefreshResult:
    """Re-make the edited patch from its work tree (committed or not), keeping its header."""
    with stackwrite.stack_lock(project, f"refresh in {stack.root}"):
        state = _load_edit(project)
        work = edit_dir(project) / "work"
        if state is None or not (work / ".git").is_dir():
            raise InputError("nothing to refresh: no edit in progress; start one with "
                             "`patchctl edit NAME` or `patchctl new NAME`")
        target = state.target
        if name is not None and _find_name(stack, name, target) != target:
            raise InputError(f"the open edit is of {target}, not {name}")
        if stack.pin().commit != state.pin:
            raise InputError("the pin moved since the edit began; start it again with "
                             "`patchctl edit NAME --reset`")
        snap = stackwrite.snapshot(stack.root)
        git_dir = work / ".git"
        tree = gitrepo.snapshot_tree(work)
        base_tree = gitrepo.tree_of(git_dir, state.base)
        if tree == base_tree:
            raise InputError(f"{work} holds no change for {target}: edit the files there "
                             "first (a new file that .gitignore ignores counts once you "
                             "`git add -f` it there)")
        diff = gitrepo.format_diff(git_dir, base_tree, tree)
        patches = stack.patches()
        old = next((p for p in patches if p.name == target), None)
        if state.new or old is None:
            text = patchtext.render(state.header or "", diff)
        else:
            text = patchtext.render(patchtext.header_text(old), diff, mail_form=old.mail_form)
        path = stack.patches_dir / target
        new = patchtext.reparse(text, name=target, path=path)
        result = RefreshResult(target, "new" if old is None else patchtext.compare(old, new), "")
        if old is not None and result.change == patchtext.CONTENT:
            result.interdiff = patchtext.interdiff(old, new, name=target)
        scope = valid_globs(new.scope)  # a broken glob matches nothing; verify names it
        result.outside_scope = [f for f in diff_paths(diff)
                                if new.scope and not any(glob_match(f, g) for g in scope)]
        after = [p for p in patches if p.name != target]
        at = next((i for i, p in enumerate(patches) if p.name == target), len(patches))
        final = [*after[:at], new, *after[at:]]
        lock = make_lock(stack.pin(), final)
        result.fingerprint = lock.fingerprint
        unchanged = old is not None and path.read_bytes() == text.encode("utf-8",
                                                                         "surrogateescape")
        state.tree, state.new = tree, False
        if not unchanged or stack.lock() != lock:
            from patchctl.model.stack import rewrite_series

            series = stack.series_path.read_text(encoding="utf-8")
            changes: dict[str, bytes | None] = {
                f"patches/{target}": text.encode("utf-8", "surrogateescape"),
                "series": rewrite_series(series, dropped=set(),
                                         restrip={target} if old and old.strip != 1 else set(),
                                         append=[target] if old is None else []).encode(),
                "stack.lock": render_lock(lock).encode()}
            stackwrite.replace_stack(stack, changes, expect=snap,
                                     then=edit_state_file(project, state))
        else:
            save_edit(project, state)
        result.later_failing = later_failing(git_dir, tree, after[at:])
        return result


def _find_name(stack: Stack, name: str, target: str) -> str:
    if name in (target, target.removesuffix(".patch")):
        return target
    return stack.series()[_find(stack, name)].name


def later_failing(git_dir: Path, tree: str, later: list[Patch]) -> list[str]:
    """The patches after the refreshed one(s) that no longer apply on top of ``tree``."""
    with gitrepo.temp_index(git_dir) as index:
        index.read_tree(tree)
        done = index.apply_series(series_items(later), on_failure="skip", base=tree)
    return [p.name for p, a in zip(later, done.applied, strict=True) if not a.ok]
