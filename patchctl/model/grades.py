"""How a patch went onto a tree: the one vocabulary of verify, rebase-pin and import.

docs/FORMATS.md ("Grades") says what each means. Offsets are
``gitrepo.HunkOffset``; a change to a patch's text is ``patchtext.UNCHANGED``
/ ``CONTEXT`` / ``CONTENT`` (plus ``DROPPED`` for rebase-pin).
"""

from __future__ import annotations

EXACT = "exact"  # applies at fuzz 0 where its hunk headers say
OFFSET = "offset"  # applies at fuzz 0, some hunks some lines away
THREE_WAY = "3way"  # only a three-way merge puts it on (rebase-pin, import)
CONFLICT = "conflict"  # not even a three-way merge does (rebase-pin)
MOVED = "moved"  # its lines moved upstream: re-targeted where they went (rebase-pin)
UNION = "union"  # both it and upstream inserted lines at one place: both kept (rebase-pin)
ANCHORED = "anchored"  # its context changed: re-anchored on its removed lines (rebase-pin)
DECL = "decl"  # it and upstream changed different C/C++ declarations or statements of one
# region: merged item by item, as a parser reads them (rebase-pin)
WAITING = "waiting"  # a conflict only because an earlier conflict it stands on is left out
UPSTREAM = "upstream"  # already there: it reverse-applies, or merging adds nothing
FAILED = "failed"  # does not apply (verify)
IRREVERSIBLE = "irreversible"  # applies, but reversing it does not restore the tree (verify)
SKIPPED = "skipped"  # not checked: an earlier patch failed (verify)
INVALID = "invalid"  # the patch file does not parse (verify)

APPLIES = frozenset({EXACT, OFFSET, THREE_WAY, MOVED, UNION, ANCHORED, DECL})
# Proven beyond a line merge, each by its own rule (rebase/moved.py, rebase/resolve.py,
# rebase/declmerge.py); rebase-pin --strict tries none of them.
RESOLVED = frozenset({MOVED, UNION, ANCHORED, DECL})


def clean(offsets: object) -> str:
    """EXACT or OFFSET for a patch that went on plainly, by whether it had offsets."""
    return OFFSET if offsets else EXACT
