"""`patchctl refresh --all`: the series up to the edited patch rewritten from the commits
of the edit work tree, after a `git rebase -i` there (reword, reorder, split, squash,
insert, drop).

Each commit pin..HEAD becomes one patch, in order, its diff made from the trees around
the commit (``gitrepo.format_diff``: patchctl's form). A commit is matched to a patch up
to the edited one by its subject line: that patch keeps its file name (as `move` keeps
it), author, date and trailers; its body becomes the commit's, and the trailers of the
message's last paragraph are set as `header --set` sets them (``rearrange.reheader``,
the same checks). A patch whose commit still has the trees its file makes is kept byte
for byte. A commit no patch matches becomes a new patch, named as `split` names one,
its missing trailers filled as import fills them (``import_sources.fill_trailers``); a
patch no commit matches is dropped. The patches after the edited one must still apply
on top, or nothing is written. One transaction (``rearrange.transaction``: the lock, one
swap, the lock file rewritten); the edit stays open on the result.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from patchctl import gitrepo
from patchctl.authoring import import_sources as importing
from patchctl.authoring.edit import (
    edit_dir,
    edit_state_file,
    later_failing,
    open_edit,
    save_edit,
)
from patchctl.authoring.init_import import diff_paths
from patchctl.authoring.rearrange import Trees, _checked, reheader, transaction
from patchctl.errors import InputError
from patchctl.globs import glob_match, valid_globs
from patchctl.model import lint, patchtext, schemas
from patchctl.model.fingerprint import make_lock
from patchctl.model.patchfile import Patch
from patchctl.model.stack import Stack, check_patch_name
from patchctl.untrusted import shorten

KEPT, CHANGED, NEW, DROPPED = "kept", "changed", "new", "dropped"
REWORDED, TRAILERS, REGENERATED = "reworded", "trailers", "regenerated"


@dataclass
class Restacked:
    """One patch of the result, or one dropped. ``changes`` says how a changed one
    differs: reworded (its body), trailers (``set_trailers``), content-changed / context-only
    (its diff), regenerated (the same diff, rewritten in patchctl's form)."""

    file: str
    subject: str
    status: str  # kept | changed | new | dropped
    changes: list[str] = field(default_factory=list)
    set_trailers: list[str] = field(default_factory=list)  # keys the commit message set
    added: list[str] = field(default_factory=list)  # `Key: value` filled in (new patches)
    commit: str | None = None  # the commit it was made from; None when dropped
    was: int | None = None  # 1-based position in the series before; None when new
    now: int | None = None  # 1-based position after; None when dropped
    outside_scope: list[str] = field(default_factory=list)
    interdiff: str | None = None


@dataclass
class RefreshAllResult:
    target: str  # the patch the edit now ends with: the one plain `refresh` rewrites
    patches: list[Restacked]  # in the new order, the dropped ones last
    series: list[str]
    fingerprint: str
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"schema": schemas.REFRESH_ALL, **asdict(self)}


def refresh_all(project: Path, stack: Stack) -> RefreshAllResult:
    """Rewrite the series up to the edited patch from the edit work tree's commits; all
    or nothing. The edit stays open, ending at the patch of HEAD."""
    with transaction(project, stack, "refresh --all") as t:
        state = open_edit(project)
        if state is None:
            raise InputError("nothing to refresh: no edit in progress; start one with "
                             "`patchctl edit NAME`")
        if stack.pin().commit != state.pin:
            raise InputError("the pin moved since the edit began; start it again with "
                             "`patchctl edit NAME --reset`")
        if state.target not in t.names:
            raise InputError(f"{state.target}, the edited patch, is no longer in the series; "
                             "start again with `patchctl edit NAME --reset`")
        work = edit_dir(project) / "work"
        commits = _commits(work, state.pin)
        upto = t.names.index(state.target) + 1
        later = t.patches[upto:]
        with tempfile.TemporaryDirectory(prefix="patchctl-restack-") as tmp:
            w = _Rewrite(stack, work / ".git", t.patches[:upto], t.names, Path(tmp))
            for info in commits:
                w.add(info)
        w.drop_unmatched()
        failing = later_failing(work / ".git", commits[-1].tree, later)
        if failing:
            at = len(w.made) + [p.name for p in later].index(failing[0]) + 1
            raise InputError(f"in that order {failing[0]} (#{at}) no longer applies on top "
                             f"of the commits of {work}; change them so it does; nothing was "
                             "written")
        order = [*w.made, *later]
        lock = make_lock(stack.pin(), order)
        result = RefreshAllResult(w.made[-1].name, w.report, [p.name for p in order],
                                  lock.fingerprint)
        state.target, state.new, state.tree = result.target, False, commits[-1].tree
        state.base = commits[-2].commit if len(commits) > 1 else state.pin
        if w.changes or result.series != t.names or stack.lock() != lock:
            # the state names the patch the swap writes: it goes in the same transaction
            done = t.commit("refresh-all", "refreshed from the edit's commits", order,
                            changes=w.changes, regenerated=w.regenerated, keep_edit=True,
                            then=edit_state_file(project, state))
            result.written, result.removed = done.written, done.removed
        else:
            save_edit(project, state)
        return result


