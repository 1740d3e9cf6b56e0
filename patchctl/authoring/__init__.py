"""Authoring the stack: the verbs that add, change, rearrange and export patches.

``init_import`` (``init``, ``import``) with ``import_sources`` (reading format-patch files,
mboxes, quilt series, commit ranges); ``edit`` (``new``, ``edit``, ``refresh`` in a work
tree); ``rearrange`` (``delete``, ``rename``, ``move``, ``header``, and the transaction
these verbs run in); ``regenerate`` (``fold``, ``split``, ``diff``: a patch's diff made
again from the trees around it); ``restack`` (``refresh --all``: the series up to the
edited patch rewritten from the edit work tree's commits); ``export`` (mbox,
format-patch, quilt).

May import: ``model``, ``gitrepo``, the helpers beside ``patchctl.cli``, ``verify`` (why
an order fails) and ``rebase`` (refusing while a rebase-pin is stopped).
"""
