"""Reordering and trimming the stack: delete, rename, renumber, move, fold, split, and
header --set.

Each verb is one transaction with the guarantees of the authoring commands:
under the project lock, refused while a rebase-pin is stopped or an edit holds
unrefreshed changes (a clean edit is closed, and the verb says so: its work tree
would go stale), staged and swapped in whole by ``stackwrite.replace_stack`` with
the lock rewritten, all or nothing. Orders are checked index-only at the pin before
anything is written. Patches named on the command line go through
``stack.resolve_name``; fold and split live in ``stackcarve``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from patchctl import gitrepo
from patchctl.errors import InputError
from patchctl.model import lint, patchtext, schemas, stackwrite
from patchctl.model.fingerprint import make_lock
from patchctl.model.lint import ERROR, added_findings
from patchctl.model.patchfile import Patch
from patchctl.model.stack import (
    Pin,
    Stack,
    check_patch_name,
    edit_series,
    render_lock,
    resolve_name,
)
from patchctl.textout import count
from patchctl.untrusted import shorten

_SCHEMAS = {"delete": schemas.DELETE, "rename": schemas.RENAME, "move": schemas.MOVE,
            "fold": schemas.FOLD, "split": schemas.SPLIT, "header": schemas.HEADER,
            "refresh-all": schemas.REFRESH_ALL, "renumber": schemas.RENUMBER}


@dataclass
class StackOpResult:
    """What a verb did: ``series`` is the new order, ``written`` the files it (re)wrote,
    ``closed_edit`` the open edit it closed, in words ("" when none was open)."""

    op: str
    message: str
    series: list[str]
    fingerprint: str
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    closed_edit: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"schema": _SCHEMAS[self.op], **asdict(self)}


@dataclass
class RenumberResult(StackOpResult):
    """`renumber`: also each ``[old, new]`` name in series order, and the names kept
    because they carry no number."""

    renamed: list[list[str]] = field(default_factory=list)
    unnumbered: list[str] = field(default_factory=list)


@dataclass
class Txn:
    """One verb's view of the stack, taken under the lock."""

    project: Path
    stack: Stack
    what: str
    snap: dict[str, str]
    patches: list[Patch]

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.patches]

    def index_of(self, query: str) -> int:
        return resolve_name(self.names, query, where=str(self.stack.series_path))

    def commit(self, op: str, message: str, order: Sequence[Patch], *,
               changes: Mapping[str, bytes | None] | None = None,
               renamed: Mapping[str, str] | None = None,
               regenerated: Sequence[str] = (), keep_edit: bool = False,
               then: Mapping[Path, bytes] | None = None) -> StackOpResult:
        """Write ``order`` as the new series (plus ``changes``) in one swap, with its lock.
        An open edit is closed, and the result says so (or, with changes not refreshed,
        the write refused), unless ``keep_edit``: `refresh --all`, which writes the edit's
        own commits. ``then``: private state files that go with the swap
        (``replace_stack``)."""
        from patchctl.authoring.edit import close_clean_edit

        all_changes: dict[str, bytes | None] = dict(changes or {})
        series = self.stack.series_path.read_text(encoding="utf-8")
        all_changes["series"] = edit_series(series, [p.name for p in order], renamed=renamed,
                                            regenerated=regenerated).encode()
        lock = make_lock(self.stack.pin(), order)
        all_changes["stack.lock"] = render_lock(lock).encode()
        closed = "" if keep_edit else close_clean_edit(self.project, self.what)
        stackwrite.replace_stack(self.stack, all_changes, expect=self.snap, then=then)
        return StackOpResult(
            op, message, [p.name for p in order], lock.fingerprint,
            written=sorted(k.removeprefix("patches/") for k, v in all_changes.items()
                           if v is not None and k.startswith("patches/")),
            removed=sorted(k.removeprefix("patches/") for k, v in all_changes.items()
                           if v is None), closed_edit=closed)


@contextlib.contextmanager
def transaction(project: Path, stack: Stack, what: str) -> Iterator[Txn]:
    """The lock held, open work refused, the stack read and snapshotted."""
    from patchctl.authoring.edit import open_edit
    from patchctl.rebase.state import refuse_if_in_progress

    with stackwrite.stack_lock(project, f"{what} in {stack.root}"):
        refuse_if_in_progress(project)
        state = open_edit(project)
        if state is not None and state.new:
            raise InputError(f"the new patch {state.target} is not written yet; run "
                             "`patchctl refresh` (or `patchctl edit --close --reset`) "
                             f"before {what}")
        snap = stackwrite.snapshot(stack.root)
        yield Txn(project, stack, what, snap, stack.patches())


