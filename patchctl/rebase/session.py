"""rebase-pin as a command: check, rebase, stop at a conflict, --continue, --abort.

The engine (classification, bisect, the final swap) is rebase/engine.py; the state of
a stopped rebase is rebase/state.py. Everything a stop leaves lives under
``<project>/.patchctl/rebase/`` and nothing under ``stack/`` changes until the
rebase completes:

- ``work/``: a git work tree at the new pin, with the patches already rebased
  as commits and the conflicting patch applied with conflict markers (a doubted move,
  rebase/results.py: as it moved, applied and staged; a text rebase-pin regenerated for it
  is in ``doubted.patch``);
- ``staged/``: the new text of each patch already rebased;
- ``header``: the header of the patch waiting in ``work/`` (From, Date, Subject,
  body, trailers), written by the stop; what the user leaves there when they
  --continue is that patch's header (a resolution may change what the patch
  touches, and so its ``Scope:``, or what its body must say);
- ``state.json``: saved after every commit made in ``work/`` and naming that
  commit (``head``). A run killed between a commit and its save leaves the work
  tree ahead of the state: --continue first puts it back to ``head`` (keeping
  a resolution the user staged or committed), so every step can be resumed and
  no patch is ever seen twice.

Where not even a three-way merge puts the waiting patch on, its failed hunks are left in
``.rej`` files beside the files they were for; the state records each with a digest of what
was written, and --continue removes those it finds unchanged (the user's resolution never
holds them) before it checks the resolution. A ``.rej`` file the user changed is theirs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import shutil
import time
from pathlib import Path

from patchctl import fsutil, gitrepo
from patchctl.errors import GitError, InputError, StackError
from patchctl.model import patchtext, stackwrite
from patchctl.model.fingerprint import fingerprint, lock_state, make_lock
from patchctl.model.grades import CONFLICT, EXACT, UPSTREAM
from patchctl.model.lint import ERROR, added_findings, outside_scope, scope_literal
from patchctl.model.patchfile import Patch
from patchctl.model.stack import Stack
from patchctl.rebase import review as rebase_review
from patchctl.rebase import state as rebase_state
from patchctl.rebase.bisect import Searcher, name_and_bisect
from patchctl.rebase.cited import cited
from patchctl.rebase.classify import says
from patchctl.rebase.engine import (
    DROPPED,
    Progress,
    Source,
    Step,
    classify,
    finalize,
    new_stack,
    refuse_hand_edits,
    resolve_new,
    review_range_diff,
    seed,
    sources_of,
    upstream_paths,
)
from patchctl.rebase.results import RebaseResult
from patchctl.rebase.state import DoneEntry, RebaseState, rebase_dir


def rebase_pin(project: Path, stack: Stack, upstream: Path, new_ref: str, *, check: bool = False,
               bisect: bool = False, allow_downgrade: bool = False, drop_upstream: bool = False,
               strict: bool = False, progress: Progress | None = None) -> RebaseResult:
    started = time.perf_counter()
    rebase_state.refuse_if_in_progress(project)
    upstream = gitrepo.git_dir(upstream)  # a work tree path would not reach its objects
    lock = stackwrite.stack_lock(project, f"rebase-pin on {stack.root}") if not check else None
    with lock or contextlib.nullcontext():
        pin = stack.pin()
        if not check:
            refuse_hand_edits(project, stack)
        new, tag = resolve_new(upstream, pin, new_ref, allow_downgrade=allow_downgrade)
        sources = sources_of(stack)
        snap = stackwrite.snapshot(stack.root)
        with gitrepo.temp_index(upstream) as index:
            seed(index, pin.commit, sources)
            steps = classify(index, sources, new, progress=progress, old=pin.commit,
                             strict=strict,
                             landable=upstream_paths(upstream, pin.commit, new),
                             cited=cited(upstream, pin.commit, new, sources, pin.url))
            searcher = None
            base = rebase_review.search_base(upstream, pin.commit, new)
            if pin.commit != new and base is not None:
                searcher = Searcher(index, upstream, base, new, sources, progress)
            checks = name_and_bisect(steps, searcher, bisect=bisect)
        descends = base == pin.commit
        result = RebaseResult(stack=str(stack.root), old=pin.commit, new=new, new_ref=new_ref,
                              mode="check" if check else "rebase", status="checked",
                              patches=[s.result for s in steps],
                              commits=0 if new == pin.commit else
                              searcher.commits if searcher and descends else None,
                              base=None if descends else base, bisect_checks=checks)
        for step in steps:
            if step.result.grade == CONFLICT:
                result.causes += rebase_review.explain(upstream, pin.commit, new,
                                                       step.source.patch, step.result.conflicts)
        grades = {s.result.grade for s in steps}
        if check:
            result.status = "checked"
        elif new == pin.commit and grades <= {EXACT}:
            result.status, result.message = "up-to-date", "the stack is already at this commit"
        elif UPSTREAM in grades and not drop_upstream:
            result.status = "needs-drop"
            result.message = "patches already upstream: re-run with --drop-upstream to drop them"
        elif not any(s.result.stops for s in steps):
            pin_new = dataclasses.replace(pin, commit=new, tag=tag)
            result.range_diff = review_range_diff(upstream, pin.commit, new, steps)
            result.fingerprint = finalize(stack, snap, pin_new, steps)
            result.status = "rebased"
        else:
            stop(project, stack, upstream, result, steps, snap, tag=tag,
                 drop_upstream=drop_upstream, strict=strict)
        result.seconds = round(time.perf_counter() - started, 3)
        return result


# -- a stop at a conflict ---------------------------------------------------------------------


def _park(project: Path, state: RebaseState, work: Path, done: list[Step],
          conflict: Step) -> None:
    """Commit ``done`` in the work tree, apply ``conflict`` with markers; the state is
    saved after each commit, so a kill at any point leaves a state that resumes."""
    staged = rebase_dir(project) / "staged"
    staged.mkdir(parents=True, exist_ok=True)
    for step in done:
        entry = DoneEntry(step.result, step.source.strip)
        if step.result.change != DROPPED:
            text = step.text if step.text is not None else step.source.path.read_bytes().decode(
                "utf-8", "surrogateescape")
            entry.strip = 1 if step.text is not None else step.source.strip
            (staged / step.source.name).write_bytes(text.encode("utf-8", "surrogateescape"))
            entry.staged = step.source.name
            p = step.source.patch
            state.head = gitrepo.commit_patch(work, staged / step.source.name, strip=entry.strip,
                                              subject=p.subject or step.source.name,
                                              body=p.body, author=p.author)
        state.done.append(entry)
        rebase_state.save(project, state)
    patch, strip = conflict.source.path, conflict.source.strip
    if conflict.result.doubted and conflict.text is not None:  # its automatic form, to judge
        patch, strip = rebase_dir(project) / "doubted.patch", 1
        patch.write_bytes(conflict.text.encode("utf-8", "surrogateescape"))
    marked = gitrepo.apply_with_markers(work, patch, strip=strip)
    state.rejects = {path: _digest(work / path) for path in marked.rejects}
    fsutil.atomic_write(rebase_state.header_path(project),
                        patchtext.header_text(conflict.source.patch).encode(
                            "utf-8", "surrogateescape"))
    state.conflict = conflict.result
    rebase_state.save(project, state)


def _stopped(project: Path, result: RebaseResult, work: Path, step: Step,
             rejects: list[str]) -> None:
    if step.result.doubted:
        _doubt_stopped(project, result, work, step)
        return
    files = ", ".join(step.result.conflicts) or "see the .rej files"
    if step.result.class_:
        files = f"{says(step.result.class_)}, in {files}"
    tried = "; tried " + "; ".join(step.result.tried) if step.result.tried else ""
    header = rebase_state.header_path(project)
    result.status, result.work, result.conflict = "stopped", str(work), step.source.name
    result.header, result.rejects = str(header), rejects
    rej = (f"; the hunks that did not go on are in {', '.join(rejects)}: read them, and leave "
           "them as they are, --continue removes them") if rejects else ""
    result.message = (
        f"{step.source.name} conflicts at the new pin ({files}{tried}). Resolve it in {work} "
        f"(edit the files, `git add` them{rej}; to change the patch's Subject, body or "
        f"trailers, `Scope:` included, edit {header}), then run `patchctl rebase-pin "
        "--continue`; or `patchctl rebase-pin --abort` to leave the stack as it was")


def _doubt_stopped(project: Path, result: RebaseResult, work: Path, step: Step) -> None:
    r = step.result
    header = rebase_state.header_path(project)
    result.status, result.work, result.conflict = "stopped", str(work), step.source.name
    result.header = str(header)
    result.message = (
        f"{step.source.name} goes on at the new pin ({r.grade}), but may not do what it did: "
        f"{r.doubts}. It is applied and staged in {work}: judge it there (edit the files and `git "
        f"add` them; its Subject, body or trailers are in {header}), then run `patchctl "
        "rebase-pin --continue`, which takes it as it stands; or `patchctl rebase-pin "
        "--abort` to leave the stack as it was")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _drop_rejects(work: Path, state: RebaseState) -> None:
    """Remove the .rej files the stop wrote that are still as it wrote them (untracked, same
    bytes): they are patchctl's leftovers, never part of the resolution. One the user
    changed, staged or replaced stays, and is judged as any other file in the work tree."""
    for path in set(state.rejects).intersection(gitrepo.rej_files(work)):
        file = work / path
        if not file.is_symlink() and file.is_file() and _digest(file) == state.rejects[path]:
            file.unlink()


def stop(project: Path, stack: Stack, upstream: Path, result: RebaseResult, steps: list[Step],
         snap: dict[str, str], *, tag: str | None, drop_upstream: bool,
         strict: bool = False) -> None:
    """Leave a resumable state at the first conflict; ``stack/`` is not touched."""
    k = next(i for i, s in enumerate(steps) if s.result.stops)
    rdir = rebase_dir(project, create=True)
    shutil.rmtree(rdir, ignore_errors=True)  # what a stop killed before its first save left
    rdir.mkdir(parents=True)
    touched = [path for s in steps for f in s.source.patch.files for path in f.paths]
    work = gitrepo.scratch_checkout(upstream, rdir / "work", result.new, needed=touched)
    # `apply --3way` there needs each old patch's preimage blob in the work repo.
    gitrepo.seed_blobs(work, result.old, [(s.source.path, s.source.strip) for s in steps])
    state = RebaseState(stack=str(stack.root), upstream=str(upstream), old=result.old,
                        new=result.new, new_ref=result.new_ref, tag=tag,
                        drop_upstream=drop_upstream, commits=result.commits,
                        bisect_checks=result.bisect_checks, snapshot=snap,
                        head=gitrepo.work_head(work), strict=strict)
    rebase_state.save(project, state)
    _park(project, state, work, steps[:k], steps[k])
    _stopped(project, result, work, steps[k], sorted(state.rejects))


# -- --continue and --abort -------------------------------------------------------------------


def _rewind(work: Path, state: RebaseState) -> None:
    """Put the work tree back to the commit the state describes.

    Commits past ``head`` were made by a run killed before it saved (or, while a
    conflict waits, by the user committing the resolution by hand): while a
    conflict waits they are folded back into the index as the resolution; otherwise
    they, and any files a killed run left, are re-derived, so they are dropped.
    """
    head = gitrepo.work_head(work)
    if head != state.head and not gitrepo.is_ancestor(work, state.head, head):
        raise InputError(f"the rebase work tree {work} no longer descends from "
                         f"{state.head[:12]} (reset or rebased by hand?); run "
                         "`patchctl rebase-pin --abort` and start again")
    if state.conflict is not None:
        if head != state.head:
            gitrepo.reset_work(work, state.head, keep=True)
    else:  # nothing of the user's is there: markers a killed stop left are redone
        gitrepo.reset_work(work, state.head, keep=False)


def _finished(stack: Stack, state: RebaseState) -> bool:
    """The stack is the rebase's result: it pins the new commit and its lock is current."""
    pin = stack.pin()
    return pin.commit == state.new and \
        lock_state(stack, make_lock(pin, stack.patches()))[0] == "current"


