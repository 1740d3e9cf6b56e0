"""Creating the stack and adding to it: init and import (new, edit and refresh
are in authoring/edit.py).

Every change to ``stack/`` goes through ``stackwrite.replace_stack`` (one
atomic swap) under the project lock, and rewrites the lock. Patches are
written in patchctl's deterministic form (model/patchtext.py), regenerated from the
trees around them, so refreshing an unchanged patch leaves its bytes alone.
"""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from patchctl import fsutil, gitrepo
from patchctl.authoring import import_sources as importing
from patchctl.errors import EnvironmentFailure, InputError, StackError
from patchctl.model import grades, lint, patchtext, schemas, stackwrite
from patchctl.model.fingerprint import make_lock
from patchctl.model.patchfile import FileDiff, Patch, apply_hunks, read_patch
from patchctl.model.stack import (
    LOCK_FILE,
    PIN_FILE,
    SERIES,
    Pin,
    Stack,
    check_commit_id,
    check_patch_name,
    render_lock,
)
from patchctl.textout import count

SERIES_HEADER = (
    "# patchctl series: one patch per line, in apply order; `-pN` sets the strip level.\n"
)


@dataclass(frozen=True)
class InitResult:
    stack: Stack
    pin: Pin
    checked: bool
    why: str = ""


def init_stack(project: Path, *, url: str, pin: str, name: str | None = None,
               record_url: str | None = None) -> InitResult:
    stack = Stack(project / "stack")
    for f in (SERIES, PIN_FILE, LOCK_FILE):
        if (stack.root / f).exists():
            raise InputError(f"{stack.root / f} already exists; this project has a stack")
    local = Path(url).expanduser()
    is_local = local.exists()
    recorded_url = record_url or (str(local.resolve()) if is_local else url)
    name = name or recorded_url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git") or "upstream"
    commit, tag, checked, why = pin.lower(), None, False, ""
    try:
        if is_local:  # a clone, or a bundle (made into a repo in the cache)
            repo = gitrepo.bundle_repo(local) if local.is_file() else gitrepo.git_dir(local)
        else:
            repo = gitrepo.cached_upstream(url, check_commit_id(commit, what="--pin"))
        ref = gitrepo.resolve_ref(repo, pin, what="--pin")
        if ref is None:
            raise InputError(f"--pin {pin} is not a commit in upstream {url}")
        tag = ref.name  # a tag or branch: kept as information next to the real pin
        commit, checked = ref.commit, True
    except EnvironmentFailure as e:
        check_commit_id(commit, what="--pin")
        why = str(e)
    check_commit_id(commit, what="--pin")
    the_pin = Pin(name=name, url=recorded_url, commit=commit, tag=tag)
    stack.patches_dir.mkdir(parents=True, exist_ok=True)
    fsutil.atomic_write(stack.series_path, SERIES_HEADER)
    fsutil.atomic_write(stack.pin_path, the_pin.to_toml())
    fsutil.atomic_write(stack.lock_path, render_lock(make_lock(the_pin, [])))
    return InitResult(stack=stack, pin=the_pin, checked=checked, why=why)


# -- import ---------------------------------------------------------------------------------


@dataclass
class Imported:
    file: str
    subject: str
    source: str
    grade: str  # how it went onto the stack: exact | offset | 3way
    added: list[str] = field(default_factory=list)  # trailers filled in with defaults


@dataclass
class ImportResult:
    stack: str
    patches: list[Imported]
    fingerprint: str

    def to_dict(self) -> dict[str, Any]:
        return {"schema": schemas.IMPORT, **asdict(self)}