class Trees:
    """Trees of pin + prefixes of a series on one temporary index (index-only, milliseconds)."""

    def __init__(self, index: gitrepo.TempIndex, pin: Pin) -> None:
        self.index = index
        self.pin = pin

    def apply(self, patches: Sequence[Patch], *, proposed: bool = False) -> None:
        """Put ``patches`` on the index (``apply_series``: batched, per patch on a failure);
        one that does not apply is refused naming it and its hunk (``proposed``: an order
        not yet written, so its position is named too)."""
        from patchctl.verify.engine import explain_failure

        done = self.index.apply_series(
            [gitrepo.SeriesItem(p.path.absolute(), p.strip, len(p.files)) for p in patches])
        failed = done.failed
        if failed is None:
            return
        n = done.applied.index(failed)
        p = patches[n]
        why = explain_failure(p, failed.error).reason
        if proposed:
            raise InputError(f"in that order {p.name} (#{n + 1}) does not apply at the pin: "
                             f"{why}; nothing was written")
        raise InputError(f"{p.name} does not apply at the pin ({why}); fix the stack first "
                         "(`patchctl verify` says why)")

    def around(self, patches: Sequence[Patch], start: int, count: int) -> list[str]:
        """The tree of pin + patches[:start], then the tree after each of the next ``count``."""
        self.index.read_tree(self.pin.commit)
        self.apply(patches[:start])
        trees = [self.index.write_tree()]
        for p in patches[start:start + count]:
            self.apply([p])
            trees.append(self.index.write_tree())
        return trees

    def diff(self, old: str, new: str, paths: Sequence[str] | None = None) -> str:
        return gitrepo.format_diff(self.index.repo, old, new, env=self.index.env, paths=paths)


def pinned_repo(upstream: Path, pin: Pin) -> Path:
    """The upstream's git dir, which must hold the pin."""
    repo = gitrepo.git_dir(upstream)
    if gitrepo.resolve_commit(repo, pin.commit) is None:
        raise InputError(f"pin {pin.commit} is not in upstream {repo}; pass --upstream with "
                         "a clone that has it")
    return repo


def check_order(upstream: Path, pin: Pin, patches: Sequence[Patch]) -> None:
    """Refuse (naming the patch and hunk) an order that does not apply at the pin."""
    with gitrepo.temp_index(pinned_repo(upstream, pin)) as index:
        index.read_tree(pin.commit)
        Trees(index, pin).apply(patches, proposed=True)


# -- delete, rename, renumber, move -----------------------------------------------------


def delete(project: Path, stack: Stack, upstream: Path | None, name: str, *,
           keep_file: bool = False) -> StackOpResult:
    """Drop NAME from the series (and its file, unless ``keep_file``). With ``upstream``,
    refuse when a later patch no longer applies without it."""
    with transaction(project, stack, "delete") as t:
        i = t.index_of(name)
        gone = t.patches[i]
        order = t.patches[:i] + t.patches[i + 1:]
        if upstream is not None:
            check_order(upstream, stack.pin(), order)
        changes: dict[str, bytes | None] = {} if keep_file else {f"patches/{gone.name}": None}
        kept = " (its file kept)" if keep_file else ""
        return t.commit("delete", f"deleted {gone.name}{kept}", order, changes=changes)


def rename(project: Path, stack: Stack, name: str, new: str) -> StackOpResult:
    """Give NAME a new file name (``.patch`` is added when missing); its bytes stay."""
    with transaction(project, stack, "rename") as t:
        old = t.patches[t.index_of(name)]
        target = check_new_name(new)
        if target == old.name:
            raise InputError(f"{old.name} already has that name")
        return _rename_files(t, "rename", f"renamed {old.name} to {target}", {old.name: target},
                             fix="pick another name")


def renumber(project: Path, stack: Stack) -> RenumberResult:
    """Give each patch whose file's leading ``NNNN-`` number is not its position the same
    name with that number (``patchtext.renumbered``), all in one swap; bytes, order and
    strip levels stay. Names without a number are kept and reported."""
    with transaction(project, stack, "renumber") as t:
        plan = patchtext.renumbered(t.names)
        kept = patchtext.unnumbered(t.names)
        if not plan:
            return RenumberResult("renumber", "already numbered in series order", t.names,
                                  make_lock(stack.pin(), t.patches).fingerprint,
                                  unnumbered=kept)
        for target in plan.values():
            check_new_name(target)
        done = _rename_files(t, "renumber", f"renumbered {count(len(plan), 'patch')}", plan,
                             fix="move it out of patches/ first")
        return RenumberResult(**vars(done), renamed=[[a, b] for a, b in plan.items()],
                              unnumbered=kept)


