"""bench/replay.py's inputs: a downstream's own llama.cpp pin bumps, read from its history.

A downstream (ollama here) keeps its pin and its patch queue in its own repository, in
one of three layouts over time, tried in this order at each commit:

- ``Makefile.sync``: ``FETCH_HEAD=<commit>``, queue ``llama/patches/*.patch``;
- ``llama/vendoring``: ``LLAMACPP_BASE_COMMIT=<commit>``, queue ``llama/patches/*.patch``;
- ``llm/llama.cpp``: a submodule gitlink, queue ``llm/patches/`` (``*.diff`` applied with
  `git apply`, later ``*.patch``).

A bump is a first-parent commit where the pin changes; the state before it is its first
parent's. The queue is applied in file-name order (the downstream's scripts glob it).
Patches are matched across a bump by subject (a plain diff has none: its file name
without the number stands for it); file names are renumbered between bumps, so they
are matched on their words, never on the file name as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from _common import git, read_blobs

PIN_FILES = ("Makefile.sync", "llama/vendoring", "llm/llama.cpp")
_SYNC = re.compile(r"^FETCH_HEAD=([0-9a-f]{40})", re.M)
_VENDOR = re.compile(r"^LLAMACPP_BASE_COMMIT=([0-9a-f]{40})", re.M)


@dataclass
class QueuePatch:
    """One file of the queue as the downstream kept it."""

    name: str
    data: bytes

    @property
    def subject(self) -> str:
        m = re.search(rb"^Subject: (.*(?:\n[ \t].*)*)", self.data, re.M)
        if not m:
            return ""
        subject = m.group(1).decode("utf-8", "replace").replace("\n", "")
        return re.sub(r"^\[PATCH[^\]]*\]\s*", "", subject).strip()

    @property
    def keys(self) -> set[str]:
        """What identifies it across a bump: its subject's words, else its name's."""
        stem = re.sub(r"^\d+[-_]", "", self.name.rsplit(".", 1)[0])
        return {k for k in (_words(self.subject), _words(stem)) if k}


def _words(text: str) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", text.lower()))


@dataclass
class Bump:
    commit: str
    date: str
    title: str
    parent: str
    old: str
    new: str
    before: list[QueuePatch]
    after: list[QueuePatch]
    layout: str  # the pin file at the bump
    theirs: dict[str, QueuePatch | None] = field(default_factory=dict)  # before name -> after
    added: list[str] = field(default_factory=list)  # after names matching nothing before


def pin_at(repo: Path, commit: str) -> tuple[str, str, str] | None:
    """(pin, pin file, queue dir) of the downstream at ``commit``; None when it has none."""
    for path in PIN_FILES:
        out = git(repo, "ls-tree", commit, "--", path).split()
        if not out:
            continue
        if out[1] == "commit":  # the submodule: its gitlink is the pin
            return out[2], path, "llm/patches"
        text = git(repo, "cat-file", "blob", out[2])
        m = (_SYNC if path == "Makefile.sync" else _VENDOR).search(text)
        if m:
            return m.group(1), path, "llama/patches"
    return None


def queue_at(repo: Path, commit: str, directory: str) -> list[QueuePatch]:
    entries = []
    for line in git(repo, "ls-tree", "-z", commit, "--", f"{directory}/").split("\0"):
        if not line:
            continue
        meta, path = line.split("\t", 1)
        _, kind, blob = meta.split()
        name = path.rsplit("/", 1)[-1]
        if kind == "blob" and name.endswith((".patch", ".diff")):
            entries.append((name, blob))
    blobs = read_blobs(repo, [b for _, b in entries])
    return [QueuePatch(n, blobs[b]) for n, b in sorted(entries)]


def match(
    before: list[QueuePatch], after: list[QueuePatch]
) -> tuple[dict[str, QueuePatch | None], list[str]]:
    """Each patch before -> the maintainers' patch after with the same subject (None: they
    dropped it); and the names after that match nothing before (added at the bump)."""
    theirs: dict[str, QueuePatch | None] = {}
    used: set[str] = set()
    for p in before:
        hit = next((q for q in after if q.name not in used and p.keys & q.keys), None)
        theirs[p.name] = hit
        if hit is not None:
            used.add(hit.name)
    return theirs, [q.name for q in after if q.name not in used]


def bumps(
    repo: Path,
    tip: str,
    *,
    since: str | None = None,
    until: str | None = None,
    limit: int | None = None,
) -> list[Bump]:
    """The pin bumps on ``tip``'s first-parent line, newest first (``limit`` of them)."""
    args = ["log", "--first-parent", "--format=%H %ad %s", "--date=short"]
    args += [f"--since={since}"] if since else []
    args += [f"--until={until}"] if until else []
    found: list[Bump] = []
    for line in git(repo, *args, tip, "--", *PIN_FILES).splitlines():
        commit, date, title = [*line.split(" ", 2), ""][:3]
        parents = git(repo, "rev-list", "--parents", "-n", "1", commit).split()
        if len(parents) < 2:
            continue
        now, then = pin_at(repo, commit), pin_at(repo, parents[1])
        if now is None or then is None or now[0] == then[0]:
            continue  # the pin did not move (a queue change, a layout change)
        before, after = queue_at(repo, parents[1], then[2]), queue_at(repo, commit, now[2])
        theirs, added = match(before, after)
        found.append(
            Bump(
                commit,
                date,
                title,
                parents[1],
                then[0],
                now[0],
                before,
                after,
                now[1],
                theirs,
                added,
            )
        )
        if limit is not None and len(found) >= limit:
            break
    return found