class _Rewrite:
    """The patches made from the commits so far, and what writing them changes."""

    def __init__(self, stack: Stack, git_dir: Path, old: list[Patch], names: list[str],
                 tmp: Path) -> None:
        self.stack, self.git_dir, self.old, self.tmp = stack, git_dir, old, tmp
        with gitrepo.temp_index(git_dir) as index:  # the tree before and after each patch
            self.trees = Trees(index, stack.pin()).around(old, 0, len(old))
        self.by_subject: dict[str, list[int]] = {}
        for at, p in enumerate(old):
            self.by_subject.setdefault(p.subject or p.name, []).append(at)
        self.names = list(names)  # every name taken, new ones included
        self.used: set[int] = set()  # the old patches matched so far
        self.made: list[Patch] = []
        self.report: list[Restacked] = []
        self.changes: dict[str, bytes | None] = {}
        self.regenerated: list[str] = []  # rewritten from a diff of trees: -p1 again

    def add(self, info: gitrepo.CommitInfo) -> None:
        """The next commit as a patch: the old one of its subject, else a new one."""
        diff = gitrepo.format_diff(self.git_dir, info.parent_tree, info.tree)
        c = importing.commit_candidate(info, f"commit {info.commit[:12]}",
                                       self.tmp / f"{len(self.made):04d}.diff")
        c.diff.write_text(diff, encoding="utf-8", errors="surrogateescape")
        where = f"commit {info.commit[:12]} ({shorten(c.subject, 60)})"
        k = next((i for i in self.by_subject.get(c.subject, []) if i not in self.used), None)
        if k is None:
            patch, entry = _new(self.stack, self.names, c, diff, where)
            self.names.append(patch.name)
        else:
            self.used.add(k)
            in_place = (info.parent_tree, info.tree) == (self.trees[k], self.trees[k + 1])
            patch, entry = _matched(self.old[k], c, None if in_place else diff, where)
            entry.was = k + 1
            if not in_place and entry.status == CHANGED:
                self.regenerated.append(patch.name)
        entry.commit, entry.now = info.commit, len(self.made) + 1
        if entry.status != KEPT:
            self.changes[f"patches/{patch.name}"] = patch.text.encode("utf-8",
                                                                      "surrogateescape")
            entry.outside_scope = _outside_scope(patch, diff)
        self.made.append(patch)
        self.report.append(entry)

    def drop_unmatched(self) -> None:
        """The old patches no commit matched: dropped, their files removed."""
        for at, gone in enumerate(self.old):
            if at not in self.used:
                self.changes[f"patches/{gone.name}"] = None
                self.report.append(Restacked(gone.name, gone.subject, DROPPED, was=at + 1))


def _commits(work: Path, pin: str) -> list[gitrepo.CommitInfo]:
    """The commits pin..HEAD of the edit work tree, oldest first: a linear history on
    the pin, everything committed, no git operation stopped half-way."""
    git_dir = work / ".git"
    what = gitrepo.unfinished_operation(work)
    if what is not None:
        raise InputError(f"a git {what} is stopped half-way in {work}: finish it (`git {what} "
                         f"--continue`) or abort it first; nothing was written")
    head = gitrepo.resolve_commit(git_dir, "HEAD")
    if head is None or not gitrepo.is_ancestor(git_dir, pin, head):
        raise InputError(f"HEAD of {work} is not on top of the pin {pin[:12]}; rebase it "
                         f"there (`git rebase -i {pin[:12]}`) first; nothing was written")
    if gitrepo.snapshot_tree(work) != gitrepo.tree_of(git_dir, head):
        raise InputError(f"{work} has uncommitted changes: commit them first (`git commit`; "
                         "with --all each commit becomes a patch); nothing was written")
    line = gitrepo.first_parent_path(git_dir, pin, head)
    if line != gitrepo.rev_range(git_dir, f"{pin}..{head}"):
        raise InputError(f"the history of {work} since the pin holds a merge: make it "
                         f"linear (`git rebase {pin[:12]}`) first; nothing was written")
    if not line:
        raise InputError(f"{work} holds no commit on top of the pin: to drop every patch "
                         "up to the edited one, use `patchctl delete`; nothing was written")
    infos = [gitrepo.commit_info(git_dir, c) for c in line]
    empty = next((i for i in infos if i.tree == i.parent_tree), None)
    if empty is not None:
        subject = shorten(empty.message.split("\n")[0], 60)
        raise InputError(f"commit {empty.commit[:12]} ({subject}) changes nothing: drop it "
                         "(`git rebase -i`) first; nothing was written")
    return infos