def continue_rebase(project: Path, stack: Stack, *, drop_upstream: bool = False,
                    widen_scope: bool = False, strict: bool = False,
                    progress: Progress | None = None) -> RebaseResult:
    started = time.perf_counter()
    with stackwrite.stack_lock(project, f"rebase-pin on {stack.root}"):
        state = rebase_state.load(project)
        if state is None:
            raise InputError(f"no rebase-pin in progress (no state under {rebase_dir(project)}); "
                             "start one with `patchctl rebase-pin NEW_REF`")
        if stackwrite.snapshot(stack.root) != state.snapshot:
            if _finished(stack, state):  # killed after the swap, before the cleanup
                shutil.rmtree(rebase_dir(project), ignore_errors=True)
                pin = stack.pin()
                return RebaseResult(stack=str(stack.root), old=state.old, new=state.new,
                                    new_ref=state.new_ref, mode="continue", status="rebased",
                                    patches=[], commits=state.commits,
                                    fingerprint=fingerprint(pin.commit, stack.patches()),
                                    message="the rebase had completed before it was "
                                    "interrupted; its leftover state is removed")
            raise InputError(f"{stack.root} changed since the rebase started; run "
                             "`patchctl rebase-pin --abort`, commit your edits, and start again")
        work = rebase_dir(project) / "work"
        if not (work / ".git").is_dir():
            raise InputError(f"the rebase state is damaged ({work} is missing); run "
                             "`patchctl rebase-pin --abort` and start again")
        git_dir = work / ".git"
        _rewind(work, state)
        state.drop_upstream = state.drop_upstream or drop_upstream
        state.strict = state.strict or strict
        sources = sources_of(stack)
        texts, done = _done_steps(project, state, sources)
        if state.conflict is not None:
            step = _resolve(project, state, sources, done, texts, widen_scope=widen_scope)
            if step.text is not None:
                texts[step.source.name] = step.text
                (rebase_dir(project) / "staged" / step.source.name).write_bytes(
                    step.text.encode("utf-8", "surrogateescape"))
            state.done.append(DoneEntry(step.result, 1,
                                        step.source.name if step.text else None))
            state.conflict, state.rejects = None, {}
            state.head = gitrepo.work_head(work)
            done.append(step)
            rebase_state.save(project, state)  # the resolution is committed: never ask again

        rest = sources[len(done):]
        with gitrepo.temp_index(git_dir) as index:
            steps = classify(index, rest, gitrepo.tree_of(git_dir, "HEAD"), progress=progress,
                             first=len(sources), old=state.old, priors=sources[:len(done)],
                             new_pin=state.new, strict=state.strict,
                             landable=upstream_paths(git_dir, state.old, state.new),
                             cited=cited(git_dir, state.old, state.new, rest,
                                         stack.pin().url))
            searcher = Searcher(index, git_dir, state.old, state.new, sources, progress) \
                if gitrepo.is_ancestor(git_dir, state.old, state.new) else None
            name_and_bisect(steps, searcher, bisect=False)
        result = RebaseResult(stack=str(stack.root), old=state.old, new=state.new,
                              new_ref=state.new_ref, mode="continue", status="rebased",
                              patches=[s.result for s in done + steps], commits=state.commits,
                              bisect_checks=state.bisect_checks)
        grades = {s.result.grade for s in steps}
        if UPSTREAM in grades and not state.drop_upstream:
            result.status = "needs-drop"
            result.message = ("patches already upstream: run `patchctl rebase-pin --continue "
                              "--drop-upstream` to drop them")
        elif any(s.result.stops for s in steps):
            k = next(i for i, s in enumerate(steps) if s.result.stops)
            result.causes = [] if steps[k].result.doubted else rebase_review.explain(
                Path(state.upstream), state.old, state.new, steps[k].source.patch,
                steps[k].result.conflicts)
            _park(project, state, work, steps[:k], steps[k])
            _stopped(project, result, work, steps[k], sorted(state.rejects))
        else:
            pin = dataclasses.replace(stack.pin(), commit=state.new, tag=state.tag)
            problems = rebase_review.recheck(Path(state.upstream), state.new,
                                             new_stack(done + steps, texts))
            if problems:  # a guard: each resolution was checked when it was committed
                raise InputError(f"the rebased stack does not hold at {state.new[:12]}: "
                                 f"{'; '.join(problems)}; nothing was written; run "
                                 "`patchctl rebase-pin --abort` and report this")
            result.range_diff = review_range_diff(Path(state.upstream), state.old, state.new,
                                                  done + steps, texts)
            result.fingerprint = finalize(stack, state.snapshot, pin, done + steps, texts)
            shutil.rmtree(rebase_dir(project), ignore_errors=True)
        result.seconds = round(time.perf_counter() - started, 3)
        return result


