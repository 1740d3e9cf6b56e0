"""Everything patchctl asks of git, as typed functions over plain values.

Every git process runs in a process group of its own that its deadline, a flood of
processes or an interrupt ends whole (``patchctl.procs``). No module outside this
package runs git.

- ``core``: the one subprocess helper and small queries;
- ``index``: temporary indexes (verify, apply --into, reproduce);
- ``applyout``: what `git apply` says beyond success (hunk offsets, whitespace warnings,
  why it refused), read only from a run that says any;
- ``cache``: upstream URLs and bundles fetched once into the cache;
- ``network``: every fetch, and how a server answers (a plain HTTP one is never fetched
  from as a partial clone);
- ``history``: small histories (apply --commits, edit, rebase-pin, import, export);
- ``worktree``: the edit and rebase work trees (sparse when the upstream lacks blobs);
- ``missing``: an upstream that lacks blobs: which files, and the one error naming them;
- ``read``: files, authors and grep at one commit (draft-outreach, upstream-status);
- ``blame``: the recent commits that last changed given lines at one commit, and a shallow
  clone's grafts (burden).

``applyout``, ``blame``, ``cache``, ``history``, ``network``, ``read`` and ``worktree`` are
imported when one of their names is first asked for: verify of a clean stack and ``--help``
need none of them (~10 ms of start-up).

May import: the helpers beside ``patchctl.cli`` only. Within it ``core`` is at the bottom
(every module runs git through it) and ``index`` imports no module that imports it.
"""

from typing import TYPE_CHECKING

from patchctl.gitrepo.core import (
    EMPTY_TREE,
    Ref,
    Result,
    commit_and_tree,
    first_parent_path,
    git_dir,
    git_env,
    is_ancestor,
    network_timeout,
    ref_names,
    refuse_option,
    resolve_commit,
    resolve_ref,
    run_git,
    subject,
    tree_of,
    tree_symlinks,
    user_config_env,
    version,
)
from patchctl.gitrepo.index import (
    Applied,
    ApplyRun,
    RoundTrip,
    SeriesItem,
    SeriesResult,
    StoreIndex,
    TempIndex,
    applied_from,
    index_paths,
    indexed_tree,
    remove_from_index,
    store_index,
    switch_tree_in_place,
    temp_index,
)
from patchctl.gitrepo.missing import MissingFiles

if TYPE_CHECKING:
    from patchctl.gitrepo.applyout import ApplyError, HunkOffset, WhitespaceWarning
    from patchctl.gitrepo.blame import (
        Blame,
        BlamedCommit,
        blame_recent,
        committer_time,
        line_counts,
        reached_since,
        shallow_grafts,
    )
    from patchctl.gitrepo.cache import (
        bundle_repo,
        cached_bundle,
        cached_upstream,
        default_cache_dir,
        upstream_cache_dir,
    )
    from patchctl.gitrepo.history import (
        CommitInfo,
        CommitMessage,
        FileChange,
        author_ident,
        changed_paths,
        commit_info,
        commit_patch,
        commit_steps,
        dirty_paths,
        file_changes,
        format_diff,
        format_diffs,
        head_commit,
        init_history,
        mailinfo,
        mailsplit,
        merge_base,
        patch_id,
        range_messages,
        range_patch_ids,
        rev_range,
        seed_blobs,
        unmerged_paths,
    )
    from patchctl.gitrepo.network import fetch_ref
    from patchctl.gitrepo.read import (
        CommitRef,
        FileCommit,
        GrepHit,
        LineSearch,
        commit_ref,
        file_history,
        first_adding,
        grep_fixed,
        list_files,
        path_authors,
        read_blobs,
        read_files,
        read_objects,
        renamed_paths,
    )
    from patchctl.gitrepo.worktree import (
        GitWork,
        MarkedApply,
        WorktreeStatus,
        apply_with_markers,
        commit_index,
        cut_short_checkout,
        index_tree,
        rej_files,
        reset_work,
        scratch_checkout,
        snapshot_tree,
        sparse_patterns,
        unfinished_operation,
        unrecorded_work,
        work_head,
        worktree_status,
    )

__all__ = [
    "EMPTY_TREE",
    "Applied",
    "ApplyError",
    "ApplyRun",
    "Blame",
    "BlamedCommit",
    "CommitInfo",
    "CommitMessage",
    "CommitRef",
    "FileChange",
    "FileCommit",
    "GitWork",
    "GrepHit",
    "HunkOffset",
    "LineSearch",
    "MarkedApply",
    "MissingFiles",
    "Ref",
    "Result",
    "RoundTrip",
    "SeriesItem",
    "SeriesResult",
    "StoreIndex",
    "TempIndex",
    "WhitespaceWarning",
    "WorktreeStatus",
    "applied_from",
    "apply_with_markers",
    "author_ident",
    "blame_recent",
    "bundle_repo",
    "cached_bundle",
    "cached_upstream",
    "changed_paths",
    "commit_and_tree",
    "commit_index",
    "commit_info",
    "commit_patch",
    "commit_ref",
    "commit_steps",
    "committer_time",
    "cut_short_checkout",
    "default_cache_dir",
    "dirty_paths",
    "fetch_ref",
    "file_changes",
    "file_history",
    "first_adding",
    "first_parent_path",
    "format_diff",
    "format_diffs",
    "git_dir",
    "git_env",
    "grep_fixed",
    "head_commit",
    "index_paths",
    "index_tree",
    "indexed_tree",
    "init_history",
    "is_ancestor",
    "line_counts",
    "list_files",
    "mailinfo",
    "mailsplit",
    "merge_base",
    "network_timeout",
    "patch_id",
    "path_authors",
    "range_messages",
    "range_patch_ids",
    "reached_since",
    "read_blobs",
    "read_files",
    "read_objects",
    "ref_names",
    "refuse_option",
    "rej_files",
    "remove_from_index",
    "renamed_paths",
    "reset_work",
    "resolve_commit",
    "resolve_ref",
    "rev_range",
    "run_git",
    "scratch_checkout",
    "seed_blobs",
    "shallow_grafts",
    "snapshot_tree",
    "sparse_patterns",
    "store_index",
    "subject",
    "switch_tree_in_place",
    "temp_index",
    "tree_of",
    "tree_symlinks",
    "unfinished_operation",
    "unmerged_paths",
    "unrecorded_work",
    "upstream_cache_dir",
    "user_config_env",
    "version",
    "work_head",
    "worktree_status",
]

_LATER = ("applyout", "blame", "cache", "history", "network", "read", "worktree")

if not TYPE_CHECKING:  # hidden from mypy, which would let any misspelt name through

    def __getattr__(name: str) -> object:
        """A name of ``_LATER``'s modules, imported on first use (PEP 562)."""
        import importlib

        if name in __all__:
            for module in _LATER:
                value = getattr(importlib.import_module(f"{__name__}.{module}"), name, None)
                if value is not None:
                    globals()[name] = value
                    return value
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
