"""A finding about a patch (lint's, verify's): its severity, code, message and line.

Kept apart from ``lint`` so that a verify whose patches all come from the parse cache
imports neither the linter nor what it needs (the glob matcher, the patch parser).
"""

from __future__ import annotations

from dataclasses import dataclass

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True)
class Finding:
    severity: str
    code: str
    message: str
    line: int | None = None  # 1-based line in the patch file


def parent_dirs(path: str) -> list[str]:
    """The directories above a repository-relative path, outermost first
    (``a/b/c`` -> ``a``, ``a/b``): plain string work, no pathlib, for large stacks."""
    parts = [p for p in path.split("/") if p and p != "."]
    return ["/".join(parts[:i]) for i in range(1, len(parts))]
