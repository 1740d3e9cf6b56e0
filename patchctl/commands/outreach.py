from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

import click

from patchctl.burden import MAX_DAYS
from patchctl.commands._common import (
    complete_patch,
    complete_ref,
    emit_json,
    end_progress,
    exit_for,
    json_option,
    progress,
    project_dir,
    quiet_option,
    resolve_upstream,
    shown_path,
    stack_of,
    upstream_at_hand,
    upstream_option,
)

if TYPE_CHECKING:  # imported lazily at run time
    pass

NEVER_POSTS = ("patchctl never posts, comments or pushes anything upstream: it writes files "
               "for a person to read.")


@click.command(epilog=NEVER_POSTS)
@click.argument("patches", nargs=-1, metavar="[PATCH]...", shell_complete=complete_patch)
@click.option("--series", is_flag=True,
              help="Brief every patch and the series as a whole (the default without PATCH).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Write per patch a brief and its details (NNNN-name.md, NNNN-name.details.md), "
              "series.md and MANIFEST.json to DIR "
              "(replacing the briefs there at once). Default: print to stdout.")
@click.option("--onto", metavar="REF", shell_complete=complete_ref,
              help="Also port each patch to upstream REF (index-only, 3-way), grade it "
              "exact/offset/3way/conflict and, with --out, write the ported plain diff.")
@click.option("--check", "check_only", is_flag=True,
              help="With --out: do not render; exit 1 if the briefs in DIR are stale "
              "(their stack, evidence, templates or code changed). Needs no upstream.")
@click.option("--handoff", type=click.Path(dir_okay=False, path_type=Path),
              help="With --out: also write a handoff README (per concern: patch, tests, "
              "evidence commands and results, changed files, limitations, worker handoff).")
@upstream_option
@json_option
@quiet_option
@click.pass_context
def draft_outreach(ctx: click.Context, patches: tuple[str, ...], series: bool, out: Path | None,
                   onto: str | None, check_only: bool, handoff: Path | None,
                   upstream: str | None, as_json: bool) -> int:
    """Write a submission brief for the person who proposes each patch upstream.

    PATCH is a file name, its number, @N, a unique part of a name or a concern. The brief
    holds facts with their sources, never text to paste: the upstream's own
    rules read at the pin (each quoted with file and line), what the patch
    changes and adds to the public API, why (stack/outreach/CONCERN.toml), how
    it was tested (evidence/), prior art, a per-hunk understanding guide with
    likely reviewer questions, AI-assistance facts from `Assisted-by:`
    trailers and the project's git history of each patch file, policy lint and
    suggested reviewers. Output is deterministic. It warns while the patches
    carry a commit message, stack trailers or a placeholder author: submit the
    plain diffs of `patchctl export --format upstream DIR` instead.
    """
    from patchctl.outreach import output

    stack = stack_of(ctx)
    project = project_dir(ctx)
    if handoff and out is None:
        raise click.UsageError("--handoff needs --out DIR")
    if check_only:
        if out is None:
            raise click.UsageError("--check needs --out DIR")
        result = output.check(project, stack, out)
        if as_json:
            emit_json(result.to_dict())
        elif result.ok:
            click.echo(f"{out}: up to date")
        else:
            click.echo(f"{out}: stale")
            for reason in result.stale:
                click.echo(f"  {reason}")
            if result.command:
                click.echo(f"regenerate with: {result.command}")
        return exit_for(result.ok)

    from patchctl.outreach import brief as briefs
    from patchctl.outreach import render
    from patchctl.outreach.policy import decode

    if out is not None:  # refused before the upstream is read (and again while writing)
        output.targets(project, stack, out, handoff)
    repo = resolve_upstream(upstream, stack.pin(), stack)
    b = briefs.draft(project, stack, repo, patches, progress=progress)
    diffs: dict[str, str] = {}
    if onto:
        from patchctl.outreach.port import port

        diffs = port(stack, repo, b, onto, progress=progress)
    end_progress()
    from patchctl.outreach.disclosure import warnings

    for line in warnings([p.disclosure for p in b.patches if p.disclosure]):
        click.echo(line, err=True)
    whole = series or not patches
    if as_json and out is None:
        emit_json(b.to_dict())
        return 0
    files: dict[str, str] = {}
    if whole:
        files["series.md"] = render.render_series(b)
    for p in b.patches:
        files[render.brief_name(p.file)] = render.render_patch(b, p, series=whole)
        files[render.details_name(p.file)] = render.render_details(b, p)
    # a brief is valid UTF-8 on stdout and on disk: text from git's output that is not
    # (a subject, an author) is decoded the way the upstream's policy files are
    files = {name: decode(text)[0] for name, text in files.items()}
    files.update(diffs)
    if out is None:
        click.echo("\n".join(files[name] for name in files if name.endswith(".md")), nl=False)
        return 0
    handoff_text = None
    if handoff:
        handoff_text = (handoff, decode(render.render_handoff(
            b, os.path.relpath(out.absolute(), project.absolute())))[0])
    command = ["patchctl", "draft-outreach", *(["--series"] if whole else []),
               *patches, "--upstream", "UPSTREAM", "--out", shown_path(out, project),
               *(["--handoff", shown_path(handoff, project)] if handoff else []),
               *(["--onto", onto] if onto else [])]
    evidence = output.evidence_files(project, stack, [p.file for p in b.patches])
    meta = {"command": shlex.join(command), "name": b.name, "base": b.base, "onto": b.onto,
            "fingerprint": b.fingerprint, "patches": [p.file for p in b.patches],
            "policy_files": {f.path: f.lines for f in b.policy_files},
            "architectures": b.architectures}
    written = output.write(project, stack, out, files, meta=meta, evidence_files=evidence,
                          handoff=handoff_text)
    if as_json:
        emit_json(written.to_dict())
    else:
        for name in written.files:
            click.echo(f"wrote {os.path.normpath(Path(written.out) / name)}")
        for name in written.removed:
            click.echo(f"removed {Path(written.out) / name}", err=True)
    return 0


