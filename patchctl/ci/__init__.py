"""CI for a stack: lanes run here and on runners, generated workflows, the upstream canary.

- ``lanes``: what one lane runs (verify, apply --into, native build + CTest,
  reproduce), planned once and run by ``patchctl ci run``, which is also what
  the generated workflow calls, so a CI failure reproduces locally;
- ``workflows``: ``patchctl ci github`` renders the GitHub Actions files from
  the templates in ``templates/`` (deterministic; a header names the command);
- ``canary``: compares a ``rebase-pin --json`` report with the previous one and
  renders the Markdown job summary.

May import: ``model``, ``gitrepo``, ``reproducers`` (cmake, ctest and ninja for a lane's
native build) and the helpers beside ``patchctl.cli``.
"""
