"""Landed by reference: the upstream change a patch names, merged between the two pins.

A patch that names an upstream change (``(#123)``, the upstream's PR URL, ``Origin:``,
``Upstream-Status: Backport [...]``, ``(cherry picked from commit ...)``) that merged
between the pins is a candidate, never a proof: its subject is the patch's own text.
What counts as a reference, a merge and containment is model/references.py; here git
reads the upstream's commits between the pins (one ``git log``) and, per patch that
names one of them, that commit's diff of the patch's files. The engine decides: only
the new pin's tree holding the patch's change makes it ``upstream`` (then this commit is
the landing it names, when its diff holds the patch's lines); otherwise the patch is
``superseded?`` and kept, with the interdiff made here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from patchctl import gitrepo
from patchctl.errors import GitError
from patchctl.model import references
from patchctl.rebase.engine import Source
from patchctl.rebase.results import Cited, Commit
from patchctl.untrusted import printable

# an interdiff of changed lines shows nothing when they match but their place, a mode or
# a binary file does not
_SAME_LINES = ("(the changed lines match the commit's; what differs is where they go, a "
               "file's mode or a binary file)\n")


def cited(repo: Path, old: str, new: str, sources: Sequence[Source],
          url: str) -> dict[int, Cited]:
    """By series position: each patch that names an upstream change merged in ``old..new``,
    with that commit, whether its diff holds every line the patch changes, and the
    interdiff. ``url``: the pin file's, whose OWNER/REPO a URL must name."""
    if old == new:
        return {}
    slug = references.repo_slug(url)
    refs = {s.index: references.references(s.patch, slug) for s in sources}
    if not any(refs.values()):
        return {}  # no git at all for a stack that names nothing
    commits = gitrepo.range_messages(repo, old, new)
    out: dict[int, Cited] = {}
    for s in sources:
        found = references.landing(refs[s.index], commits)
        if found is None:
            continue
        ref, c = found
        commit = Commit(c.id, printable(c.subject))
        paths = sorted({p for f in s.patch.files for p in f.paths})
        try:
            diff = gitrepo.format_diff(repo, c.parent or gitrepo.EMPTY_TREE, c.id, paths=paths)
        except GitError:  # a mirror without those blobs: nothing to compare
            out[s.index] = Cited(commit, ref.label, False, "(the commit's diff could not be "
                                 "read from this upstream clone)\n")
            continue
        theirs = references.diff_patch(diff, c.id)
        # an upstream's text, shown on terminals and in the canary's summary
        shown = printable(references.interdiff(s.patch, theirs, c.id), newlines=True)
        out[s.index] = Cited(commit, ref.label, references.contained(s.patch, theirs),
                             shown or _SAME_LINES)
    return out
