"""Getting patches upstream, by a person: draft-outreach briefs and upstream-status.

``policy`` reads an upstream's rules, ``facts`` reads a patch, ``recorded`` the stack's
records of it, ``decls`` (``cscope``, ``csyntax``) finds where the code a patch uses is
declared, ``brief`` puts them together at the pin, ``render`` and the templates
in ``patchctl/templates`` write Markdown, ``output`` writes a brief directory
with its manifest, ``port`` moves patches onto a newer upstream, ``status``
and ``github`` report where each patch stands. Nothing here posts anywhere.

May import: ``model``, ``gitrepo``, ``rebase`` (porting a patch onto a newer upstream),
``records`` (the schemas of the records a brief reads), ``burden`` (what carrying a patch
costs) and the helpers beside ``patchctl.cli``.
"""
