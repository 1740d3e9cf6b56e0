"""A rebase-pin stopped at a conflict: its state, its work tree, --continue and --abort.

Everything lives under ``<project>/.patchctl/rebase/`` and nothing under
``stack/`` changes until the rebase completes:

- ``work/``: a git work tree at the new pin, with the patches already rebased
  as commits and the conflicting patch applied with conflict markers;
- ``staged/``: the new text of each patch already rebased;
- ``state.json``: written last and atomically, so without it no rebase is in
  progress (a stop killed half-way is simply started again).
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict
from pathlib import Path

from patchctl import fsutil, gitrepo, patchtext, rebase_review, stackwrite
from patchctl.errors import InputError
from patchctl.rebase import (
    CONFLICT,
    DROPPED,
    UPSTREAM,
    PatchResult,
    Progress,
    RebaseResult,
    Searcher,
    Source,
    Step,
    classify,
    finalize,
    name_and_bisect,
    new_stack,
    review_range_diff,
    sources_of,
)
from patchctl.stack import Pin, Stack

STATE_SCHEMA = "patchctl.rebase-state/1"


def rebase_dir(project: Path, *, create: bool = False) -> Path:
    return stackwrite.state_dir(project, create=create) / "rebase"


def _load(project: Path) -> dict | None:
    path = rebase_dir(project) / "state.json"
    if not path.is_file():
        return None
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: unreadable rebase state ({e}); run "
                         "`patchctl rebase-pin --abort` and start again") from e
    if not isinstance(state, dict) or state.get("schema") != STATE_SCHEMA:
        raise InputError(f"{path}: not a patchctl rebase state this version understands; "
                         "run `patchctl rebase-pin --abort` and start again")
    return state


def _save(project: Path, state: dict) -> None:
    fsutil.atomic_write(rebase_dir(project) / "state.json",
                        json.dumps(state, indent=2, sort_keys=True) + "\n")


def refuse_if_in_progress(project: Path) -> None:
    state = _load(project)
    if state is not None:
        raise InputError(f"a rebase-pin to {state['new'][:12]} is in progress "
                         f"({rebase_dir(project)}); finish it with `patchctl rebase-pin "
                         "--continue` or undo it with `patchctl rebase-pin --abort`")


def _commit(work: Path, staged: Path, source: Source, strip: int) -> None:
    p = source.patch
    gitrepo.commit_patch(work, staged, strip=strip, subject=p.subject or source.name,
                         body=p.body, author=p.author)


def _park(project: Path, state: dict, work: Path, done: list[Step], conflict: Step) -> None:
    """Commit ``done`` in the work tree, apply ``conflict`` with markers, save the state."""
    staged = rebase_dir(project) / "staged"
    staged.mkdir(parents=True, exist_ok=True)
    for step in done:
        entry = {"result": asdict(step.result), "staged": None, "strip": step.source.strip}
        if step.result.change != DROPPED:
            text = step.text if step.text is not None else step.source.path.read_bytes().decode(
                "utf-8", "surrogateescape")
            entry["strip"] = 1 if step.text is not None else step.source.strip
            (staged / step.source.name).write_bytes(text.encode("utf-8", "surrogateescape"))
            entry["staged"] = step.source.name
            _commit(work, staged / step.source.name, step.source, entry["strip"])
        state["done"].append(entry)
    gitrepo.apply_with_markers(work, conflict.source.path, strip=conflict.source.strip)
    state["conflict"] = asdict(conflict.result)
    _save(project, state)


def _stop_message(work: Path, step: Step) -> str:
    files = ", ".join(step.result.conflicts) or "see the .rej files"
    return (f"{step.source.name} conflicts at the new pin ({files}). Resolve it in {work} "
            "(edit the files, `git add` them), then run `patchctl rebase-pin --continue`; "
            "or `patchctl rebase-pin --abort` to leave the stack as it was")


def stop(project: Path, stack: Stack, upstream: Path, result: RebaseResult, steps: list[Step],
         snap: dict[str, str], *, tag: str | None, drop_upstream: bool) -> None:
    """Leave a resumable state at the first conflict; ``stack/`` is not touched."""
    k = next(i for i, s in enumerate(steps) if s.result.grade == CONFLICT)
    rdir = rebase_dir(project, create=True)
    shutil.rmtree(rdir, ignore_errors=True)  # what a stop killed half-way left
    rdir.mkdir(parents=True)
    touched = [path for s in steps for f in s.source.patch.files for path in f.paths]
    work = gitrepo.scratch_checkout(upstream, rdir / "work", result.new, needed=touched)
    # `apply --3way` there needs each old patch's preimage blob in the work repo.
    gitrepo.seed_blobs(work, result.old, [(s.source.path, s.source.strip) for s in steps])
    state = {"schema": STATE_SCHEMA, "stack": str(stack.root), "upstream": str(upstream),
             "old": result.old, "new": result.new, "new_ref": result.new_ref, "tag": tag,
             "drop_upstream": drop_upstream, "commits": result.commits,
             "bisect_checks": result.bisect_checks, "snapshot": snap, "done": [],
             "conflict": None}
    _park(project, state, work, steps[:k], steps[k])
    result.status, result.work, result.conflict = "stopped", str(work), steps[k].source.name
    result.message = _stop_message(work, steps[k])


def continue_rebase(project: Path, stack: Stack, *, drop_upstream: bool = False,
                    progress: Progress | None = None) -> RebaseResult:
    started = time.perf_counter()
    with stackwrite.stack_lock(project, f"rebase-pin on {stack.root}"):
        state = _load(project)
        if state is None:
            raise InputError(f"no rebase-pin in progress (no state under {rebase_dir(project)}); "
                             "start one with `patchctl rebase-pin NEW_REF`")
        if stackwrite.snapshot(stack.root) != state["snapshot"]:
            raise InputError(f"{stack.root} changed since the rebase started; run "
                             "`patchctl rebase-pin --abort`, commit your edits, and start again")
        work = rebase_dir(project) / "work"
        if not (work / ".git").is_dir():
            raise InputError(f"the rebase state is damaged ({work} is missing); run "
                             "`patchctl rebase-pin --abort` and start again")
        git_dir = work / ".git"
        state["drop_upstream"] = state["drop_upstream"] or drop_upstream
        sources = sources_of(stack)
        texts, done = _done_steps(project, state, sources)
        if state["conflict"] is not None:
            step = _resolve(work, git_dir, state, sources, done, texts)
            if step.text is not None:
                texts[step.source.name] = step.text
                (rebase_dir(project) / "staged" / step.source.name).write_bytes(
                    step.text.encode("utf-8", "surrogateescape"))
            state["done"].append({"result": asdict(step.result), "strip": 1,
                                  "staged": step.source.name if step.text else None})
            state["conflict"] = None
            done.append(step)
            _save(project, state)  # the resolution is committed: never ask for it again

        rest = sources[len(done):]
        with gitrepo.temp_index(git_dir) as index:
            steps = classify(index, rest, gitrepo.tree_of(git_dir, "HEAD"), progress=progress,
                             first=len(sources))
            searcher = Searcher(index, git_dir, state["old"], state["new"], sources, progress) \
                if gitrepo.is_ancestor(git_dir, state["old"], state["new"]) else None
            name_and_bisect(steps, searcher, bisect=False)
        result = RebaseResult(stack=str(stack.root), old=state["old"], new=state["new"],
                              new_ref=state["new_ref"], mode="continue", status="rebased",
                              patches=[s.result for s in done + steps], commits=state["commits"],
                              bisect_checks=state["bisect_checks"])
        grades = {s.result.grade for s in steps}
        if UPSTREAM in grades and not state["drop_upstream"]:
            result.status = "needs-drop"
            result.message = ("patches already upstream: run `patchctl rebase-pin --continue "
                              "--drop-upstream` to drop them")
        elif CONFLICT in grades:
            k = next(i for i, s in enumerate(steps) if s.result.grade == CONFLICT)
            result.causes = rebase_review.explain(Path(state["upstream"]), state["old"],
                                                  state["new"], steps[k].source.patch,
                                                  steps[k].result.conflicts)
            _park(project, state, work, steps[:k], steps[k])
            result.status, result.work, result.conflict = "stopped", str(work), steps[k].source.name
            result.message = _stop_message(work, steps[k])
        else:
            pin = Pin(name=stack.pin().name, url=stack.pin().url, commit=state["new"],
                      tag=state["tag"])
            problems = rebase_review.recheck(Path(state["upstream"]), state["new"],
                                             new_stack(done + steps, texts))
            if problems:  # a guard: each resolution was checked when it was committed
                raise InputError(f"the rebased stack does not hold at {state['new'][:12]}: "
                                 f"{'; '.join(problems)}; nothing was written; run "
                                 "`patchctl rebase-pin --abort` and report this")
            result.range_diff = review_range_diff(Path(state["upstream"]), state["old"],
                                                  state["new"], done + steps, texts)
            result.fingerprint = finalize(stack, state["snapshot"], pin, done + steps, texts)
            shutil.rmtree(rebase_dir(project), ignore_errors=True)
        result.seconds = round(time.perf_counter() - started, 3)
        return result


def _done_steps(project: Path, state: dict, sources: list[Source]) -> tuple[dict, list[Step]]:
    texts: dict[str, str] = {}
    steps: list[Step] = []
    staged = rebase_dir(project) / "staged"
    for entry in state["done"]:
        result = PatchResult.from_dict(entry["result"])
        source = sources[result.index - 1]
        text = None
        if entry["staged"] and result.change not in (patchtext.UNCHANGED, DROPPED):
            text = (staged / entry["staged"]).read_bytes().decode("utf-8", "surrogateescape")
            texts[source.name] = text
        steps.append(Step(source, result, text))
    return texts, steps


def _resolve(work: Path, git_dir: Path, state: dict, sources: list[Source], done: list[Step],
             texts: dict[str, str]) -> Step:
    """The hand-resolved conflict as a patch, committed in the work tree once it holds at
    the new pin (with the patches before it: applies, reverses, stays in its Scope)."""
    status = gitrepo.worktree_status(work)
    if status.unmerged:
        raise InputError(f"conflicts remain in {work}: {', '.join(status.unmerged)}; resolve "
                         "them, `git add` each file, then run `patchctl rebase-pin --continue`")
    loose = status.unstaged + status.untracked
    if loose:
        raise InputError(f"{work} has changes that are not staged: {', '.join(loose[:5])}; "
                         "`git add` them (or discard them) before --continue")
    result = PatchResult.from_dict(state["conflict"])
    result.resolved = True
    source = sources[result.index - 1]
    head, resolved = gitrepo.tree_of(git_dir, "HEAD"), gitrepo.index_tree(work)
    if head == resolved:
        result.change = DROPPED  # resolved to nothing: the change is upstream already
        return Step(source, result, None)
    diff = gitrepo.format_diff(git_dir, head, resolved)
    text = patchtext.render(patchtext.header_text(source.patch), diff,
                            mail_form=source.patch.mail_form)
    new = patchtext.reparse(text, name=source.name, path=source.path)
    result.change = patchtext.compare(source.patch, new)
    if result.change == patchtext.CONTENT:
        result.interdiff = patchtext.interdiff(source.patch, new, name=source.name)
    problems = rebase_review.recheck(Path(state["upstream"]), state["new"],
                                     new_stack([*done, Step(source, result, text)], texts))
    if problems:
        raise InputError(f"the resolution does not hold at {state['new'][:12]}: "
                         f"{'; '.join(problems)}; fix it in {work} and run --continue again")
    p = source.patch
    message = (p.subject or source.name) + (f"\n\n{p.body}" if p.body else "") + "\n"
    gitrepo.commit_index(work, message, author=p.author)
    return Step(source, result, text)


def abort(project: Path, stack: Stack) -> RebaseResult:
    """Forget the rebase: ``stack/`` was never touched, so it is exactly the old stack."""
    with stackwrite.stack_lock(project, f"rebase-pin on {stack.root}"):
        rdir = rebase_dir(project)
        try:
            state = _load(project) if rdir.is_dir() else None
        except InputError:
            state = None  # a damaged state is exactly what --abort is for
        if not rdir.is_dir():
            raise InputError(f"no rebase-pin in progress (nothing under {rdir})")
        shutil.rmtree(rdir)
        pin = stack.pin()
        return RebaseResult(stack=str(stack.root), old=pin.commit,
                            new=state["new"] if state else pin.commit,
                            new_ref=state["new_ref"] if state else "", mode="abort",
                            status="aborted", patches=[],
                            message=f"rebase abandoned; {stack.root} is as it was")