def _matched(old: Patch, c: importing.Candidate, diff: str | None,
             where: str) -> tuple[Patch, Restacked]:
    """``old`` made from the commit ``c``: its header with the commit's body and trailers
    (``reheader``), its diff regenerated unless ``diff`` is None (the commit has the
    trees ``old`` makes where it was: its file is kept)."""
    entry = Restacked(old.name, old.subject, KEPT)
    body = c.body if c.body != old.body.strip("\n") else None
    if body is not None and not old.mail_form:
        raise InputError(f"{where}: its body differs from {old.name}'s, whose DEP-3 header "
                         "holds none to change (change its Description: instead); nothing "
                         "was written")
    settings = _settings(old, c.trailers, where)
    entry.set_trailers = [k for k, _ in settings]
    entry.changes = [*([REWORDED] if body is not None else []),
                     *([TRAILERS] if settings else [])]
    patch = old
    if diff is not None:
        text = patchtext.render(patchtext.header_text(old), diff, mail_form=old.mail_form)
        patch = patchtext.reparse(text, name=old.name, path=old.path)
        if text != old.text or old.strip != 1:
            change = patchtext.compare(old, patch)
            entry.changes.append(REGENERATED if change == patchtext.UNCHANGED else change)
            if change == patchtext.CONTENT:
                entry.interdiff = patchtext.interdiff(old, patch, name=old.name)
    if body is not None or settings:
        try:
            _, patch, _ = reheader(patch, settings, body=body)
        except InputError as e:
            raise InputError(f"{where}: {e}") from e
    if entry.changes:
        entry.status = CHANGED
    return patch, entry


def _settings(patch: Patch, given: Sequence[tuple[str, str]],
              where: str) -> list[tuple[str, str]]:
    """The trailers of a commit message that differ from ``patch``'s, as `header --set`
    settings (checked by ``_checked``); one the message does not name stays as it is."""
    have: dict[str, list[str]] = {}
    for key, value in patchtext.trailers(patch):
        have.setdefault(key.lower(), []).append(value)
    want: dict[str, tuple[str, list[str]]] = {}
    for key, value in given:
        want.setdefault(key.lower(), (key, []))[1].append(value)
    out = []
    for lower, (key, values) in want.items():
        if values == have.get(lower, []):
            continue
        if len(values) > 1:
            raise InputError(f"{where}: `{shorten(key)}:` is given {len(values)} times and "
                             f"differs from {patch.name}'s; a commit message sets one value "
                             "per trailer, as `patchctl header --set` does; nothing was "
                             "written")
        out.append((key, _checked(key, values[0], where=where)))
    return out


def _new(stack: Stack, names: list[str], c: importing.Candidate, diff: str,
         where: str) -> tuple[Patch, Restacked]:
    """A new patch from the commit ``c``, numbered and named as `split` names one; the
    trailers it lacks filled as import fills them. Its own trailers are checked as
    `header --set` checks them: against the patch with the defaults alone."""
    if not c.subject:
        raise InputError(f"{where}: the commit has no subject line; reword it "
                         "(`git rebase -i`) first; nothing was written")
    for key, value in c.trailers:
        _checked(key, value, where=where)
    file = check_patch_name(patchtext.numbered_name(patchtext.next_number(names), c.subject))
    path = stack.patches_dir / file
    if file in names or os.path.lexists(path):
        raise InputError(f"{path} already exists but the series does not list it (a patch "
                         "written by hand?); move it away; nothing was written")
    files = diff_paths(diff)
    defaults = dataclasses.replace(c, trailers=[])
    importing.fill_trailers(defaults, concern=None, files=files)
    added = importing.fill_trailers(c, concern=None, files=files)
    author, date = c.author or gitrepo.author_ident(), patchtext.now_rfc2822()
    try:
        base, patch = (patchtext.reparse(patchtext.render(patchtext.mail_header(
            author=author, date=date, subject=c.subject, body=c.body, trailers=x.trailers),
            diff), name=file, path=path) for x in (defaults, c))
    except InputError as e:
        raise InputError(f"{where}: {e}") from e
    errors = [f.message for f in lint.added_findings(base, patch) if f.severity == lint.ERROR]
    if errors:
        raise InputError(f"{where}: {errors[0]}; nothing was written")
    return patch, Restacked(file, c.subject, NEW, added=added)


def _outside_scope(patch: Patch, diff: str) -> list[str]:
    scope = valid_globs(patch.scope)  # a broken glob matches nothing; verify names it
    return [f for f in diff_paths(diff)
            if patch.scope and not any(glob_match(f, g) for g in scope)]
