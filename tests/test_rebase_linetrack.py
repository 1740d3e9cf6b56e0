"""Carrying a patch's line ranges forward through upstream commits
(patchctl/rebase/linetrack.py)."""

from __future__ import annotations

from patchctl.gitrepo import FileChange
from patchctl.rebase.linetrack import hunk_ranges, touching


def ch(name: str, *hunks: tuple[int, int, int, int]) -> FileChange:
    return FileChange(name, name, tuple(hunks))


def names(hits) -> list[str]:
    return [h.commit for h in hits]


def test_a_change_above_the_range_moves_it_and_is_not_a_cause() -> None:
    changes = [ch("insert-above", (2, 0, 3, 5)),      # 5 lines after line 2: 10..12 -> 15..17
               ch("edit-moved", (16, 1, 16, 1)),      # now inside the moved range
               ch("edit-old-place", (11, 1, 11, 1))]  # where the lines were: no longer theirs
    assert names(touching([(10, 12)], changes)) == ["edit-moved"]


def test_deletions_and_insertions_inside_and_at_the_edges() -> None:
    assert names(touching([(10, 12)], [ch("del", (11, 1, 10, 0))])) == ["del"]
    assert names(touching([(10, 12)], [ch("ins-inside", (10, 0, 11, 2))])) == ["ins-inside"]
    assert names(touching([(10, 12)], [ch("ins-after", (12, 0, 13, 2))])) == []
    assert names(touching([(10, 12)], [ch("del-above", (3, 4, 2, 0)),
                                        ch("edit", (7, 1, 7, 1))])) == ["edit"]


def test_a_rewritten_range_keeps_tracking_its_replacement() -> None:
    changes = [ch("rewrite", (9, 5, 9, 2)),   # 9..13 -> 9..10: the range 10..12 maps to 9..10
               ch("later", (10, 1, 10, 1)), ch("below", (30, 1, 30, 1))]
    assert names(touching([(10, 12)], changes)) == ["rewrite", "later"]


def test_hunk_ranges_skip_pure_insertions() -> None:
    assert hunk_ranges([(10, 7), (0, 0), (40, 1)]) == [(10, 16), (40, 40)]
