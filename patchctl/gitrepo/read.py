"""Reading an upstream at one commit without a work tree: files, authors, grep, pickaxe.

Used by draft-outreach (policy files, reviewers, upstream facts) and
upstream-status. Every call reads; nothing here writes to the repository.
Text that is only ever shown (author names, commit subjects, grep lines) is
returned through ``untrusted.printable``: an upstream's control characters
reach no report, brief or terminal. File contents are returned as they are.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from patchctl.gitrepo.core import run_git, run_git_bytes
from patchctl.gitrepo.missing import missing_files, objects_dir
from patchctl.gitrepo.network import is_partial
from patchctl.untrusted import printable

# No user config (log.showSignature, mailmap settings, grep defaults) may change these
# answers: run_git reads none (core.py).


def read_files(repo: Path, commit: str, paths: Sequence[str]) -> dict[str, str | None]:
    """The text of each path at ``commit``; None when it is absent there (or not a file)."""
    blobs = read_blobs(repo, commit, paths)
    return {p: blobs[p][1].decode("utf-8", "surrogateescape") if p in blobs else None
            for p in paths}


def read_blobs(repo: Path, treeish: str, paths: Sequence[str], *,
               env: dict[str, str] | None = None) -> dict[str, tuple[str, bytes]]:
    """path -> (mode, contents) of the files and symlinks among ``paths`` in ``treeish``,
    in two git calls however many paths (absent paths and directories are left out); the
    upstream lacking a blob is ``MissingFiles`` naming its paths."""
    if not paths:
        return {}
    listed = run_git(["ls-tree", "-r", "-z", "--full-tree", treeish, "--", *paths], repo=repo,
                     env=env).stdout
    wanted = set(paths)
    entries = []
    for item in listed.split("\0"):
        if item:
            meta, path = item.split("\t", 1)
            mode, kind, blob = meta.split()
            if kind == "blob" and path in wanted:
                entries.append((path, mode, blob))
    if not entries:
        return {}
    # None: a snapshot or a partial clone that cannot fetch it
    found = _cat_batch(repo, [b for _, _, b in entries], env=env)
    lacking = [path for (path, _, _), data in zip(entries, found, strict=True) if data is None]
    if lacking:
        raise missing_files(lacking, excludable=False)
    return {path: (mode, data) for (path, mode, _), data in zip(entries, found, strict=True)
            if data is not None}


def read_objects(repo: Path, names: Sequence[str], *,
                 env: dict[str, str] | None = None) -> dict[str, bytes]:
    """name -> contents of each blob named by its (possibly abbreviated) object id, as a
    patch's ``index`` line names them; a name the repository lacks, or that is ambiguous,
    is left out. A partial clone fetches none: its missing blobs are left out too."""
    with _without_lazy_fetch(repo) as where:
        found = _cat_batch(where, list(names), env=env)
    return {n: data for n, data in zip(names, found, strict=True) if data is not None}


def _cat_batch(repo: Path, names: Sequence[str], *,
               env: dict[str, str] | None) -> list[bytes | None]:
    """Each object's contents, in order, in one ``cat-file --batch``; None for one it lacks
    (``missing``) or cannot tell from another (``ambiguous``)."""
    if not names:
        return []
    out = run_git_bytes(["cat-file", "--batch"], repo=repo, env=env,
                        input="".join(f"{n}\n" for n in names).encode())
    pos, found = 0, list[bytes | None]()
    for _ in names:
        nl = out.index(b"\n", pos)
        header = out[pos:nl].split()
        if header[-1:] in ([b"missing"], [b"ambiguous"]):
            found.append(None)
            pos = nl + 1
            continue
        size = int(header[2])
        found.append(out[nl + 1:nl + 1 + size])
        pos = nl + 1 + size + 1
    return found


def path_authors(repo: Path, commit: str, paths: Sequence[str], *,
                 commits: int = 200) -> list[tuple[str, int]]:
    """Author names of the last ``commits`` non-merge commits touching ``paths`` up to
    ``commit``, most frequent first (ties by name); names only, never e-mail addresses."""
    if not paths:
        return []
    r = run_git(["log", "--no-merges", f"-n{commits}", "--format=%an", commit, "--", *paths],
                repo=repo, check=False)
    counts = Counter(printable(n.strip()) for n in r.stdout.split("\n") if n.strip())
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def list_files(repo: Path, commit: str, pathspecs: Sequence[str]) -> list[str]:
    """The paths of the files (blobs; not symlinks or submodules) at ``commit`` under
    ``pathspecs`` (paths or directories; none: the whole tree), in git's order."""
    out = run_git(["ls-tree", "-r", "-z", "--full-tree", commit, "--", *pathspecs],
                  repo=repo).stdout
    files = []
    for item in out.split("\0"):
        if item:
            meta, path = item.split("\t", 1)
            mode, kind, _ = meta.split()
            if kind == "blob" and mode in ("100644", "100755"):
                files.append(path)
    return files


