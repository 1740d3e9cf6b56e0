"""bench/replay.py's judgements: why a patch stopped, and whether an automatic move is the
maintainers' own.

Why it stopped (``classify_stop``), for each hunk whose preimage (context and removed
lines, in order) is no longer found as one block in its file at the stop's base (the new
pin with the patches before it); the stop takes the first class of its hunks in this order:

- ``file gone``: the file is not there, and the hunk's most distinctive line (its longest
  removed line, else context line, of 12 characters or more) is in no other file;
- ``moved code``: that line is not in the hunk's file (or the file is gone) but is in
  another file (`git grep -F`);
- ``same lines changed``: the hunk removes lines that are no longer there as one block
  (upstream changed the very lines; a file the patch creates that upstream created too);
- ``insertions at one place``: a hunk that only inserts, whose context before and after
  are both there, each as one block, with upstream's own lines now between them;
- ``context drift``: the removed lines are all there, unchanged, as one block (or the
  hunk only inserts) but the context around them differs;
- ``other``: every hunk's preimage is there (the conflict comes from elsewhere).

Whether an automatic move is the maintainers' own (``compare_moves``): along the rebased
series, each patch's own change on the tree the patches before it made, against the
maintainers' version applied on that same tree: the same tree, or not.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import hermetic_env
from replay_proc import call

ORDER = (
    "file gone",
    "moved code",
    "same lines changed",
    "insertions at one place",
    "context drift",
)


@dataclass
class Hunk:
    path: str
    creates: bool
    lines: list[tuple[str, bytes]] = field(default_factory=list)  # (' '|'-'|'+', text)

    @property
    def preimage(self) -> list[bytes]:
        return [t for k, t in self.lines if k != "+"]

    @property
    def removed(self) -> list[bytes]:
        return [t for k, t in self.lines if k == "-"]

    def around(self) -> tuple[list[bytes], list[bytes]]:
        kinds = [k for k, _ in self.lines]
        changed = [i for i, k in enumerate(kinds) if k != " "]
        if not changed:
            return self.preimage, []
        return (
            [t for _, t in self.lines[: changed[0]]],
            [t for _, t in self.lines[changed[-1] + 1 :]],
        )


def parse_hunks(data: bytes) -> list[Hunk]:
    hunks: list[Hunk] = []
    path, creates, current = "", False, None
    for line in data.split(b"\n"):
        if line.startswith(b"diff --git "):
            current, creates = None, False
            m = re.match(rb"diff --git a/(\S+) b/(\S+)", line)
            path = m.group(2).decode("utf-8", "replace") if m else ""
        elif line.startswith(b"--- "):
            creates = line == b"--- /dev/null"
        elif line.startswith(b"+++ "):
            if line.startswith(b"+++ b/"):
                path = line[6:].decode("utf-8", "replace").rstrip("\t")
        elif line.startswith(b"@@"):
            current = Hunk(path, creates)
            hunks.append(current)
        elif current is not None and line[:1] in (b" ", b"-", b"+"):
            current.lines.append((line[:1].decode(), line[1:]))
        elif current is not None and line == b"":
            current.lines.append((" ", b""))  # a blank context line stripped of its space
    for h in hunks:  # the trailing blank of the last hunk is the file's end, not context
        while h.lines and h.lines[-1] == (" ", b""):
            h.lines.pop()
    return hunks


def find(block: Sequence[bytes], lines: Sequence[bytes], start: int = 0) -> int:
    """Where ``block`` starts in ``lines`` as one block, at ``start`` or later; -1 if not."""
    n = len(block)
    if n == 0:
        return start
    for i in range(start, len(lines) - n + 1):
        if lines[i] == block[0] and list(lines[i : i + n]) == list(block):
            return i
    return -1


def _git(repo: Path, *args: str) -> tuple[int, bytes]:
    done = call(["git", "-C", str(repo), *args], check=False)
    return done.returncode, done.stdout or b""


def _distinctive(hunk: Hunk) -> bytes | None:
    pool = hunk.removed or hunk.preimage
    best = max(pool, key=lambda t: len(t.strip()), default=b"")
    return best if len(best.strip()) >= 12 else None


def _elsewhere(search: tuple[Path, str], hunk: Hunk) -> bool:
    line = _distinctive(hunk)
    if line is None:
        return False
    repo, rev = search
    code, found = _git(repo, "grep", "-F", "-l", "-e", line.decode("utf-8", "replace"), rev)
    return code == 0 and any(
        p.split(b":", 1)[-1].decode("utf-8", "replace") != hunk.path for p in found.splitlines()
    )


def hunk_class(search: tuple[Path, str], hunk: Hunk, text: bytes | None) -> str | None:
    """The class of one hunk on ``text`` (its file at the stop; None: not there);
    ``search``: the repository and tree (the new pin) where moved lines are looked for."""
    if text is None:
        if hunk.creates:
            return None
        return "moved code" if _elsewhere(search, hunk) else "file gone"
    if hunk.creates:
        return "same lines changed"
    lines = text.split(b"\n")
    if find(hunk.preimage, lines) >= 0:
        return None
    line = _distinctive(hunk)
    if line is not None and line not in lines and _elsewhere(search, hunk):
        return "moved code"
    if hunk.removed:
        return "context drift" if find(hunk.removed, lines) >= 0 else "same lines changed"
    before, after = hunk.around()
    at = find(before, lines)
    if before and after and at >= 0 and find(after, lines, at + len(before)) > at + len(before):
        return "insertions at one place"
    return "context drift"


def classify_stop(
    repo: Path, rev: str, patch: bytes, search: tuple[Path, str] | None = None
) -> dict[str, Any]:
    """Why ``patch`` stopped on ``rev`` of ``repo``; ``search``: where to grep for moved
    lines (default: ``rev`` of ``repo``; a partial clone would fetch what it lacks)."""
    texts: dict[str, bytes | None] = {}
    classes: list[dict[str, str]] = []
    for hunk in parse_hunks(patch):
        if hunk.path not in texts:
            code, data = _git(repo, "cat-file", "blob", f"{rev}:{hunk.path}")
            texts[hunk.path] = data if code == 0 else None
        cls = hunk_class(search or (repo, rev), hunk, texts[hunk.path])
        if cls:
            classes.append({"file": hunk.path, "class": cls})
    found = {c["class"] for c in classes}
    return {"class": next((c for c in ORDER if c in found), "other"), "hunks": classes}


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
