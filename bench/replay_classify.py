"""bench/replay.py's judgements: why a patch stopped, and whether an automatic move is the
maintainers' own.

Why it stopped (``classify_stop``): patchctl's own class of a conflict
(patchctl/rebase/classify.py has the heuristic: file gone, moved code, same lines changed,
insertions at one place, context drift, other), on the stop's base (the new pin with the
patches before it), for `rebase-pin`'s stops and `git am -3`'s alike, so the benchmark and
the tool cannot disagree.

Whether an automatic move is the maintainers' own (``compare_moves``): along the rebased
series, each patch's own change on the tree the patches before it made, against the
maintainers' version applied on that same tree: the same tree, or not. A tree that is not
theirs is told apart three ways: patchctl said so (a finding on the patch: part of its
change already upstream, names its lines use gone upstream, or a hunk placed by a rule,
with where and why), the maintainers changed
the patch's own lines at the bump while patchctl moved them as they were (the same net
change as the old patch: a rewrite of theirs no line tool can make, needed or not), or
neither (a silent difference: the one that counts against patchctl).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _common import hermetic_env
from replay_proc import call

from patchctl.model.patchfile import parse_patch
from patchctl.rebase.absorbed import net
from patchctl.rebase.classify import classify_text

VERDICTS = (
    "equal",
    "differs, said so",
    "differs, they changed it",
    "differs",
    "dropped by them",
    "theirs does not apply",
)


def classify_stop(
    repo: Path, rev: str, patch: bytes, search: tuple[Path, str] | None = None
) -> dict[str, Any]:
    """Why ``patch`` stopped on ``rev`` of ``repo``; ``search``: where to grep for moved
    lines (default: ``rev`` of ``repo``; a partial clone would fetch what it lacks)."""
    return classify_text(repo, rev, patch, search=search).to_dict()


def same_change(a: bytes, b: bytes) -> bool:
    """The two patches make the same net change: each line added (minus removed) as often."""
    where = Path("patch")
    return net(parse_patch(a, path=where, name="a")) == net(parse_patch(b, path=where, name="b"))


def compare_moves(
    repo: Path,
    new: str,
    series: Sequence[tuple[str, bytes, bool]],
    theirs: dict[str, bytes | None],
    old: dict[str, bytes] | None = None,
    said: frozenset[str] = frozenset(),
) -> dict[str, str]:
    """For each patch of ``series`` (name, rebased text, moved without a person) in order
    on ``new``: one of ``VERDICTS``. ``old``: each patch's text before the bump; ``said``:
    the patches patchctl gave a finding (what its tree may get wrong)."""
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
                    was = (old or {}).get(name)
                    verdicts[name] = (
                        "equal"
                        if same
                        else "theirs does not apply"
                        if not ok
                        else "differs, said so"
                        if name in said
                        else "differs, they changed it"
                        if was is not None and same_change(was, text) and not same_change(was, mine)
                        else "differs"
                    )
                    git("read-tree", ours)
    return verdicts