@dataclass(frozen=True)
class GrepHit:
    path: str
    line: int
    text: str


def grep_fixed(repo: Path, commit: str, words: Sequence[str], pathspecs: Sequence[str] = (),
               *, whole_words: bool = True, env: dict[str, str] | None = None,
               only_matching: bool = False) -> list[GrepHit]:
    """Lines at ``commit`` (or a tree) holding any of ``words`` (fixed strings), in path/line
    order; ``env``: a temp index's, to search a tree written there; ``only_matching``: a
    hit's text is the word it matched, once per match (which of many words stand, without
    reading every line that holds one)."""
    if not words:
        return []
    args = ["grep", "-n", "-I", "-F", "--full-name", "--no-color"]
    if whole_words:
        args.append("-w")
    if only_matching:
        args.append("-o")
    for w in words:
        args += ["-e", w]
    args += [commit, "--", *pathspecs]
    with _without_lazy_fetch(repo) as where:
        r = run_git(args, repo=where, env=env, check=False)
    hits = []
    prefix = f"{commit}:"
    for line in r.stdout.split("\n"):  # not splitlines(): a \x0c in a line starts none
        line = line.removeprefix(prefix)
        path, _, rest = line.partition(":")
        number, _, text = rest.partition(":")
        if number.isdigit():
            hits.append(GrepHit(path, int(number), printable(text.removesuffix("\r"))))
    return hits


class LineSearch:
    """Which files of ``tree`` hold each of some lines (fixed strings, anywhere in a line of
    the file). A ``git grep`` reads the whole tree whatever it looks for, so lines are asked
    for together (``files``) and every answer is kept: a rebase asks about the lines of each
    conflicting patch, and several patches ask about the same tree."""

    def __init__(self, repo: Path, tree: str) -> None:
        self.repo, self.tree = repo, tree
        self._found: dict[str, set[str]] = {}

    def files(self, lines: Sequence[str]) -> dict[str, set[str]]:
        todo = sorted(set(lines) - self._found.keys())
        for line in todo:
            self._found[line] = set()
        shown = {line: printable(line) for line in todo}  # as grep_fixed gives a hit's text
        for hit in grep_fixed(self.repo, self.tree, todo, whole_words=False):
            for line in todo:
                if shown[line] in hit.text:
                    self._found[line].add(hit.path)
        return {line: self._found[line] for line in lines}


@contextlib.contextmanager
def _without_lazy_fetch(repo: Path) -> Iterator[Path]:
    """Where to search ``repo``'s trees: itself, or, for a partial clone that borrows its
    objects (the rebase work tree, a promisor of the upstream whose objects it already
    reaches), a bare probe borrowing the same objects with no promisor. There git searched
    a tree by fetching each blob the upstream lacks, seconds each (a mirror without its
    largest files), and stopped at the first it could not fetch, so the files after it were
    never searched; the probe says it cannot read that blob and goes on."""
    objects = objects_dir(repo)
    if not (objects / "info" / "alternates").is_file() or not is_partial(repo):
        yield repo
        return
    with tempfile.TemporaryDirectory(prefix="patchctl-grep-") as tmp:
        probe = Path(tmp) / "probe.git"
        run_git(["init", "-q", "--bare", "--", str(probe)])
        (probe / "objects" / "info" / "alternates").write_text(f"{objects.resolve()}\n")
        yield probe