def import_patches(project: Path, stack: Stack, upstream: Path, sources: list[str], *,
                   concern: str | None = None, from_repo: Path | None = None,
                   force: bool = False,
                   progress: Callable[[str], None] | None = None) -> ImportResult:
    """Append patches from ``sources`` to the series, in patchctl's form; all or nothing.

    Each is applied on top of the stack at the pin (plain, else three-way) and
    re-made from the trees around it, so what lands in ``stack/`` is exactly
    what applies there. One that does not apply stops the import: nothing is
    written. A file in ``patches/`` that the series does not list (one being
    written by hand) is never overwritten unless ``force``.
    """
    patchtext.check_options([("--concern", None if concern is None else
                              lint.trailer_problem("Concern", concern))])
    with stackwrite.stack_lock(project, f"import into {stack.root}"), \
            tempfile.TemporaryDirectory(prefix="patchctl-import-") as tmp:
        snap = stackwrite.snapshot(stack.root)
        pin = stack.pin()
        upstream = gitrepo.git_dir(upstream)
        say = progress or (lambda _m: None)
        existing = stack.patches()
        say(f"reading {len(sources)} source(s)")
        candidates = importing.collect(sources, Path(tmp), from_repo=from_repo)
        names = [p.name for p in existing]
        number = patchtext.next_number(names)
        changes: dict[str, bytes | None] = {}
        made: list[Patch] = []
        report: list[Imported] = []
        with gitrepo.temp_index(upstream) as index:
            say(f"applying the stack ({count(len(existing), 'patch')}) at the pin")
            _apply_stack(index, pin, existing)
            say(f"applying {len(candidates)} patch(es) on top")
            steps = _apply_candidates(index, upstream, pin, existing, candidates, Path(tmp), say)
            for c, (grade, diff) in zip(candidates, steps, strict=True):
                files = diff_paths(diff)
                added = importing.fill_trailers(c, concern=concern, files=files)
                try:
                    header = patchtext.mail_header(
                        author=c.author or gitrepo.author_ident(),
                        date=c.date or patchtext.now_rfc2822(), subject=c.subject,
                        body=c.body, trailers=c.trailers)
                except InputError as e:
                    raise InputError(f"{c.source}: {e}") from e
                name = patchtext.numbered_name(number, c.subject)
                number += 1
                if name in names:
                    raise InputError(f"{name} is already in the series")
                check_patch_name(name)
                if os.path.lexists(stack.patches_dir / name) and not force:
                    raise InputError(f"{stack.patches_dir / name} exists but the series does "
                                     "not list it (a patch written by hand?); move it away, or "
                                     "pass --force to overwrite it; nothing was imported")
                text = patchtext.render(header, diff)
                changes[f"patches/{name}"] = text.encode("utf-8", "surrogateescape")
                made.append(patchtext.reparse(text, name=name, path=stack.patches_dir / name))
                names.append(name)
                report.append(Imported(name, c.subject, c.source, grade, added))
        say(f"writing {len(made)} patch(es) into {stack.root}")
        lock = make_lock(pin, existing + made)
        series = stack.series_path.read_text(encoding="utf-8")
        changes["series"] = (series.rstrip("\n") + "\n" +
                             "".join(f"{p.name}\n" for p in made)).lstrip("\n").encode()
        changes["stack.lock"] = render_lock(lock).encode()
        stackwrite.replace_stack(stack, changes, expect=snap)
        return ImportResult(str(stack.root), report, lock.fingerprint)


def series_items(patches: list[Patch]) -> list[gitrepo.SeriesItem]:
    return [gitrepo.SeriesItem(p.path.absolute(), p.strip, len(p.files)) for p in patches]


def _apply_stack(index: gitrepo.TempIndex, pin: Pin, patches: list[Patch]) -> None:
    index.read_tree(pin.commit)
    done = index.apply_series(series_items(patches))
    for p, a in zip(patches, done.applied, strict=False):
        if not a.ok:
            raise StackError(f"{p.name} does not apply at the pin; fix the stack first "
                             "(`patchctl verify` says why)")


_BATCH = 8  # from this many candidates on, the batched path beats a few git calls each


