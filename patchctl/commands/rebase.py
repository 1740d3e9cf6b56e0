from __future__ import annotations

from typing import TYPE_CHECKING

import click

from patchctl.commands._common import (
    complete_ref,
    emit_json,
    end_progress,
    exit_for,
    json_option,
    progress,
    project_dir,
    quiet_option,
    resolve_upstream,
    stack_of,
    upstream_option,
)
from patchctl.errors import InputError
from patchctl.model.grades import CONFLICT
from patchctl.textout import count, table

if TYPE_CHECKING:  # imported lazily at run time, like every heavy module
    from patchctl.rebase.results import PatchResult, RebaseResult


@click.command("rebase-pin")
@click.argument("new_ref", required=False, metavar="[NEW_REF]", shell_complete=complete_ref)
@upstream_option
@click.option("--bisect", is_flag=True,
              help="For each patch that no longer applies, find the first upstream commit "
              "(first-parent, old pin..NEW_REF) where it stops applying.")
@click.option("--check", is_flag=True, help="Only classify and report; write nothing.")
@click.option("--continue", "cont", is_flag=True,
              help="Resume after resolving and staging a conflict in the rebase work tree "
              "(and, if the resolution changes them, editing the patch's header in "
              ".patchctl/rebase/header).")
@click.option("--widen-scope", is_flag=True,
              help="With --continue: when the resolution reaches files outside the patch's "
              "Scope:, add their exact paths to it; without it, --continue refuses and "
              "names them. (A patch followed where upstream renamed its file or moved its "
              "lines, and a resolution in a file upstream renamed, take the new path into "
              "Scope: by themselves.)")
@click.option("--strict", is_flag=True,
              help="Only a line merge: grade exact, offset, 3way, upstream, waiting or "
              "conflict, and try no strategy beyond it (moved, union, anchored, decl); kept by "
              "--continue.")
@click.option("--abort", is_flag=True, help="Abandon a stopped rebase; the stack stays as it was.")
@click.option("--allow-downgrade", is_flag=True, help="Allow NEW_REF older than the current pin.")
@click.option("--drop-upstream", is_flag=True,
              help="Drop patches that have landed upstream (otherwise they stop the rebase).")
@json_option
@quiet_option
@click.pass_context
def rebase_pin(ctx: click.Context, new_ref: str | None, upstream: str | None, bisect: bool,
               check: bool, cont: bool, widen_scope: bool, strict: bool, abort: bool,
               allow_downgrade: bool, drop_upstream: bool, as_json: bool) -> int:
    """Move the stack to NEW_REF (commit, tag or branch) of the upstream.

    Each patch is classified on NEW_REF with the patches before it applied:
    exact, offset, 3way, moved (upstream renamed its file, by git's rename
    detection, or moved its lines to exactly one place, found by an exact
    search of the tree: re-targeted there, its Scope: following, naming the
    commit that moved them), union (it and upstream both inserted lines at one
    place, and only there: both kept, upstream's first), anchored (its
    context changed, but the lines it removes stand exactly once in the
    file: re-anchored there), decl (in C or C++ code it and upstream
    changed different declarations or statements of one region: merged
    item by item as tree-sitter parses them), conflict, waiting (it conflicts only because an
    earlier conflict whose lines it stands on is left out; --check's "to
    resolve" counts conflicts only) or upstream (already there: the commit that
    landed it is named, found by patch-id, reverse-apply, or the upstream PR or
    commit the patch names). Only NEW_REF's tree proves a patch upstream: it
    holds every change the patch makes, at its place. A patch that names a
    change merged upstream without that proof is marked superseded?, with its
    interdiff, and kept. A patch a merge left without part of its change,
    because upstream made the same edit, is marked upstream in part (file,
    hunks, lines: the same text may mean another thing, a count bumped on
    both sides); one whose added lines use a name gone from NEW_REF's tree is
    marked uses names gone?. Either is a doubted move: every check passes, but
    only a person can tell whether it still does what it did, so it stops
    there as a conflict does, applied and staged in the work tree as moved, and
    --continue takes it as it stands (--check counts it to resolve). When
    every patch applies, the patches are refreshed and the pin and lock
    rewritten in one atomic swap; on a conflict a work
    tree is left under .patchctl/rebase/ to resolve, then --continue (where
    not even a three-way merge puts the patch on, its failed hunks are in
    .rej files there, named at the stop: --continue removes them when they
    are as the stop wrote them, and refuses one you changed); the
    patch's header is in .patchctl/rebase/header, and what is there at
    --continue (Subject, body, trailers such as Scope:) is the rebased patch's.
    A resolution that reaches files outside Scope: is refused with their
    names; --continue --widen-scope adds those exact paths to Scope: and
    re-checks the stack at the new pin (applies, reverses) as always.
    moved, union, anchored and decl are each proven by its own rule, refused where
    it is ambiguous, checked as every grade is (applies and reverses at fuzz
    0 at NEW_REF, stays in Scope:) and shown with its grade in the report and
    the range-diff; a conflict says its class (why: same lines changed,
    context drift...) and what each tried. --strict tries none.
    Exit 0 when rebased (or --check finds all applying), 1 when stopped.
    """
    from patchctl.rebase import session as rebasing

    modes = [m for m, on in (("--continue", cont), ("--abort", abort), ("--check", check)) if on]
    if len(modes) > 1:
        raise InputError(f"{' and '.join(modes)} cannot be combined")
    if (cont or abort) and new_ref:
        raise InputError(f"{modes[0]} takes no NEW_REF: the rebase in progress has one")
    if strict and abort:
        raise InputError("--strict does not go with --abort: it limits how patches are graded")
    if widen_scope and not cont:
        raise InputError("--widen-scope goes with --continue only: it widens the Scope: of a "
                         "resolution (a moved patch's Scope: follows its code by itself)")
    if not (cont or abort) and not new_ref:
        raise InputError("missing NEW_REF: the upstream commit, tag or branch to move to")
    project = project_dir(ctx)
    stack = stack_of(ctx)
    if abort:
        result = rebasing.abort(project, stack)
    elif cont:
        result = rebasing.continue_rebase(project, stack, drop_upstream=drop_upstream,
                                          widen_scope=widen_scope, strict=strict,
                                          progress=progress)
    else:
        assert new_ref is not None
        repo = resolve_upstream(upstream, stack.pin(), stack)
        result = rebasing.rebase_pin(project, stack, repo, new_ref, check=check, bisect=bisect,
                                   allow_downgrade=allow_downgrade,
                                   drop_upstream=drop_upstream, strict=strict,
                                   progress=progress)
    end_progress()
    if as_json:
        emit_json(result.to_dict())
    else:
        click.echo(render(result), nl=False)
    return exit_for(result.ok)