def _done_steps(project: Path, state: RebaseState,
                sources: list[Source]) -> tuple[dict[str, str], list[Step]]:
    texts: dict[str, str] = {}
    steps: list[Step] = []
    staged = rebase_dir(project) / "staged"
    for entry in state.done:
        result = entry.result
        source = sources[result.index - 1]
        text = None
        # An unchanged patch parked by a stop is staged as its old bytes (at its own
        # strip level): keep the file. A resolved one is always patchctl's text, and
        # its header may have changed even where its diff did not.
        if entry.staged and result.change != DROPPED and \
                (result.change != patchtext.UNCHANGED or result.resolved):
            text = (staged / entry.staged).read_bytes().decode("utf-8", "surrogateescape")
            texts[source.name] = text
        steps.append(Step(source, result, text))
    return texts, steps


def _resolve(project: Path, state: RebaseState, sources: list[Source], done: list[Step],
             texts: dict[str, str], *, widen_scope: bool = False) -> Step:
    """The hand-resolved conflict as a patch, with the header the user left at the stop,
    committed in the work tree once it holds at the new pin (with the patches before
    it: applies, reverses, stays in its Scope). A resolution that reaches files outside
    its Scope is refused naming them; with ``widen_scope`` their exact paths are added to
    the header's ``Scope:`` (and so to the header file) and it is checked as any other.
    Scope follows a file upstream renamed by itself: a path git's rename detection says one
    of the patch's files became is added with no flag (``followed``)."""
    work = rebase_dir(project) / "work"
    git_dir = work / ".git"
    _drop_rejects(work, state)
    status = gitrepo.worktree_status(work)
    if status.unmerged:
        raise InputError(f"conflicts remain in {work}: {', '.join(status.unmerged)}; resolve "
                         "them, `git add` each file, then run `patchctl rebase-pin --continue`")
    loose = status.unstaged + status.untracked
    if loose:
        raise InputError(f"{work} has changes that are not staged: {', '.join(loose[:5])}; "
                         "`git add` them (or discard them) before --continue")
    assert state.conflict is not None
    result = dataclasses.replace(state.conflict, resolved=True)
    source = sources[result.index - 1]
    head, resolved = gitrepo.tree_of(git_dir, "HEAD"), gitrepo.index_tree(work)
    if head == resolved:
        result.change = DROPPED  # resolved to nothing: the change is upstream already
        return Step(source, result, None)
    diff = gitrepo.format_diff(git_dir, head, resolved)
    header = rebase_state.header_path(project)
    new = _with_header(header, source.patch, diff)
    outside = outside_scope(new)
    follows = _renamed_to(git_dir, state, source.patch) if outside else set()
    result.followed = [p for p in outside if p in follows]
    if set(outside) - follows and not widen_scope:
        outside = [p for p in outside if p not in follows]
        raise InputError(f"the resolution of {source.name} reaches files outside its Scope "
                         f"({' '.join(new.scope)}): {', '.join(outside)}; run `patchctl "
                         "rebase-pin --continue --widen-scope` to add them to its Scope: "
                         f"(or widen it in {header} by hand, or change the resolution in "
                         f"{work})")
    if outside:
        result.widened = [p for p in outside if p not in follows]
        new = _widened(header, source.patch, new, outside, diff)
    text = new.text
    result.change = patchtext.compare(source.patch, new)
    if result.change == patchtext.CONTENT:
        result.interdiff = patchtext.interdiff(source.patch, new, name=source.name)
    problems = rebase_review.recheck(Path(state.upstream), state.new,
                                     new_stack([*done, Step(source, result, text)], texts))
    if problems:
        raise InputError(f"the resolution does not hold at {state.new[:12]}: "
                         f"{'; '.join(problems)}; fix it in {work} (the patch's header, "
                         f"`Scope:` included, is {header}) and run --continue again")
    message = (new.subject or source.name) + (f"\n\n{new.body}" if new.body else "") + "\n"
    gitrepo.commit_index(work, message, author=new.author or source.patch.author)
    return Step(source, result, text)