def _apply_candidates(index: gitrepo.TempIndex, upstream: Path, pin: Pin, existing: list[Patch],
                      candidates: list[importing.Candidate], tmp: Path,
                      say: Callable[[str], None]) -> list[tuple[str, str]]:
    """(grade, diff re-made from the trees around it) of each candidate, applied in turn
    on the stack at the pin, which ``index`` holds; it then holds them all."""
    if len(candidates) >= _BATCH:
        done = _apply_batched(index, upstream, pin, existing, candidates, tmp / "batch")
        if done is not None:
            return done
    out = []
    for n, c in enumerate(candidates, start=1):
        say(f"[{n}/{len(candidates)}] {c.source}")
        before = index.write_tree()
        grade = _apply_candidate(index, c)
        after = index.write_tree()
        if after == before:
            raise InputError(f"{c.source}: changes nothing on top of the stack "
                             "(already applied?); nothing was imported")
        out.append((grade, gitrepo.format_diff(index.repo, before, after, env=index.env)))
    return out


def _apply_batched(index: gitrepo.TempIndex, upstream: Path, pin: Pin, existing: list[Patch],
                   candidates: list[importing.Candidate],
                   work: Path) -> list[tuple[str, str]] | None:
    """The common case in a handful of git calls, however many candidates.

    One `git apply --cached -v` per strip level (``apply_series``' batch) proves that
    every candidate applies plainly on the stack, and says which had offsets. The files after
    each candidate are then made here, hunk by hunk as git placed them
    (``patchfile.apply_hunks``), and one `git fast-import` turns them into a tree
    per candidate; the last must be git's own, or nothing of this is used. One
    `git diff-tree --stdin` re-makes the diffs. None (``index`` as it was) when a
    candidate needs more than plain text edits (three-way, binary, modes, renames,
    deletions): the caller then goes one by one and says which fails.
    """
    base = index.write_tree()
    try:
        parsed = [read_patch(c.diff, strip=c.strip) for c in candidates]
    except StackError:
        return None
    if any(p.crlf_damaged or not all(_text_edit(f) for f in p.files) for p in parsed):
        return None
    done = index.apply_series([gitrepo.SeriesItem(c.diff, c.strip, len(p.files))
                               for c, p in zip(candidates, parsed, strict=True)],
                              per_patch=False, base=base)
    if not done.batched:
        return None  # the index is as it was
    final = index.write_tree()
    paths = sorted({f.path for p in parsed for f in p.files})
    files = {p: blob for p, blob in gitrepo.read_blobs(index.repo, base, paths,
                                                       env=index.env).items()
             if blob[0] in ("100644", "100755")}  # a symlink is never edited as text
    steps: list[dict[str, tuple[str, bytes]]] = []
    for p in parsed:
        step = {}
        for f in p.files:
            mode, data = files.get(f.path, ("100644", b"")) if f.source else ("100644", b"")
            after = apply_hunks(data, f.hunks)
            if after is None:
                index.read_tree(base)
                return None
            files[f.path] = step[f.path] = (mode, after)
        steps.append(step)
    trees = gitrepo.commit_steps(index.repo, base, steps, work=work, env=index.env)
    if not trees or trees[-1] != final or \
            any(a == b for a, b in itertools.pairwise([base, *trees])):
        index.read_tree(base)
        return None
    diffs = gitrepo.format_diffs(work, [base, *trees])
    return [(grades.clean(a.offsets), d) for a, d in zip(done.applied, diffs, strict=True)]


def _text_edit(f: FileDiff) -> bool:
    """Text hunks that edit or create one regular file: what the batched path re-makes."""
    return bool(f.hunks) and not f.binary and f.target is not None and \
        f.source in (None, f.target) and all(m == "new file mode 100644" for m in f.mode_lines)


def _apply_candidate(index: gitrepo.TempIndex, c: importing.Candidate) -> str:
    done = index.apply_series([gitrepo.SeriesItem(c.diff, c.strip)], on_failure="three_way")
    a = done.applied[0]
    if a.ok:
        return grades.THREE_WAY if a.three_way else grades.clean(a.offsets)
    assert a.error is not None
    raise InputError(f"{c.source}: does not apply on top of the stack at the pin "
                     f"({a.error.message}); nothing was imported")


def diff_paths(diff: str) -> list[str]:
    patch = patchtext.reparse(patchtext.render("", diff, mail_form=False), name="diff",
                              path=Path("diff"))
    return list(dict.fromkeys(p for f in patch.files for p in f.paths))
