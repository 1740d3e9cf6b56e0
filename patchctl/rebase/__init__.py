"""``patchctl rebase-pin``: move the stack to a new upstream commit.

``engine`` grades each patch index-only at the new pin and swaps the new stack in;
``bisect`` finds the upstream commit that broke a patch or landed it; ``session`` is the
command (check, rebase, stop at a conflict, ``--continue``, ``--abort``) and ``state`` a
stopped rebase's state file; ``review`` explains a conflict (with ``linetrack``: the
upstream commits that changed a patch's lines), re-checks a resolution and shows the
range-diff; ``waiting`` tells a conflict of a patch's own from one that only stands on an
earlier left-out conflict; ``moved`` follows a conflicting patch's lines where upstream
moved them, ``resolve`` re-places one by a rule (``union``, ``anchored``), ``declmerge``
merges one in C or C++ code by declaration and statement (``decl``, on ``decltree``'s
items), and ``classify`` names a conflict's class (why it stopped); ``absorbed`` names the
part of a patch's change a merge took as upstream's, ``gone`` the names a patch's added
lines use that upstream removed; ``results`` holds the typed report.

May import: ``model``, ``gitrepo`` and the helpers beside ``patchctl.cli``; ``engine``
imports neither ``session`` nor ``state``.
"""