def renamed_paths(repo: Path, old: str, new: str, paths: Sequence[str]) -> dict[str, str]:
    """Where git's rename detection (``diff -M``, its default 50% similarity) says each of
    ``paths`` went between ``old`` and ``new``: path -> its path in ``new``, for the paths
    ``new`` lacks and git finds a rename for. Only files whose contents this clone has take
    part: a snapshot lacks some blobs, none is fetched, and a rename git cannot read is not
    followed."""
    wanted = set(paths)
    with _without_lazy_fetch(repo) as where:
        raw = run_git(["diff-tree", "-r", "-z", "--no-renames", "--diff-filter=AD",
                       "--end-of-options", old, new], repo=where).stdout.split("\0")
        blobs: dict[str, str] = {}  # the files deleted (of ``paths``) and added: their blobs
        for meta, path in zip(raw[0::2], raw[1::2], strict=False):
            fields = meta.split()
            if len(fields) == 5 and (fields[4] == "A" or path in wanted):
                blobs[path] = fields[3 if fields[4] == "A" else 2]
        if not wanted.intersection(blobs):
            return {}
        listed = run_git(["cat-file", "--batch-check=%(objectname) %(objecttype)"], repo=where,
                         input="".join(f"{b}\n" for b in blobs.values())).stdout
        have = {ln.split()[0] for ln in listed.splitlines() if ln.endswith(" blob")}
        r = run_git(["diff-tree", "-r", "-z", "-M", "--diff-filter=R", "--name-status",
                     "--end-of-options", old, new, "--",
                     *(f":(literal){p}" for p, b in sorted(blobs.items()) if b in have)],
                    repo=where, check=False)
    out = r.stdout.split("\0") if r.returncode == 0 else []
    return {a: b for status, a, b in zip(out[0::3], out[1::3], out[2::3], strict=False)
            if status.startswith("R") and a in wanted}


@dataclass(frozen=True)
class CommitRef:
    commit: str
    date: str  # YYYY-MM-DD, author date
    subject: str


def first_adding(repo: Path, commit: str, text: str, path: str) -> CommitRef | None:
    """The oldest commit up to ``commit`` whose diff of ``path`` changes how often ``text``
    occurs (``git log -S``): usually the one that introduced it."""
    r = run_git(["log", "--no-merges", "--reverse", "--format=%H%x00%as%x00%s", f"-S{text}",
                 commit, "--", path], repo=repo, check=False)
    first = r.stdout.split("\n", 1)[0]
    if r.returncode != 0 or not first:
        return None
    sha, date, subject = first.split("\0", 2)
    return CommitRef(sha, date, printable(subject))


@dataclass(frozen=True)
class FileCommit:
    author: str  # names only, never e-mail addresses
    committer: str
    trailers: tuple[tuple[str, str], ...]  # (key, value) of the message's trailer block


def file_history(path: Path) -> tuple[list[FileCommit], bool] | None:
    """The commits of the git work tree holding ``path`` that touched it (renames
    followed), newest first, and whether the clone is shallow (older commits absent);
    None when ``path`` is in no git work tree."""
    where = path.parent
    r = run_git(["rev-parse", "--is-inside-work-tree", "--is-shallow-repository"],
                repo=where, check=False)
    if r.returncode != 0 or r.stdout.split()[:1] != ["true"]:
        return None
    shallow = r.stdout.split()[1:2] == ["true"]
    # -z: NUL after each commit; names hold no NUL and unfolded trailers no newline, so
    # the output is (author, committer, trailer lines) triples whatever the text holds
    r = run_git(["log", "-z", "--follow", "--format=%an%x00%cn%x00%(trailers:only,unfold)",
                 "--", path.name], repo=where, check=False)
    if r.returncode != 0:  # e.g. a repository without commits yet
        return [], shallow
    fields = r.stdout.split("\0")
    commits = []
    for i in range(0, len(fields) - 2, 3):
        author, committer, trailers = fields[i:i + 3]
        pairs = tuple((printable(k.strip()), printable(v.strip()))
                      for t in trailers.split("\n") if t.strip()
                      for k, _, v in [t.partition(":")])
        commits.append(FileCommit(printable(author.strip()), printable(committer.strip()),
                                  pairs))
    return commits, shallow


def commit_ref(repo: Path, commit: str) -> CommitRef:
    out = run_git(["log", "-1", "--format=%H%x00%as%x00%s", commit],
                  repo=repo).stdout.rstrip("\n")
    sha, date, subject = out.split("\0", 2)
    return CommitRef(sha, date, printable(subject))