def _rename_files(t: Txn, op: str, message: str, renamed: Mapping[str, str], *,
                  fix: str) -> StackOpResult:
    """Commit ``renamed`` (old name -> new, each checked by ``check_new_name``): each
    file's bytes under its new name, in its place with its strip level; the one way a
    patch file is renamed. A new name may be an old one that is renamed away too (a
    swap); one that another patch keeps, or a file the series does not list, is refused
    (``fix`` says what to do)."""
    patches_dir = t.stack.patches_dir
    for target in renamed.values():
        if target not in renamed and (target in t.names or (patches_dir / target).exists()):
            raise InputError(f"{patches_dir / target} already exists; {fix}")
    changes: dict[str, bytes | None] = {f"patches/{old}": None for old in renamed}
    order = []
    for p in t.patches:
        new = renamed.get(p.name)
        if new is None:
            order.append(p)
            continue
        order.append(patchtext.reparse(p.text, name=new, path=patches_dir / new,
                                       strip=p.strip))
        changes[f"patches/{new}"] = (patches_dir / p.name).read_bytes()
    return t.commit(op, message, order, changes=changes, renamed=renamed)


def check_new_name(new: str) -> str:
    """A file name for a new patch (``.patch`` added when missing), checked as every patch
    name is (``stack.check_patch_name``): one plain name under patches/."""
    return check_patch_name(new if new.endswith(".patch") else f"{new}.patch", subdirs=False)


def move(project: Path, stack: Stack, upstream: Path, name: str, *, before: str | None = None,
         after: str | None = None, to: int | None = None) -> StackOpResult:
    """Move NAME before or after OTHER, or to position N (1-based); the new order must
    apply at the pin, checked index-only, or nothing is written."""
    if sum(x is not None for x in (before, after, to)) != 1:
        raise InputError("give exactly one of --before OTHER, --after OTHER, --to N")
    with transaction(project, stack, "move") as t:
        i = t.index_of(name)
        patch = t.patches[i]
        rest = t.patches[:i] + t.patches[i + 1:]
        if to is not None:
            if not 1 <= to <= len(t.patches):
                raise InputError(f"--to {to}: the series has positions 1 to {len(t.patches)}")
            at = to - 1
        else:
            other = t.index_of(before if before is not None else str(after))
            if other == i:
                raise InputError(f"{patch.name} cannot move relative to itself")
            at = next(k for k, p in enumerate(rest) if p.name == t.patches[other].name)
            at += 1 if after is not None else 0
        order = [*rest[:at], patch, *rest[at:]]
        if order == t.patches:
            return StackOpResult("move", f"{patch.name} is already there", t.names,
                                 make_lock(stack.pin(), t.patches).fingerprint)
        check_order(upstream, stack.pin(), order)
        return t.commit("move", f"moved {patch.name} to position {at + 1}", order)


# -- header -----------------------------------------------------------------------------


@dataclass
class HeaderResult:
    file: str
    subject: str
    author: str
    date: str
    trailers: list[tuple[str, str]]
    changed: bool = False
    warnings: list[str] = field(default_factory=list)
    closed_edit: str = ""  # the open edit a change closed, in words

    def to_dict(self) -> dict[str, Any]:
        return {"schema": schemas.HEADER, **asdict(self)}


def read_header(stack: Stack, name: str) -> HeaderResult:
    patch = stack.patches()[resolve_name([e.name for e in stack.series()], name,
                                         where=str(stack.series_path))]
    return _header_of(patch)


def _header_of(patch: Patch, **extra: Any) -> HeaderResult:
    return HeaderResult(patch.name, patch.subject, patch.author, patch.date,
                        patchtext.trailers(patch), **extra)


def set_header(project: Path, stack: Stack, name: str,
               settings: Sequence[tuple[str, str | None]], *,
               body: str | None = None) -> HeaderResult:
    """Set (value) or remove (None) trailers of NAME, and replace its body (the text
    between subject and trailers) when ``body`` is given, validated as verify validates
    them: a change that adds a lint error is refused. The diff, and so the fingerprint,
    stays: the patch is parsed again and refused unless its diff is byte-identical, its
    subject and author are kept, and its trailers differ only in the keys set."""
    with transaction(project, stack, "header --set") as t:
        i = t.index_of(name)
        old = t.patches[i]
        text, new, added = reheader(old, settings, body=body)
        if text == old.text:
            return _header_of(old, warnings=[f.message for f in added])
        order = [*t.patches[:i], new, *t.patches[i + 1:]]
        what = [*(["body"] if body is not None else []), *(k for k, _ in settings)]
        done = t.commit("header", f"set {', '.join(what)} of {old.name}", order,
                        changes={f"patches/{old.name}": text.encode("utf-8", "surrogateescape")})
        return _header_of(new, changed=True, warnings=[f.message for f in added],
                          closed_edit=done.closed_edit)


