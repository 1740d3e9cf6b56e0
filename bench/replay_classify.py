"""bench/replay.py's judgements: why a patch stopped, and whether an automatic move is the
maintainers' own.

Why it stopped (``classify_stop``): patchctl's own class of a conflict
(patchctl/rebase/classify.py has the heuristic: file gone, moved code, same lines changed,
insertions at one place, context drift, other), on the stop's base (the new pin with the
patches before it), for `rebase-pin`'s stops and `git am -3`'s alike, so the benchmark and
the tool cannot disagree.

Whether an automatic move is the maintainers' own (``compare_moves``): along the rebased
series, each patch's own change on the tree the patches before it made, against the
maintainers' version applied on that same tree: the same tree, or not.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _common import hermetic_env
from replay_proc import call

from patchctl.rebase.classify import classify_text


def classify_stop(
    repo: Path, rev: str, patch: bytes, search: tuple[Path, str] | None = None
) -> dict[str, Any]:
    """Why ``patch`` stopped on ``rev`` of ``repo``; ``search``: where to grep for moved
    lines (default: ``rev`` of ``repo``; a partial clone would fetch what it lacks)."""
    return classify_text(repo, rev, patch, search=search).to_dict()


def compare_moves(
    repo: Path, new: str, series: Sequence[tuple[str, bytes, bool]], theirs: dict[str, bytes | None]
) -> dict[str, str]:
    """For each patch of ``series`` (name, rebased text, moved without a person) in order
    on ``new``: "equal" / "differs" / "dropped by them" / "theirs does not apply"."""
    verdicts: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="patchctl-replay-") as tmp:
        env = hermetic_env(GIT_INDEX_FILE=os.path.join(tmp, "index"))

        def git(*args: str) -> tuple[int, str]:
            done = call(["git", "-C", str(repo), *args], env=env, check=False)
            return done.returncode, (done.stdout or b"").decode().strip()

        def apply(data: bytes) -> bool:
            path = Path(tmp) / "p.patch"
            path.write_bytes(data)
            return (
                git("apply", "--cached", str(path))[0] == 0
                or git("apply", "--cached", "--3way", str(path))[0] == 0
            )

        git("read-tree", new)
        for name, text, auto in series:
            before = git("write-tree")[1]
            apply(text)
            ours = git("write-tree")[1]
            if auto:
                mine = theirs.get(name)
                if mine is None:
                    verdicts[name] = "dropped by them"
                else:
                    git("read-tree", before)
                    ok = apply(mine)
                    same = ok and git("write-tree")[1] == ours
                    verdicts[name] = (
                        "equal" if same else "differs" if ok else "theirs does not apply"
                    )
                    git("read-tree", ours)
    return verdicts
