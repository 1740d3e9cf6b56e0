"""The stack's model: its files and formats, read and written.

``stack`` (series, pin, lock), ``patchfile`` (reading one patch), ``patchtext``
(patchctl's deterministic patch text), ``lint`` (its ``finding`` apart: verify reads
findings without the linter), ``fingerprint``, ``grades`` (how a patch
went on), ``schemas`` (every JSON schema id), ``stackwrite`` (changing ``stack/`` in one
swap) and ``statefile`` (private state files).

May import: the helpers beside ``patchctl.cli`` only. Never runs git (no ``gitrepo``, no
subprocess), never prints, never exits: callers pass in what git knows and render results.
"""
