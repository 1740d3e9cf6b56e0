"""draft-outreach --onto: each patch as it would be proposed against a newer upstream.

rebase-pin's own machinery (index-only, ``git apply --3way``) moves the series
onto REF and grades each patch exact / offset / 3way / conflict; nothing in
the stack changes. Each patch that applies is written as a plain diff, with no
commit message (the person writes their own), named after the base it applies
to: REF itself for the first patch, REF plus the patches before it otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from patchctl import gitrepo
from patchctl.errors import InputError
from patchctl.model.stack import Stack

if TYPE_CHECKING:
    from patchctl.outreach.brief import Brief


def port(stack: Stack, upstream: Path, brief: Brief, ref: str, *,
         progress: Callable[[str], None] | None = None) -> dict[str, str]:
    """Grade the briefed patches on ``ref``; returns file name -> ported diff text."""
    from patchctl.rebase import engine as rebase

    upstream = gitrepo.git_dir(upstream)
    onto = gitrepo.resolve_commit(upstream, ref)
    if onto is None:
        raise InputError(f"--onto {ref!r} is not a commit, tag or branch in upstream "
                         f"{upstream}")
    pin = stack.pin()
    sources = rebase.sources_of(stack)
    with gitrepo.temp_index(upstream) as index:
        rebase.seed(index, pin.commit, sources)
        steps = {s.source.name: s for s in rebase.classify(index, sources, onto,
                                                           progress=progress)}
    brief.onto = onto
    files: dict[str, str] = {}
    for p in brief.patches:
        step = steps[p.file]
        r = step.result
        text = step.text if step.text is not None else step.source.patch.text
        name = None
        if r.grade in rebase.APPLIES:
            name = f"{p.file.removesuffix('.patch')}.onto-{onto[:12]}.diff"
            files[name] = plain_diff(text)
        p.port = {
            "onto": onto, "ref": ref, "grade": r.grade, "diff": name,
            "applies_to": onto if p.index == 1 else
            f"{onto} with patches 1..{p.index - 1} of the series applied",
            "offsets": [asdict(o) for o in r.offsets], "conflicts": list(r.conflicts),
            "after_conflict": r.after_conflict,
            "landed": asdict(r.landed) if r.landed else None,
        }
    return files


def plain_diff(patch_text: str) -> str:
    """Only the diff of a patch file: no mail header, message, trailers or diffstat."""
    lines = patch_text.split("\n")
    start = next((i for i, ln in enumerate(lines) if ln.startswith("diff --git ")), 0)
    text = "\n".join(lines[start:])
    # format-patch's signature ("-- " and a version) is not part of the diff
    if "\n-- \n" in text:
        text = text[: text.rindex("\n-- \n") + 1]
    return text if text.endswith("\n") else text + "\n"
