"""Parts of a series that git can prove side by side, each on its own index.

One ``git apply`` of a whole series is one process on one core. Patches that no
path links do not see each other: applied to the pin in separate parts, each part
in series order, every hunk goes on at the same place as in one run of the whole
series, and each part's reverse restores the pin on its own index. ``verify``
proves a large stack that way, one part per core it may use.

A path links two patches when both name it, or when one of them creates, deletes,
renames or re-modes it and it is a directory above a path of the other (a file
turning into a directory, or back, is one index change seen under two paths).
Paths are compared case-folded, so an index on a case-insensitive file system
cannot join what was kept apart. A patch that only changes files in place (same
path, same mode) is linked only through the paths it names.

A split needs every patch's paths, which are known only once the patches are
read. So each run keeps its split in the cache (``<hash>.plan``, beside the parse
cache: one part a line, the series positions of its patches), and the next run
starts git on those parts before it has read a patch; it keeps the result only if
its own reading shows the split still ``holds``, else it proves the stack again. The
plan's first line keys it to the patches it was made for (``plan_key``: their names,
strip levels and bytes, the code that reads them and this module's): a run that reads
the same patches takes the kept split as the one it would make, without working it out.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

from patchctl import fsutil

MIN_PATCHES = 500  # below, the extra git processes cost what the split saves (bench: at
# 200 patches, 2 parts took 122.6 ms, 1 part 118.6 ms; at 2,000 parts win)
MAX_PARTS = 4


def groups(patches: Sequence[tuple[Sequence[str], bool]]) -> list[int]:
    """For each patch, given as (the paths it names, does it only change files in
    place), the id of its group: patches with equal ids must stay in one part."""
    parent = list(range(len(patches)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}  # path or directory -> a patch linked through it

    def link(i: int, key: str) -> None:
        j = owner.setdefault(key, i)
        if j != i:
            a, b = find(i), find(j)
            if a != b:
                parent[max(a, b)] = min(a, b)

    folded = [[p.casefold() for p in paths] for paths, _ in patches]
    every = {p for paths in folded for p in paths}
    moved = {p for paths, (_, in_place) in zip(folded, patches, strict=True) if not in_place
             for p in paths}
    for i, (paths, (_, in_place)) in enumerate(zip(folded, patches, strict=True)):
        for path in paths:
            link(i, path)
            if in_place and not moved:
                continue  # no patch creates or deletes anything: no directory links
            cut = path.rfind("/")
            while cut > 0:  # each directory above the path, innermost first
                d = path[:cut]
                # under a path some patch creates or deletes; or, for a patch that
                # does so itself, under a path any patch names
                if d in moved or (not in_place and d in every):
                    link(i, d)
                cut = path.rfind("/", 0, cut)
    return [find(i) for i in range(len(patches))]


def split(group_of: Sequence[int], weights: Sequence[int], parts: int) -> list[list[int]]:
    """Patch positions in at most ``parts`` bins of about equal weight, each group
    whole in one bin and each bin in series order; [] when fewer than two bins would
    hold anything."""
    sizes: dict[int, int] = {}
    for g, w in zip(group_of, weights, strict=True):
        sizes[g] = sizes.get(g, 0) + max(w, 1)
    if parts < 2 or len(sizes) < 2:
        return []
    load = [0] * min(parts, len(sizes))
    bin_of: dict[int, int] = {}
    for g in sorted(sizes, key=lambda g: (-sizes[g], g)):  # heaviest first, onto the lightest
        b = load.index(min(load))
        bin_of[g] = b
        load[b] += sizes[g]
    bins: list[list[int]] = [[] for _ in load]
    for i, g in enumerate(group_of):
        bins[bin_of[g]].append(i)
    return bins


def holds(bins: Sequence[Sequence[int]], group_of: Sequence[int]) -> bool:
    """Do ``bins`` (an earlier run's split) still cover every patch once, in series
    order within each bin, with no group across two bins?"""
    seen: dict[int, int] = {}  # group -> its bin
    count = 0
    for b, positions in enumerate(bins):
        last = -1
        for i in positions:
            if not (last < i < len(group_of)) or seen.setdefault(group_of[i], b) != b:
                return False
            last = i
            count += 1
    return count == len(group_of) and len(bins) >= 2


def cores() -> int:
    """How many parts to prove at once: the cores this process may run on, at most
    MAX_PARTS."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        n = os.cpu_count() or 1
    return min(n, MAX_PARTS)


def plan_file(stack_root: Path) -> Path:
    return fsutil.stack_cache_file(stack_root, "parsed", ".plan")


def plan_key(contents: str, parts: int, bins: Sequence[Sequence[int]]) -> str:
    """What a kept split is keyed by: the patches it was made for (``contents``, the parse
    cache's key of them), how many parts were asked for, this module's code and the split
    itself (a damaged plan file does not match its key)."""
    h = hashlib.sha256(f"{contents}\0{parts}\0{_render(bins)}".encode())
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()


def read_plan(stack_root: Path) -> tuple[list[list[int]] | None, str | None]:
    """The split the last run of this stack kept, or None (none, or unreadable), and the
    key it was kept with (``plan_key``), or None."""
    data = fsutil.read_cache(plan_file(stack_root), 1 << 20)  # untrusted: a FIFO is a miss
    if data is None:
        return None, None
    try:
        lines = data.decode("ascii").splitlines()
    except ValueError:
        return None, None
    key = lines.pop(0)[2:] if lines and lines[0].startswith("# ") else None
    try:
        return [[int(i) for i in line.split()] for line in lines], key
    except ValueError:
        return None, None


def last_plan(stack_root: Path) -> list[list[int]] | None:
    """The split the last run of this stack kept, or None (none, or unreadable)."""
    return read_plan(stack_root)[0]


def keep_plan(stack_root: Path, bins: list[list[int]], key: str | None = None) -> None:
    """Keep this run's split for the next run, with its ``plan_key`` (losing it costs only
    time)."""
    if (bins, key) != read_plan(stack_root):
        with contextlib.suppress(OSError):
            fsutil.atomic_write(plan_file(stack_root),
                                ("" if key is None else f"# {key}\n") + _render(bins))


def _render(bins: Sequence[Sequence[int]]) -> str:
    return "".join(" ".join(map(str, b)) + "\n" for b in bins)