@click.command(epilog="Read-only: it never writes to GitHub or anywhere upstream.")
@click.option("--ref", metavar="REF", shell_complete=complete_ref,
              help="Also say which patches landed upstream between the pin and REF (by "
              "patch-id, reverse-apply, or the PR or commit they name; REF's tree must hold "
              "all they change), which name a change merged there but are not so held "
              "(superseded?), and which upstream probably "
              "superseded (needs the upstream).")
@click.option("--online", is_flag=True,
              help="Read the state of the GitHub issues and pull requests the patches point "
              "at (GITHUB_TOKEN is used when set; API base: PATCHCTL_GITHUB_API; each request "
              "ends within PATCHCTL_GITHUB_DEADLINE seconds, default 30). Without it the last "
              "answers are shown from the cache, with their age.")
@click.option("--days", type=click.IntRange(min=0, max=MAX_DAYS), default=90, show_default=True,
              help="With the upstream at hand: each patch's burden, the upstream commits of "
              "the days before the pin on its lines (as `patchctl burden`).")
@upstream_option
@json_option
@quiet_option
@click.pass_context
def upstream_status(ctx: click.Context, ref: str | None, online: bool, days: int,
                    upstream: str | None, as_json: bool) -> int:
    """Report each patch's Upstream-Status: counts, malformed or missing statuses, patches
    with no Forwarded/Bug reference, how long each has been Pending.

    With the upstream at hand (--upstream, or the pin file's URL already cloned into the
    cache; nothing is fetched for it), also what carrying each patch costs: the upstream
    commits of --days before the pin on its lines, and its files. Exit 1 when a status is
    missing or malformed.
    """
    from patchctl.model import stackwrite
    from patchctl.outreach import github, status

    stack = stack_of(ctx)
    result = status.report(stack)
    repo = resolve_upstream(upstream, stack.pin(), stack) if ref else \
        upstream_at_hand(upstream, stack.pin(), stack)
    if repo is not None:
        from patchctl.errors import PatchctlError

        try:
            status.with_burden(result, stack, repo, days=days, progress=progress)
        except PatchctlError as e:  # an extra: the statuses are the report
            end_progress()
            click.echo(f"patchctl: burden not shown: {e}", err=True)
    if ref and repo is not None:
        status.against(result, stack, repo, ref, progress=progress)
    end_progress()
    refs = sorted({r for p in result.patches for r in p.references})
    # the issues and PRs the outreach data names are looked up and cached too (not shown):
    # draft-outreach lists the discussions their text names
    known = set(refs) | {ref for p in result.patches
                         for ref in status.outreach_refs(stack, p.concern)}
    refs = sorted(known)
    cache = stackwrite.state_dir(project_dir(ctx), create=online) / github.CACHE_FILE
    answers = github.lookup(refs, cache, online=online) if refs else {}
    for p in result.patches:
        p.online = [{"ref": k, **answers[k]} for r in p.references
                    if (parsed := github.parse_ref(r)) and (k := github.key(parsed)) in answers]
    if as_json:
        emit_json(result.to_dict())
    else:
        from patchctl.outreach.render import status_text

        click.echo(status_text(result), nl=False)
    return exit_for(result.ok)
