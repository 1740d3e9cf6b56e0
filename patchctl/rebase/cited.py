"""Landed by reference: the upstream change a patch names, merged between the two pins.

A backport that upstream merged in edited form has another patch-id and need not
reverse-apply at the new pin, so the engine's own checks miss it; its subject,
body or trailers name the change (``(#123)``, the upstream's PR URL, ``Origin:``,
``Upstream-Status: Backport [...]``, ``(cherry picked from commit ...)``). What counts
as a reference, a merge and containment is model/references.py; here git reads the
upstream's commits between the pins (one ``git log``) and, per patch that names one
of them, that commit's diff of the patch's files.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from patchctl import gitrepo
from patchctl.errors import GitError
from patchctl.model import references
from patchctl.rebase.engine import Commit, Landing, Source, Superseded
from patchctl.untrusted import printable


def cited(repo: Path, old: str, new: str, sources: Sequence[Source],
          url: str) -> dict[int, Landing | Superseded]:
    """By series position: each patch that names an upstream change merged in ``old..new``,
    as a ``Landing`` (how ``reference``) when that commit does everything the patch does,
    else as ``Superseded``. ``url``: the pin file's, whose OWNER/REPO a URL must name."""
    if old == new:
        return {}
    slug = references.repo_slug(url)
    refs = {s.index: references.references(s.patch, slug) for s in sources}
    if not any(refs.values()):
        return {}  # no git at all for a stack that names nothing
    commits = gitrepo.range_messages(repo, old, new)
    out: dict[int, Landing | Superseded] = {}
    for s in sources:
        found = references.landing(refs[s.index], commits)
        if found is None:
            continue
        ref, c = found
        commit = Commit(c.id, printable(c.subject))
        paths = sorted({p for f in s.patch.files for p in f.paths})
        try:
            diff = gitrepo.format_diff(repo, c.parent or gitrepo.EMPTY_TREE, c.id, paths=paths)
        except GitError:  # a mirror without those blobs: nothing to compare, so not dropped
            out[s.index] = Superseded(commit, ref.label, "(the commit's diff could not be "
                                      "read from this upstream clone)\n")
            continue
        theirs = references.diff_patch(diff, c.id)
        if references.contained(s.patch, theirs):
            out[s.index] = Landing(commit, "reference", reference=ref.label)
        else:
            # an upstream's text, shown on terminals and in the canary's summary
            out[s.index] = Superseded(commit, ref.label, printable(
                references.interdiff(s.patch, theirs, c.id), newlines=True))
    return out
