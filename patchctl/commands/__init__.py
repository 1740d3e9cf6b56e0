"""One module per subcommand; each imports its heavy dependencies lazily.

Each is a thin adapter: it reads its arguments, calls the package that does the work and
returns a typed result for ``patchctl.cli`` to render.

May import: every package (they are all below it) and the helpers beside ``patchctl.cli``.
"""
