"""patchctl: keep a narrow, provable patch stack against a pinned upstream commit.

``cli`` is the command line (the only code that exits), ``commands/`` one module per
subcommand. ``model/`` is the stack's files and formats, ``gitrepo/`` every git call;
``verify/``, ``rebase/``, ``authoring/``, ``build/``, ``records/``, ``release/``, ``ci/``
and ``outreach/`` do the work; each package's docstring says what it owns and may import.
Beside ``cli`` are the helpers every layer may use, which import only each other:
``errors``, ``fsutil``, ``untrusted``, ``httpget``, ``globs``, ``tomlwrite``, ``textout``,
``toolout`` (why a tool failed, read from its output);
``manpages`` writes the man pages at build time. tests/test_layout.py holds these rules.
"""

__version__ = "0.1.0"
