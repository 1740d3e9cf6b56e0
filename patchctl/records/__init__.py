"""What ran, and where: evidence records and the machine they describe.

``evidence`` writes the records under a project's ``evidence/`` (``patchctl record`` and
the commands that record their runs); ``hostinfo`` reads the machine (CPU, memory, GPU,
OS) for a record and for ``release verify``.

May import: ``model``, ``gitrepo`` (git's version), ``release.documents`` (the worker
identity's schema) and the helpers beside ``patchctl.cli``.
"""
