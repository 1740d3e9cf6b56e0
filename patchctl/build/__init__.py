"""The stack applied for real: written out as a tree, and built and tested.

``materialize`` is ``patchctl apply --into DIR`` (pin + stack as plain files or a git
repository, stamped, swapped in whole); ``reproduce`` builds and tests each patch's
reproducer without and with it; ``toolchain`` finds and runs cmake, ctest and ninja.

May import: ``model``, ``gitrepo``, ``records`` (a reproduce run's record) and the helpers
beside ``patchctl.cli``.
"""
