"""``patchctl verify``: every patch applies at the pin, in order, and the series reverses.

``engine`` runs it on temporary indexes and returns the typed report; ``partition`` splits
a large series into parts proven at once; ``parsecache`` keeps what verify reads of each
patch, by content; ``render`` writes the report as text, JUnit XML and GitHub annotations.

May import: ``model``, ``gitrepo`` and the helpers beside ``patchctl.cli``.
"""
