"""The stack applied for real, and each patch's reproducer built and tested against it.

``materialize`` is ``patchctl apply --into DIR`` (pin + stack as plain files or a git
repository, stamped, swapped in whole); ``reproduce`` builds and tests each patch's
reproducer (the CMake projects under a project's top-level ``reproducers/``) without and
with it; ``toolchain`` finds and runs cmake, ctest and ninja.

May import: ``model``, ``gitrepo``, ``records`` (a reproduce run's record) and the helpers
beside ``patchctl.cli``.
"""