_VERDICT = {
    "unchanged": "unchanged",
    "context-only": "context-only refresh",
    "content-changed": "content changed",
    "dropped": "dropped",
}


def _verdict(result: RebaseResult, p: PatchResult) -> str:
    said = [] if p.resolved else [word for word, on in (
        ("superseded?", p.superseded), ("upstream in part", p.absorbed),
        ("uses names gone?", p.gone)) if on]
    return "; ".join([*said, _plain_verdict(result, p)])


def _plain_verdict(result: RebaseResult, p: PatchResult) -> str:
    verdict = _VERDICT.get(p.change or "", "")
    if p.resolved:
        return f"resolved by hand, {verdict}"
    if p.waits_on and result.status != "stopped":
        return f"waits on {p.waits_on[0][:4]}" + (" ..." if len(p.waits_on) > 1 else "")
    if result.status in ("checked", "needs-drop"):
        return "would drop" if p.change == "dropped" else (f"would be {verdict}" if verdict
                                                           else "")
    if result.status == "stopped":
        at = next(q.index for q in result.patches if q.name == result.conflict)
        if p.index == at:
            return "stopped here: " + ("judge it" if p.doubted else "resolve it")
        if p.index > at:
            return "pending"
    return verdict


def render(result: RebaseResult) -> str:
    from patchctl.model.fingerprint import short
    from patchctl.rebase.absorbed import describe
    from patchctl.rebase.classify import says
    from patchctl.rebase.gone import describe as gone_says

    if result.status == "aborted":
        return result.message + "\n"
    span = "the pin itself: nothing to move" if result.old == result.new else \
        count(result.commits, "first-parent commit") if result.commits is not None else \
        "not a descendant of the pin" + (f"; --bisect searches from their merge-base "
                                         f"{result.base[:12]}" if result.base else "")
    out = [f"rebase-pin {result.old[:12]} -> {result.new[:12]} ({result.new_ref}; {span})"]
    grid = table([[str(p.index), p.name, p.grade, _verdict(result, p)] for p in result.patches],
                 ["#", "patch", "grade", "verdict"])
    if result.patches:
        out.append(grid[0])
    for p, line in zip(result.patches, grid[1:], strict=True):
        out.append(line)
        if p.offsets:
            out.append("       offsets: " + ", ".join(f"{o.file} hunk #{o.hunk} {o.offset:+d}"
                                                      for o in p.offsets))
        if p.conflicts:
            out.append("       conflicts in: " + ", ".join(p.conflicts))
        if p.class_ and p.grade == CONFLICT:
            out.append(f"       why: {says(p.class_)}")
        for m in p.moved:
            by = f", by {m.commit[:12]} {m.subject!r}" if m.commit else ""
            out.append(f"       moved: {m.file} hunk #{m.hunk} -> {m.to}:{m.line}{by}")
        out += [f"       {p.grade}: {h.file} hunk #{h.hunk} -> line {h.line}, {h.note}"
                for h in p.placed]
        for a in p.absorbed:
            out.append(f"       upstream in part: {describe(a)}:")
            out += [f"         {ln}" for ln in a.lines]
        out += [f"       names gone upstream: {gone_says(g)}" for g in p.gone]
        if p.tried and p.grade == CONFLICT:
            out.append("       tried: " + "; ".join(p.tried))
        elif p.moved_note:
            out.append(f"       not followed as moved: {p.moved_note}")
        if p.widened:
            out.append(f"       Scope: widened with {', '.join(p.widened)} (--widen-scope)")
        if p.followed:
            out.append(f"       Scope: followed the code to {', '.join(p.followed)}")
        if p.waits_on:
            them = "that patch's" if len(p.waits_on) == 1 else "those patches'"
            out.append(f"       waits on {', '.join(p.waits_on)}: its lines stand on {them}, "
                       "left out here; no conflict of its own (graded again once they are "
                       "resolved)")
        elif p.after_conflict:
            out.append("       (checked with the conflicting patch before it left out)")
        if p.landed:
            c = p.landed.commit
            where = f"{c.id[:12]} {c.subject!r}" if c else "an upstream commit not found"
            checks = f", {count(p.landed.checks, 'check')}" if p.landed.checks else ""
            cites = f" {p.landed.reference}" if p.landed.reference else ""
            how = f" ({p.landed.how}{cites}{checks})"
            what = "dropped" if result.status == "rebased" else "propose dropping it"
            out.append(f"       already upstream: landed in {where}{how}; {what}")
        if p.superseded:
            s = p.superseded
            out.append(f"       superseded?: it names {s.reference}, merged upstream in "
                       f"{s.commit.id[:12]} {s.commit.subject!r}, but the new pin does not "
                       "hold all it changes, each at its place; kept (never dropped): judge "
                       "it by the interdiff (the patch -> the commit):")
            out += [f"         {ln}" for ln in s.interdiff.rstrip("\n").splitlines()]
        if p.bisect:
            b = p.bisect
            if b.commit:
                out.append(f"       first broken by {b.commit.id[:12]} {b.commit.subject!r} "
                           f"({count(b.checks, 'check')} for {count(b.commits, 'commit')}; "
                           f"bound {b.bound})")
            else:
                out.append(f"       bisect: {b.note} ({count(b.checks, 'check')})")
        out += _causes(result, p.name)
        if p.interdiff:
            out.append("       interdiff:")
            out += [f"         {ln}" for ln in p.interdiff.rstrip("\n").splitlines()]
    if result.bisect_checks:
        out.append(f"bisect: {count(result.bisect_checks, 'index-only check')} in all")
    if result.to_resolve or result.waiting:
        out.append(f"to resolve: {count(result.to_resolve - result.doubts, 'conflict')}"
                   + (f" and {count(result.doubts, 'doubted move')}" if result.doubts else "")
                   + (f"; {count(result.waiting, 'patch', 'patches')} waiting on them"
                      if result.waiting else ""))
    tail = {
        "checked": "check only: nothing written",
        "up-to-date": "the stack is already at this commit; nothing written",
        "rebased": f"rebased: stack/ now pins {result.new[:12]}"
                   + (f" (fingerprint {short(result.fingerprint)})" if result.fingerprint else ""),
    }.get(result.status, "")
    if result.status == "stopped" and result.work:
        doubted = any(p.doubted for p in result.patches if p.name == result.conflict)
        out += [
            "next:",
            f"  cd {result.work}   # " + ("`git diff --cached` is the patch as it moved; "
                                         "change what it needs, `git add` it" if doubted else
                                         "`git status` lists the conflicts; resolve each "
                                         "file, `git add` it"),
            *([f"  less {' '.join(result.rejects)}   # the hunks that did not go on; "
               "leave these files as they are: --continue removes them"]
              if result.rejects else []),
            *([f"  $EDITOR {result.header}   # optional: the patch's Subject, body and "
               "trailers (Scope: too), if the resolution changes them"] if result.header else []),
            "  patchctl rebase-pin --continue   # re-checks the resolved stack at the new pin, "
            "then writes it (add --widen-scope if the resolution reaches files outside Scope:)",
            "  patchctl rebase-pin --abort      # or give up: stack/ stays as it was",
        ]
    elif result.message and result.status not in ("up-to-date",):
        out.append(result.message)
    if result.range_diff:
        out.append("range-diff of the stack (old pin .. new pin):")
        out += [f"  {ln}".rstrip() for ln in result.range_diff.rstrip("\n").splitlines()]
    if tail:
        out.append(tail)
    return "\n".join(out) + "\n"


def _causes(result: RebaseResult, name: str) -> list[str]:
    """Per conflicting file, the upstream commits that changed the lines the patch touches."""
    from patchctl.rebase.review import MAX_CAUSES

    out: list[str] = []
    for c in (c for c in result.causes if c.patch == name):
        if not c.commits:
            out.append(f"       {c.file}: {c.note}")
            continue
        out.append(f"       {c.file}: its lines were changed upstream by "
                   f"{count(len(c.commits), 'commit')}:")
        out += [f"         {k.id[:12]} {k.subject}" for k in c.commits[:MAX_CAUSES]]
        if len(c.commits) > MAX_CAUSES:
            out.append(f"         ... and {len(c.commits) - MAX_CAUSES} more (--json lists all)")
    return out
