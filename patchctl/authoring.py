"""Creating and changing the stack: init, import, new, edit and refresh.

Every change to ``stack/`` goes through ``stackwrite.replace_stack`` (one
atomic swap) under the project lock, and rewrites the lock. Patches are
written in patchctl's deterministic form (patchtext.py), regenerated from the
trees around them, so refreshing an unchanged patch leaves its bytes alone.
The edit work tree lives in ``<project>/.patchctl/edit/``: a repository at the
pin (borrowing the upstream's objects) with the patches up to the one being
edited applied as commits.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from patchctl import (
    fsutil,
    gitrepo,
    grades,
    importing,
    lint,
    patchtext,
    schemas,
    stackwrite,
    statefile,
)
from patchctl.errors import EnvironmentFailure, InputError, StackError
from patchctl.fingerprint import make_lock
from patchctl.lint import glob_match
from patchctl.patchfile import FileDiff, Patch, apply_hunks, read_patch
from patchctl.stack import (
    LOCK_FILE,
    PIN_FILE,
    SERIES,
    Pin,
    Stack,
    check_commit_id,
    check_patch_name,
    render_lock,
    resolve_name,
)

SERIES_HEADER = (
    "# patchctl series: one patch per line, in apply order; `-pN` sets the strip level.\n"
)


@dataclass(frozen=True)
class InitResult:
    stack: Stack
    pin: Pin
    checked: bool
    why: str = ""


def init_stack(project: Path, *, url: str, pin: str, name: str | None = None,
               record_url: str | None = None) -> InitResult:
    stack = Stack(project / "stack")
    for f in (SERIES, PIN_FILE, LOCK_FILE):
        if (stack.root / f).exists():
            raise InputError(f"{stack.root / f} already exists; this project has a stack")
    local = Path(url).expanduser()
    is_local = local.exists()
    recorded_url = record_url or (str(local.resolve()) if is_local else url)
    name = name or recorded_url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git") or "upstream"
    commit, tag, checked, why = pin.lower(), None, False, ""
    try:
        if is_local:  # a clone, or a bundle (made into a repo in the cache)
            repo = gitrepo.bundle_repo(local) if local.is_file() else gitrepo.git_dir(local)
        else:
            repo = gitrepo.cached_upstream(url, check_commit_id(commit, what="--pin"))
        ref = gitrepo.resolve_ref(repo, pin, what="--pin")
        if ref is None:
            raise InputError(f"--pin {pin} is not a commit in upstream {url}")
        tag = ref.name  # a tag or branch: kept as information next to the real pin
        commit, checked = ref.commit, True
    except EnvironmentFailure as e:
        check_commit_id(commit, what="--pin")
        why = str(e)
    check_commit_id(commit, what="--pin")
    the_pin = Pin(name=name, url=recorded_url, commit=commit, tag=tag)
    stack.patches_dir.mkdir(parents=True, exist_ok=True)
    fsutil.atomic_write(stack.series_path, SERIES_HEADER)
    fsutil.atomic_write(stack.pin_path, the_pin.to_toml())
    fsutil.atomic_write(stack.lock_path, render_lock(make_lock(the_pin, [])))
    return InitResult(stack=stack, pin=the_pin, checked=checked, why=why)


# -- import ---------------------------------------------------------------------------------


@dataclass
class Imported:
    file: str
    subject: str
    source: str
    grade: str  # how it went onto the stack: exact | offset | 3way
    added: list[str] = field(default_factory=list)  # trailers filled in with defaults


@dataclass
class ImportResult:
    stack: str
    patches: list[Imported]
    fingerprint: str

    def to_dict(self) -> dict[str, Any]:
        return {"schema": schemas.IMPORT, **asdict(self)}


def import_patches(project: Path, stack: Stack, upstream: Path, sources: list[str], *,
                   concern: str | None = None, from_repo: Path | None = None,
                   force: bool = False,
                   progress: Callable[[str], None] | None = None) -> ImportResult:
    """Append patches from ``sources`` to the series, in patchctl's form; all or nothing.

    Each is applied on top of the stack at the pin (plain, else three-way) and
    re-made from the trees around it, so what lands in ``stack/`` is exactly
    what applies there. One that does not apply stops the import: nothing is
    written. A file in ``patches/`` that the series does not list (one being
    written by hand) is never overwritten unless ``force``.
    """
    with stackwrite.stack_lock(project, f"import into {stack.root}"), \
            tempfile.TemporaryDirectory(prefix="patchctl-import-") as tmp:
        snap = stackwrite.snapshot(stack.root)
        pin = stack.pin()
        upstream = gitrepo.git_dir(upstream)
        say = progress or (lambda _m: None)
        existing = stack.patches()
        say(f"reading {len(sources)} source(s)")
        candidates = importing.collect(sources, Path(tmp), from_repo=from_repo)
        names = [p.name for p in existing]
        number = patchtext.next_number(names)
        changes: dict[str, bytes | None] = {}
        made: list[Patch] = []
        report: list[Imported] = []
        with gitrepo.temp_index(upstream) as index:
            say(f"applying the stack ({len(existing)} patches) at the pin")
            _apply_stack(index, pin, existing)
            say(f"applying {len(candidates)} patch(es) on top")
            steps = _apply_candidates(index, upstream, pin, existing, candidates, Path(tmp), say)
            for c, (grade, diff) in zip(candidates, steps, strict=True):
                files = _diff_paths(diff)
                added = importing.fill_trailers(c, concern=concern, files=files)
                header = patchtext.mail_header(
                    author=c.author or gitrepo.author_ident(),
                    date=c.date or patchtext.now_rfc2822(), subject=c.subject,
                    body=c.body, trailers=c.trailers)
                name = patchtext.numbered_name(number, c.subject)
                number += 1
                if name in names:
                    raise InputError(f"{name} is already in the series")
                check_patch_name(name)
                if os.path.lexists(stack.patches_dir / name) and not force:
                    raise InputError(f"{stack.patches_dir / name} exists but the series does "
                                     "not list it (a patch written by hand?); move it away, or "
                                     "pass --force to overwrite it; nothing was imported")
                text = patchtext.render(header, diff)
                changes[f"patches/{name}"] = text.encode("utf-8", "surrogateescape")
                made.append(patchtext.reparse(text, name=name, path=stack.patches_dir / name))
                names.append(name)
                report.append(Imported(name, c.subject, c.source, grade, added))
        say(f"writing {len(made)} patch(es) into {stack.root}")
        lock = make_lock(pin, existing + made)
        series = stack.series_path.read_text(encoding="utf-8")
        changes["series"] = (series.rstrip("\n") + "\n" +
                             "".join(f"{p.name}\n" for p in made)).lstrip("\n").encode()
        changes["stack.lock"] = render_lock(lock).encode()
        stackwrite.replace_stack(stack, changes, expect=snap)
        return ImportResult(str(stack.root), report, lock.fingerprint)


def _items(patches: list[Patch]) -> list[gitrepo.SeriesItem]:
    return [gitrepo.SeriesItem(p.path.absolute(), p.strip, len(p.files)) for p in patches]


def _apply_stack(index: gitrepo.TempIndex, pin: Pin, patches: list[Patch]) -> None:
    index.read_tree(pin.commit)
    done = index.apply_series(_items(patches))
    for p, a in zip(patches, done.applied, strict=False):
        if not a.ok:
            raise StackError(f"{p.name} does not apply at the pin; fix the stack first "
                             "(`patchctl verify` says why)")


_BATCH = 8  # from this many candidates on, the batched path beats a few git calls each


def _apply_candidates(index: gitrepo.TempIndex, upstream: Path, pin: Pin, existing: list[Patch],
                      candidates: list[importing.Candidate], tmp: Path,
                      say: Callable[[str], None]) -> list[tuple[str, str]]:
    """(grade, diff re-made from the trees around it) of each candidate, applied in turn
    on the stack at the pin, which ``index`` holds; it then holds them all."""
    if len(candidates) >= _BATCH:
        done = _apply_batched(index, upstream, pin, existing, candidates, tmp / "batch")
        if done is not None:
            return done
    out = []
    for n, c in enumerate(candidates, start=1):
        say(f"[{n}/{len(candidates)}] {c.source}")
        before = index.write_tree()
        grade = _apply_candidate(index, c)
        after = index.write_tree()
        if after == before:
            raise InputError(f"{c.source}: changes nothing on top of the stack "
                             "(already applied?); nothing was imported")
        out.append((grade, gitrepo.format_diff(index.repo, before, after, env=index.env)))
    return out


def _apply_batched(index: gitrepo.TempIndex, upstream: Path, pin: Pin, existing: list[Patch],
                   candidates: list[importing.Candidate],
                   work: Path) -> list[tuple[str, str]] | None:
    """The common case in a handful of git calls, however many candidates.

    One `git apply --cached -v` per strip level (``apply_series``' batch) proves that
    every candidate applies plainly on the stack, and says which had offsets. The files after
    each candidate are then made here, hunk by hunk as git placed them
    (``patchfile.apply_hunks``), and one `git fast-import` turns them into a tree
    per candidate; the last must be git's own, or nothing of this is used. One
    `git diff-tree --stdin` re-makes the diffs. None (``index`` as it was) when a
    candidate needs more than plain text edits (three-way, binary, modes, renames,
    deletions): the caller then goes one by one and says which fails.
    """
    base = index.write_tree()
    try:
        parsed = [read_patch(c.diff, strip=c.strip) for c in candidates]
    except StackError:
        return None
    if any(p.crlf_damaged or not all(_text_edit(f) for f in p.files) for p in parsed):
        return None
    done = index.apply_series([gitrepo.SeriesItem(c.diff, c.strip, len(p.files))
                               for c, p in zip(candidates, parsed, strict=True)],
                              per_patch=False, base=base)
    if not done.batched:
        return None  # the index is as it was
    final = index.write_tree()
    paths = sorted({f.path for p in parsed for f in p.files})
    files = {p: blob for p, blob in gitrepo.read_blobs(index.repo, base, paths,
                                                       env=index.env).items()
             if blob[0] in ("100644", "100755")}  # a symlink is never edited as text
    steps: list[dict[str, tuple[str, bytes]]] = []
    for p in parsed:
        step = {}
        for f in p.files:
            mode, data = files.get(f.path, ("100644", b"")) if f.source else ("100644", b"")
            after = apply_hunks(data, f.hunks)
            if after is None:
                index.read_tree(base)
                return None
            files[f.path] = step[f.path] = (mode, after)
        steps.append(step)
    trees = gitrepo.commit_steps(index.repo, base, steps, work=work, env=index.env)
    if not trees or trees[-1] != final or \
            any(a == b for a, b in itertools.pairwise([base, *trees])):
        index.read_tree(base)
        return None
    diffs = gitrepo.format_diffs(work, [base, *trees])
    return [(grades.clean(a.offsets), d) for a, d in zip(done.applied, diffs, strict=True)]


def _text_edit(f: FileDiff) -> bool:
    """Text hunks that edit or create one regular file: what the batched path re-makes."""
    return bool(f.hunks) and not f.binary and f.target is not None and \
        f.source in (None, f.target) and all(m == "new file mode 100644" for m in f.mode_lines)


def _apply_candidate(index: gitrepo.TempIndex, c: importing.Candidate) -> str:
    done = index.apply_series([gitrepo.SeriesItem(c.diff, c.strip)], on_failure="three_way")
    a = done.applied[0]
    if a.ok:
        return grades.THREE_WAY if a.three_way else grades.clean(a.offsets)
    assert a.error is not None
    raise InputError(f"{c.source}: does not apply on top of the stack at the pin "
                     f"({a.error.message}); nothing was imported")


def _diff_paths(diff: str) -> list[str]:
    patch = patchtext.reparse(patchtext.render("", diff, mail_form=False), name="diff",
                              path=Path("diff"))
    return list(dict.fromkeys(p for f in patch.files for p in f.paths))


# -- new, edit, refresh -----------------------------------------------------------------------

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


def close_clean_edit(project: Path, what: str) -> None:
    """Before a verb reorders or rewrites the stack: an edit that holds nothing
    unrefreshed is closed (its work tree would go stale); one that does refuses."""
    state = open_edit(project)
    if state is not None and (state.new or
                              gitrepo.snapshot_tree(edit_dir(project) / "work") != state.tree):
        raise InputError(f"the edit of {state.target} has changes not yet refreshed; run "
                         f"`patchctl refresh` (or `patchctl edit NAME --reset`) before {what}")
    shutil.rmtree(edit_dir(project), ignore_errors=True)


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
    shutil.rmtree(edit_dir(project), ignore_errors=True)
    edit_dir(project, create=True)
    pin = stack.pin()
    upstream = gitrepo.git_dir(upstream)
    if not gitrepo.resolve_commit(upstream, pin.commit):
        raise InputError(f"pin {pin.commit} is not in upstream {upstream}")
    patches = stack.patches()
    touched = [path for p in patches for f in p.files for path in f.paths]
    scope = list(scope) if header is not None else patches[upto - 1].scope
    gitrepo.scratch_checkout(  # a sparse work tree still holds the patch's Scope
        upstream, work, pin.commit, needed=touched,
        wanted=(lambda path: any(glob_match(path, g) for g in scope)) if scope else None,
        patterns=gitrepo.sparse_patterns(scope), full=full)
    applied: list[str] = []
    base = pin.commit
    for i, p in enumerate(patches[:upto]):
        if i == upto - 1 and header is None:
            base = gitrepo.resolve_commit(work / ".git", "HEAD") or base
        gitrepo.commit_patch(work, p.path.absolute(), strip=p.strip,
                             subject=p.subject or p.name, body=p.body, author=p.author)
        applied.append(p.name)
    if header is not None:
        base = gitrepo.resolve_commit(work / ".git", "HEAD") or base
    state = EditState(stack=str(stack.root), pin=pin.commit, target=target, base=base,
                      new=header is not None, header=header, tree=gitrepo.snapshot_tree(work))
    statefile.save(edit_dir(project) / "state.json", schemas.EDIT_STATE, asdict(state))
    return EditResult(str(work), target, header is not None, applied, discarded)


def _discarding(project: Path, work: Path) -> str:
    """What ``--reset`` is about to throw away, in words ("" when nothing)."""
    try:
        state = _load_edit(project)
    except InputError as e:
        return f"an edit state this patchctl cannot use ({e})"
    if state is None:
        return "a work tree without edit state" if work.exists() else ""
    changed = (work / ".git").is_dir() and gitrepo.snapshot_tree(work) != state.tree
    return f"the edit of {state.target}" + (" and its unrefreshed changes" if changed else "")


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
            raise InputError(f"--trailer {key}={value}: {problem}")
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
        result.outside_scope = [f for f in _diff_paths(diff)
                                if new.scope and not any(glob_match(f, g) for g in new.scope)]
        after = [p for p in patches if p.name != target]
        at = next((i for i, p in enumerate(patches) if p.name == target), len(patches))
        final = [*after[:at], new, *after[at:]]
        lock = make_lock(stack.pin(), final)
        result.fingerprint = lock.fingerprint
        unchanged = old is not None and path.read_bytes() == text.encode("utf-8",
                                                                         "surrogateescape")
        if not unchanged or stack.lock() != lock:
            from patchctl.stack import rewrite_series

            series = stack.series_path.read_text(encoding="utf-8")
            changes: dict[str, bytes | None] = {
                f"patches/{target}": text.encode("utf-8", "surrogateescape"),
                "series": rewrite_series(series, dropped=set(),
                                         restrip={target} if old and old.strip != 1 else set(),
                                         append=[target] if old is None else []).encode(),
                "stack.lock": render_lock(lock).encode()}
            stackwrite.replace_stack(stack, changes, expect=snap)
        state.tree, state.new = tree, False
        statefile.save(edit_dir(project) / "state.json", schemas.EDIT_STATE, asdict(state))
        result.later_failing = _later_failing(git_dir, tree, after[at:])
        return result


def _find_name(stack: Stack, name: str, target: str) -> str:
    if name in (target, target.removesuffix(".patch")):
        return target
    return stack.series()[_find(stack, name)].name


def _later_failing(git_dir: Path, tree: str, later: list[Patch]) -> list[str]:
    """The patches after the refreshed one that no longer apply on top of it."""
    with gitrepo.temp_index(git_dir) as index:
        index.read_tree(tree)
        done = index.apply_series(_items(later), on_failure="skip", base=tree)
    return [p.name for p, a in zip(later, done.applied, strict=True) if not a.ok]
