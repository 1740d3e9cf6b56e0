"""``patchctl burden``: what carrying the stack costs, measured in upstream churn.

For each patch, the upstream commits of the N days before the pin that last changed
the lines its hunks stand on (context and removed lines, followed back through the
earlier patches to the pin and blamed there): had the stack been made N days ago,
each would have been a conflict or a three-way merge. ``lines`` maps a patch's
lines to the pin; ``engine`` blames them and returns the typed report; ``cache``
keeps each patch's row by its bytes, the pin, the window and the upstream (data the
engine reads; it imports no engine); ``render`` writes text.

May import: ``model``, ``gitrepo`` and the helpers beside ``patchctl.cli``.
"""

MAX_DAYS = 100_000  # --days at most: from today, back to the 1750s, before any history
