"""What ran, and where: evidence records and the machine they describe.

``evidence`` writes the records under a project's ``evidence/`` (``patchctl record`` and
the commands that record their runs); ``hostinfo`` reads the machine (CPU, memory, GPU,
OS) for a record and for ``release verify``; ``identity`` is the worker's
``--version --json`` document and its schema (a record names the worker that ran, a
release embeds and checks it).

May import: ``model``, ``gitrepo`` (git's version) and the helpers beside ``patchctl.cli``.
"""
