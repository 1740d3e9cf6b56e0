"""rebase-pin: move the stack to a new upstream commit; say what broke, where, and why.

Everything here is index-only, as in verify/engine.py: NEW's tree is read into a
temporary index and each patch is tried in series order on top of the ones
before it. A patch is ``exact`` or ``offset`` (plain ``git apply``), ``3way``
(``git apply --3way`` merges it cleanly), ``conflict``, or ``upstream``: NEW's tree
already holds every change it makes, each at its place (it reverse-applies and applying
it again gives the same tree, so modes and binary files count; or applying it, plainly
or by a three-way merge, changes nothing). Only that proof in the tree makes a patch
``upstream``, and so droppable. A patch that names an upstream pull request or commit
merged between the pins (rebase/cited.py) is only a candidate: proven, it is
``upstream`` with that commit named (``how: reference``) when the commit's diff holds its
changed lines; not proven, it keeps its grade and is marked ``superseded?``, with the
interdiff, for a person to judge. ``--bisect`` then
finds, for each patch that no longer applies, the first commit on NEW's
first-parent line after the old pin where it stops applying, by binary
search: ceil(log2 n) checks plus one at each end.

Nothing in ``stack/`` changes until every patch has a new form: the new stack
is staged and swapped in at once (model/stackwrite.py). The command itself, and a
stop at a conflict with its resumable state, are rebase/session.py and
rebase/state.py; this module imports neither.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

from patchctl import gitrepo
from patchctl.errors import GitError, InputError
from patchctl.model import grades, patchtext, stackwrite
from patchctl.model.fingerprint import lock_state, make_lock
from patchctl.model.grades import APPLIES as APPLIES  # outreach reads it from here
from patchctl.model.grades import (
    CONFLICT,
    EXACT,
    MOVED,
    OFFSET,
    RESOLVED,
    THREE_WAY,
    UPSTREAM,
    WAITING,
)
from patchctl.model.lint import outside_scope, scope_literal
from patchctl.model.patchfile import Patch
from patchctl.model.stack import Pin, Stack, render_lock, rewrite_series
from patchctl.rebase import absorbed as rebase_absorbed
from patchctl.rebase import gone as rebase_gone
from patchctl.rebase import review as rebase_review
from patchctl.rebase.classify import classify as conflict_class
from patchctl.rebase.classify import search_lines
from patchctl.rebase.moved import follow, locate, search_keys, write_diff
from patchctl.rebase.resolve import resolve
from patchctl.rebase.results import Cited, Landing, PatchResult
from patchctl.rebase.waiting import waits_on

# No longer applies as it is: worth a bisect. A patch a rule re-placed (moved, union,
# anchored) is one too: its text changed because of one upstream commit, as a 3way one's.
BROKEN = {THREE_WAY, CONFLICT, WAITING, *RESOLVED}
DROPPED = "dropped"


Progress = Callable[[str], None]


@dataclass
class Source:
    """One patch of the old stack as the engine applies it."""

    index: int
    name: str
    strip: int
    path: Path
    patch: Patch


@dataclass
class Step:
    """What happened to one patch, and its new text (None: keep the file's bytes)."""

    source: Source
    result: PatchResult
    text: str | None = None


def sources_of(stack: Stack) -> list[Source]:
    # Absolute: git runs with -C <upstream> and would resolve a relative path there.
    return [Source(i, p.name, p.strip, p.path.absolute(), p)
            for i, p in enumerate(stack.patches(), 1)]


# -- classification -----------------------------------------------------------------------


def classify(index: gitrepo.TempIndex, sources: Sequence[Source], tree: str, *,
             progress: Progress | None = None, first: int | None = None,
             landable: frozenset[str] | None = None,
             cited: Mapping[int, Cited] | None = None, old: str | None = None,
             priors: Sequence[Source] = (), new_pin: str | None = None,
             strict: bool = False) -> list[Step]:
    """Each patch in order on ``tree`` plus the patches before it that applied.

    ``landable``: the paths upstream changed between the old and the new pin. A
    patch touching none of them cannot have landed upstream, however well it
    reverse-applies (it is then already in ``tree`` from our own side: a
    duplicate, or a commit of an interrupted --continue): it is a conflict.

    A patch is ``upstream`` only when ``tree`` (with the patches before it) already holds
    every change it makes, each at its place; it is then not applied, so the patches
    after it are graded without it. ``cited`` (rebase/cited.py), by series position, never
    decides that: a cited patch so proven is named by its reference (when that commit's
    diff holds its lines), any other cited patch keeps its grade and is ``superseded?``.

    With ``old`` (the old pin; ``priors``: the old stack before ``sources``), a conflict
    standing only on patches left out before it is ``waiting`` (rebase/waiting.py), and one
    whose file upstream renamed, or whose lines it moved, is re-targeted there, ``moved``
    (rebase/moved.py; its Scope follows the code: the new paths are added to it), naming
    the commit of ``old``..``new_pin`` (default: ``tree``) that moved them; else one whose
    conflict a rule proves is re-placed, ``union`` or ``anchored`` (rebase/resolve.py), or
    merged by C/C++ declaration, ``decl`` (rebase/declmerge.py). ``strict``: none of these
    is tried (what each tried is the result's ``tried``). A conflict left has its class
    (rebase/classify.py).
    """
    index.read_tree(tree)
    current = index.write_tree()
    after_conflict = False
    # where moved lines are looked for: the tree (each search of it is a git grep, kept),
    # and for a conflict's class the new pin, the same unless a --continue's tree holds
    # patches already resolved
    found_in = gitrepo.LineSearch(index.repo, tree)
    found_in_pin = gitrepo.LineSearch(index.repo, new_pin) if new_pin else found_in
    words: rebase_gone.Words = {}
    left_out: dict[int, str] = {}
    steps: list[Step] = []
    renames: dict[str, str] | None = None  # the stack's files upstream renamed, once needed

    def renamed() -> dict[str, str]:
        nonlocal renames
        if renames is None:
            renames = _renames(index.repo, old, new_pin or tree, [*priors, *sources]) \
                if old else {}
        return renames
    for s in sources:
        if progress:
            progress(f"[{s.index}/{first or len(sources)}] {s.name}")
        result = PatchResult(index=s.index, name=s.name, grade=CONFLICT,
                             after_conflict=after_conflict)
        step = Step(s, result)
        steps.append(step)
        found = (cited or {}).get(s.index)
        could_land = landable is None or any(
            p in landable for f in s.patch.files for p in f.paths)
        run = index.apply([s.path], strip=s.strip)
        after = current
        if run.ok:
            result.offsets = [h for _, h in run.offsets()]
            result.grade = grades.clean(result.offsets)
            after = index.write_tree()
            if after == current and could_land and s.patch.files:
                result.grade, result.offsets = UPSTREAM, []  # a mode already there
        elif index.holds(s.path, strip=s.strip, tree=current):
            if could_land:
                result.grade = UPSTREAM
        elif index.apply([s.path], strip=s.strip, three_way=True).ok:
            after = index.write_tree()
            if after != current:
                result.grade = THREE_WAY
            elif could_land:
                result.grade = UPSTREAM
            else:
                index.read_tree(current)
                after = current
        if result.grade == CONFLICT:
            result.conflicts = gitrepo.unmerged_paths(index) or [f.path for f in s.patch.files]
            index.read_tree(current)
            # Waiting first: a patch standing on a left-out conflict's lines is placed
            # once that is resolved, never re-placed by a rule on the tree without it.
            result.waits_on = waits_on(index.repo, index.env, old, current, [
                *priors, *(t.source for t in steps[:-1])], left_out, s.patch) if old else []
            if result.waits_on:
                result.grade, result.conflicts = WAITING, []
            elif old and not strict:
                if found_in is found_in_pin:  # what each strategy may look for, at once
                    found_in.files([*search_keys(s.patch), *search_lines(s.patch)])
                after = _resolve(index, step, found_in, current, f"{old}..{new_pin or tree}",
                                 renamed())
        if result.grade == CONFLICT:  # why, in a word (rebase/classify.py)
            result.class_ = conflict_class(index.repo, current, s.patch, env=index.env,
                                           search=found_in_pin,
                                           renames=renames).cls
        if result.grade in (CONFLICT, WAITING):
            after, after_conflict = current, True
            left_out[s.index] = s.name
        if found and result.grade == UPSTREAM and found.contained:
            result.landed = Landing(found.commit, "reference", reference=found.reference)
        elif found and result.grade != UPSTREAM:
            result.superseded = found.superseded()
        if result.grade == EXACT:
            result.change = patchtext.UNCHANGED
        elif result.grade in (OFFSET, THREE_WAY, *RESOLVED):
            step.text = step.text or regenerate(index, s.patch, current, after)
            new = patchtext.reparse(step.text, name=s.name, path=s.path)
            result.change = patchtext.compare(s.patch, new)
            # A merge that took part of its change as upstream's is never a plain grade.
            result.absorbed = rebase_absorbed.find(index.repo, index.env, current, s.patch, new)
        if old and result.grade in APPLIES:  # goes on, but may use what upstream removed
            result.gone = rebase_gone.find(index.repo, index.env, old, current, s.patch,
                                           renames=renamed,
                                           changed=landable, cache=words)
            if result.change == patchtext.CONTENT:
                result.interdiff = patchtext.interdiff(s.patch, new, name=s.name)
        current = after
    return steps


def _renames(repo: Path, old: str, new: str, sources: Sequence[Source]) -> dict[str, str]:
    """The files of ``sources`` that upstream renamed between ``old`` and ``new``, by git's
    rename detection: path -> new path (none when this clone cannot tell)."""
    try:
        return gitrepo.renamed_paths(repo, old, new, sorted(
            {f.path for s in sources for f in s.patch.files}))
    except GitError:
        return {}


def _resolve(index: gitrepo.TempIndex, step: Step, search: gitrepo.LineSearch, current: str,
             span: str, renames: Mapping[str, str]) -> str:
    """A conflicting patch re-placed by the first strategy that proves where each of its lost
    hunks goes: ``moved`` (rebase/moved.py: into the file upstream renamed it to, by
    ``renames``, and where its lines went), then ``union`` and ``anchored``
    (rebase/resolve.py), then ``decl`` (rebase/declmerge.py: merged by C/C++ declaration
    and statement); what each found or refused is in ``tried``, the conflict's class.
    Returns the tree after it; ``current`` when it stays a conflict (the index holds it)."""
    r, patch = step.result, step.source.patch
    located = locate(index.repo, index.env, current, patch, renames)
    if located is None or not (located.lost or located.followed):
        r.tried.append("nothing re-placed: " + (
            "it adds, deletes or renames a file, or changes a binary one" if located is None
            else "each hunk matches on its own; together they do not apply"))
        return current
    found = follow(index.repo, index.env, search, current, span, located)
    if found is not None and found.diff is not None:
        where = ", ".join(sorted({h.to for h in found.hunks}))
        adopted, r.moved_note = _adopt(index, step, current, found.diff,
                                       f"its lines moved ({where})",
                                       follows={h.to for h in found.hunks})
        if adopted:
            r.grade, r.moved = MOVED, found.hunks
            return adopted
    else:
        r.moved_note = found.refused if found else None
    r.tried.append(f"{MOVED}: {r.moved_note or 'its lost lines are nowhere else whole'}")
    from patchctl.rebase.declmerge import declared  # tree-sitter: only for a conflict

    for res in chain(resolve(located), declared(index.repo, index.env, current, patch, located)):
        if res.diff is None:
            r.tried.append(f"{res.grade}: {res.refused}")
            continue
        adopted, why = _adopt(index, step, current, res.diff, "re-placed",
                              follows=set(located.renamed))
        if adopted:
            r.grade, r.placed = res.grade, res.hunks
            return adopted
        r.tried.append(f"{res.grade}: {why}")
    return current


def _adopt(index: gitrepo.TempIndex, step: Step, current: str, diff: str, what: str, *,
           follows: set[str]) -> tuple[str | None, str | None]:
    """``diff``, a conflicting patch re-placed at ``current``, taken as its new text when it
    applies, reverses to ``current``, and stays in Scope. Scope follows the code: a path of
    ``follows`` (where a rule proved its lines went) is added to it, said in ``followed``;
    any other path outside it refuses the diff. Returns the tree after it, or None and why
    not (the index then holds ``current``)."""
    r, patch = step.result, step.source.patch
    path = write_diff(diff)
    try:
        placed = index.write_tree() if index.apply([path]).ok else None
        back = placed is not None and index.apply([path], reverse=True).ok and \
            index.write_tree() == current
    finally:
        path.unlink()
    index.read_tree(current)
    if placed is None or not back:
        return None, f"{what}, it does not apply and reverse there"
    diff, head = gitrepo.format_diff(index.repo, current, placed, env=index.env), \
        patchtext.header_text(patch)
    text = patchtext.render(head, diff, mail_form=patch.mail_form)
    outside = outside_scope(patchtext.reparse(text, name=patch.name, path=patch.path))
    if not set(outside) <= follows or not all(map(scope_literal, outside)):
        return None, (f"{what} but {', '.join(outside)} is outside its Scope "
                      f"({' '.join(patch.scope)}); resolve it by hand")
    if outside:
        head = patchtext.set_trailer(head, "Scope", " ".join([*patch.scope, *outside]),
                                     mail_form=patch.mail_form)
        text = patchtext.render(head, diff, mail_form=patch.mail_form)
    index.read_tree(placed)
    r.followed, r.conflicts, step.text = outside, [], text
    return placed, None


def upstream_paths(repo: Path, old: str, new: str) -> frozenset[str]:
    """The paths upstream changed between the two pins: where a patch can have landed."""
    return frozenset(gitrepo.changed_paths(repo, old, new))


def regenerate(index: gitrepo.TempIndex, patch: Patch, before: str, after: str) -> str:
    """The patch re-made from the trees around it, keeping its header and trailers."""
    diff = gitrepo.format_diff(index.repo, before, after, env=index.env)
    return patchtext.render(patchtext.header_text(patch), diff, mail_form=patch.mail_form)


# -- bisect and landing -------------------------------------------------------------------


def apply_priors(index: gitrepo.TempIndex, priors: Sequence[Source]) -> None:
    """The patches before the one under test, as well as they go on this commit:
    all in one call when they apply; else each plain, else three-way, else left out
    (it conflicts here, or is already upstream)."""
    index.apply_series([gitrepo.SeriesItem(p.path, p.strip, len(p.patch.files))
                        for p in priors], on_failure="three_way")


def seed(index: gitrepo.TempIndex, old: str, sources: Sequence[Source]) -> None:
    """Replay the old stack on the old pin once: ``apply --3way`` needs each patch's
    preimage blob, and for every patch but the first that blob exists only as the
    result of the patches before it."""
    index.read_tree(old)
    apply_priors(index, sources)


# -- naming and the final swap -----------------------------------------------------------


def resolve_new(upstream: Path, pin: Pin, new_ref: str, *,
                allow_downgrade: bool) -> tuple[str, str | None]:
    """NEW_REF's commit, and its name when it is a tag (recorded in the pin file)."""
    if gitrepo.resolve_commit(upstream, pin.commit) is None:
        raise InputError(f"the current pin {pin.commit} is not in upstream {upstream}; "
                         "pass --upstream with a clone that has it")
    ref = gitrepo.resolve_ref(upstream, new_ref, what="NEW_REF")
    new = ref.commit if ref else None
    tag = new_ref if ref and ref.kind == "tag" else None
    if new is None and (re.match(r"^[a-z][a-z0-9+.-]*://", pin.url) or "@" in pin.url):
        new = gitrepo.fetch_ref(upstream, new_ref)
    if new is None:
        raise InputError(f"{new_ref!r} is not a commit, tag or branch in upstream {upstream}")
    if new != pin.commit and gitrepo.is_ancestor(upstream, new, pin.commit) \
            and not allow_downgrade:
        raise InputError(f"{new_ref} ({new[:12]}) is older than the current pin "
                         f"{pin.commit[:12]} (an ancestor of it); pass --allow-downgrade "
                         "to move the pin back")
    return new, tag


def refuse_hand_edits(project: Path, stack: Stack) -> None:
    """A rewrite must start from a stack the user has saved: committed, and locked."""
    dirty = gitrepo.dirty_paths(project, stack.root)
    if dirty:
        more = f" and {len(dirty) - 3} more" if len(dirty) > 3 else ""
        raise InputError(f"{stack.root} has uncommitted changes ({', '.join(dirty[:3])}{more}); "
                         "commit or stash them first, so the rewrite cannot lose them")
    state, why = lock_state(stack, make_lock(stack.pin(), stack.patches()))
    if state != "current":
        raise InputError(f"{stack.lock_path} is not current ({why}); "
                         "review the stack and run `patchctl lock` first")


def finalize(stack: Stack, snap: dict[str, str], pin: Pin, steps: Sequence[Step],
             texts: dict[str, str] | None = None) -> str:
    """Write the rebased stack in one swap; returns the new fingerprint.

    ``texts`` overrides a step's text (patches resolved by hand during --continue).
    """
    changes: dict[str, bytes | None] = {}
    dropped = {s.source.name for s in steps if s.result.change == DROPPED}
    restrip: set[str] = set()
    for name in dropped:
        changes[f"patches/{name}"] = None
    kept = [patch for patch, _ in new_stack(steps, texts)]
    for step in steps:
        s = step.source
        text = (texts or {}).get(s.name, step.text)
        if text is None or s.name in dropped:
            continue
        changes[f"patches/{s.name}"] = text.encode("utf-8", "surrogateescape")
        if s.strip != 1:
            restrip.add(s.name)
    series = stack.series_path.read_text(encoding="utf-8")
    changes["series"] = rewrite_series(series, dropped=dropped, restrip=restrip).encode()
    changes["upstream.toml"] = pin.to_toml().encode()
    lock = make_lock(pin, kept)
    changes["stack.lock"] = render_lock(lock).encode()
    stackwrite.replace_stack(stack, changes, expect=snap)
    return lock.fingerprint


def new_stack(steps: Sequence[Step], texts: dict[str, str] | None = None
              ) -> list[tuple[Patch, str]]:
    """The rebased stack in series order: each kept patch, parsed, with its text."""
    out: list[tuple[Patch, str]] = []
    for step in steps:
        s = step.source
        text = (texts or {}).get(s.name, step.text)
        if step.result.change == DROPPED:
            continue
        if text is None:
            out.append((s.patch, s.patch.text))
        else:
            out.append((patchtext.reparse(text, name=s.name, path=s.path), text))
    return out


def review_range_diff(upstream: Path, old: str, new: str, steps: Sequence[Step],
                      texts: dict[str, str] | None = None) -> str | None:
    """The range-diff of the stack before and after, a patch placed by a rule (moved, union,
    anchored) marked with its grade, one whose change upstream made in part with what
    (rebase/absorbed.py); None when git cannot make one."""
    before = [(s.source.patch, s.source.patch.text) for s in steps]
    placed = {s.source.name: s.result.grade for s in steps if s.result.grade in RESOLVED}
    for s in steps:
        if s.result.doubts:
            placed[s.source.name] = f"{s.result.grade}; {s.result.doubts}"
    try:
        return rebase_review.range_diff(upstream, (old, before), (new, new_stack(steps, texts)),
                                        placed)
    except GitError:
        return None