def _renamed_to(repo: Path, state: RebaseState, patch: Patch) -> set[str]:
    """The paths upstream renamed ``patch``'s files to between the pins (git's rename
    detection); none when this clone cannot tell."""
    try:
        return set(gitrepo.renamed_paths(repo, state.old, state.new,
                                         sorted({f.path for f in patch.files})).values())
    except GitError:
        return set()


def _widened(path: Path, old: Patch, new: Patch, paths: list[str], diff: str) -> Patch:
    """``new`` with ``paths`` added to its ``Scope:``, written to the header file first (a
    killed --continue keeps it), then read back and checked as the user's edit is."""
    odd = [p for p in paths if not scope_literal(p)]
    if odd:
        raise InputError(f"{odd[0]} cannot be added to `Scope:` as it is (a blank, comma or "
                         f"glob character in it); edit `Scope:` in {path} and run "
                         "`patchctl rebase-pin --continue` again")
    header = patchtext.set_trailer(patchtext.header_text(new), "Scope",
                                   " ".join([*new.scope, *paths]), mail_form=new.mail_form)
    fsutil.atomic_write(path, header.encode("utf-8", "surrogateescape"))
    return _with_header(path, old, diff)


def _with_header(path: Path, old: Patch, diff: str) -> Patch:
    """The resolved patch: ``diff`` under the header the user left in ``path`` (the old
    header when the file is gone), checked as `patchctl header --set` checks a change: it
    must read back as itself and add no lint error."""
    before = patchtext.header_text(old)
    try:
        lines = path.read_bytes().decode("utf-8", "surrogateescape").split("\n")
    except FileNotFoundError:
        lines = before.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    header = "\n".join(lines) + "\n"
    again = f"fix {path} and run `patchctl rebase-pin --continue` again"

    def parse(head: str) -> Patch:
        text = patchtext.render(head, diff, mail_form=old.mail_form)
        return patchtext.reparse(text, name=old.name, path=old.path)

    try:
        new = parse(header)
    except StackError as e:
        raise InputError(f"{path}: {e}; {again}") from e
    if header == before:
        return new
    if patchtext.header_text(new) != header or new.mail_form != old.mail_form:
        raise InputError(f"{path} does not read back as the patch header it holds (a `---` "
                         f"line, a diff, or a header of another form in it?); {again}")
    errors = [f.message for f in added_findings(parse(before), new) if f.severity == ERROR]
    if errors:
        raise InputError(f"{path}: {errors[0]}; {again}")
    return new


def abort(project: Path, stack: Stack) -> RebaseResult:
    """Forget the rebase: ``stack/`` was never touched, so it is exactly the old stack."""
    with stackwrite.stack_lock(project, f"rebase-pin on {stack.root}"):
        rdir = rebase_dir(project)
        try:
            state = rebase_state.load(project) if rdir.is_dir() else None
        except InputError:
            state = None  # a damaged state is exactly what --abort is for
        if not rdir.is_dir():
            raise InputError(f"no rebase-pin in progress (nothing under {rdir})")
        shutil.rmtree(rdir)
        pin = stack.pin()
        return RebaseResult(stack=str(stack.root), old=pin.commit,
                            new=state.new if state else pin.commit,
                            new_ref=state.new_ref if state else "", mode="abort",
                            status="aborted", patches=[],
                            message=f"rebase abandoned; {stack.root} is as it was")
