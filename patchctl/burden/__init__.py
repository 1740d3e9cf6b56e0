"""``patchctl burden``: what carrying the stack costs, measured in upstream churn.

For each patch, the upstream commits of the N days before the pin that last changed
the lines its hunks stand on (context and removed lines, followed back through the
earlier patches to the pin and blamed there): had the stack been made N days ago,
each would have been a conflict or a three-way merge. ``lines`` maps a patch's
lines to the pin; ``engine`` blames them and returns the typed report; ``cache``
keeps each patch's row by its bytes, the pin and the window; ``render`` writes text.

May import: ``model``, ``gitrepo`` and the helpers beside ``patchctl.cli``.
"""