def reheader(old: Patch, settings: Sequence[tuple[str, str | None]], *,
             body: str | None = None, where: str | None = None
             ) -> tuple[str, Patch, list[lint.Finding]]:
    """``old`` with trailers set (value) or removed (None) and its body replaced (when
    ``body`` is given): (text, parsed patch, lint findings the change adds). The one way
    a header changes (`header --set`, `refresh --all`): each value through ``_checked``,
    the result parsed again and refused unless only what was asked changed, and refused
    on a lint error the change adds. ``where`` names the source of the values in errors
    (default: the ``--set`` options)."""
    header = patchtext.header_text(old)
    if body is not None:
        if not old.mail_form:
            raise InputError(f"{old.name}: --message needs a format-patch header; "
                             "this one is DEP-3 (edit its Description: instead)")
        header = patchtext.set_body(header, body)
    settings = [(key, None if value is None else _checked(key, value, where=where))
                for key, value in settings]
    for key, value in settings:
        header = patchtext.set_trailer(header, key, value, mail_form=old.mail_form)
    diff = "\n".join(old.text.split("\n")[old.diff_line - 1:])
    stat = _diffstat(old)
    text = f"{header.rstrip(chr(10))}\n---\n{stat}{diff}" if old.mail_form else \
        f"{header.rstrip(chr(10))}\n\n{diff}"
    new = patchtext.reparse(text, name=old.name, path=old.path, strip=old.strip)
    _same_but(old, new, settings, body)
    added = added_findings(old, new)
    errors = [f.message for f in added if f.severity == ERROR]
    if errors:
        raise InputError(f"{old.name}: {errors[0]}; nothing was written")
    return text, new, added


def _checked(key: str, value: str, *, where: str | None = None) -> str:
    """A ``--set KEY=VALUE`` value (or a trailer from ``where``), stripped and checked as
    every trailer patchctl writes is (``lint.trailer_problem``; verify's judgement of it
    comes after)."""
    value = value.strip()
    problem = lint.trailer_problem(key, value, content=False)
    if problem is not None:
        if where is not None:
            raise InputError(f"{where}: {problem}; nothing was written")
        hint = f" (use --unset {key} to remove it)" if not value else ""
        raise InputError(f"--set {shorten(key)}=...: {problem}{hint}")
    return value


def _same_but(old: Patch, new: Patch, settings: Sequence[tuple[str, str | None]],
              body: str | None) -> None:
    """Refuse a header change whose result, parsed again, differs from ``old`` in more
    than was asked: the diff (every line from the first file header on), the subject,
    author and date, a trailer not set, or a body other than the one given."""
    def lines(p: Patch) -> list[str]:
        return p.text.split("\n")[p.diff_line - 1:]

    want = body.strip("\n").split("\n") if body is not None else []
    while want and not want[-1].strip():
        want.pop()  # as a body is read: trailing blank lines are not part of it
    why = None
    if lines(new) != lines(old) or new.mail_form != old.mail_form:
        why = "its diff would change"
    elif (new.subject, new.author, new.date) != (old.subject, old.author, old.date):
        why = "its subject, author or date would change"
    elif body is not None and new.body != "\n".join(want):
        why = "the body would not read back as given"
    else:
        keys = {k.lower() for k, _ in settings}
        values = {k.lower(): [] if v is None else [v] for k, v in settings}
        have = patchtext.trailers(new)
        if [t for t in have if t[0].lower() not in keys] != \
                [t for t in patchtext.trailers(old) if t[0].lower() not in keys] or \
                any([v for k, v in have if k.lower() == key] != want
                    for key, want in values.items()):
            why = "its trailers would change beyond the ones set"
    if why is not None:
        raise InputError(f"{old.name}: refused, {why} (a header change leaves the rest of "
                         "the patch as it is); nothing was written")


def _diffstat(patch: Patch) -> str:
    """The text between the mail header's ``---`` and the diff, kept as it was."""
    lines = patch.text.split("\n")[: patch.diff_line - 1]
    if "---" not in lines:
        return ""
    cut = len(lines) - lines[::-1].index("---")
    return "".join(ln + "\n" for ln in lines[cut:])
