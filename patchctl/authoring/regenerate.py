"""Verbs that re-make patch text from the trees around it: fold, split and diff.

A patch's diff "as it applies at the pin" is regenerated from two trees of a
temporary index (pin + the patches before it; then + it) with
``gitrepo.format_diff``, so what fold and split write is patchctl's
deterministic form and exactly what applies there. Writes go through
``stackops.transaction`` (lock, open-work refusal, one swap, lock rewritten).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from patchctl import gitrepo
from patchctl.authoring.rearrange import (
    StackOpResult,
    Trees,
    check_new_name,
    pinned_repo,
    transaction,
)
from patchctl.errors import InputError
from patchctl.globs import check_globs, glob_match
from patchctl.model import lint, patchtext, schemas
from patchctl.model.stack import Stack, resolve_name


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


# -- fold -------------------------------------------------------------------------------


def fold(project: Path, stack: Stack, upstream: Path, name: str, *, into: str) -> StackOpResult:
    """Squash NAME into the adjacent patch OTHER: one patch in their place, with OTHER's
    file name, header and trailers, its Scope the union of both."""
    with transaction(project, stack, "fold") as t:
        i, j = t.index_of(name), t.index_of(into)
        if i == j:
            raise InputError(f"{t.names[i]} cannot fold into itself")
        if abs(i - j) != 1:
            raise InputError(f"{t.names[i]} (#{i + 1}) and {t.names[j]} (#{j + 1}) are not "
                             "adjacent; `patchctl move` one next to the other first")
        gone, other = t.patches[i], t.patches[j]
        lo = min(i, j)
        pin = stack.pin()
        with gitrepo.temp_index(pinned_repo(upstream, pin)) as index:
            trees = Trees(index, pin)
            before, _, after = trees.around(t.patches, lo, 2)
            diff = trees.diff(before, after)
        if not diff.strip():
            raise InputError(f"{gone.name} undoes {other.name}: folded, they change nothing; "
                             "delete both instead")
        scope = list(dict.fromkeys([*other.scope, *gone.scope]))
        header = patchtext.set_trailer(patchtext.header_text(other), "Scope", " ".join(scope),
                                       mail_form=other.mail_form) if scope else \
            patchtext.header_text(other)
        text = patchtext.render(header, diff, mail_form=other.mail_form)
        folded = patchtext.reparse(text, name=other.name, path=other.path)
        order = [*t.patches[:lo], folded, *t.patches[lo + 2:]]
        return t.commit("fold", f"folded {gone.name} into {other.name}", order,
                        changes={f"patches/{other.name}": _encode(text),
                                 f"patches/{gone.name}": None},
                        regenerated=[other.name])


# -- split ------------------------------------------------------------------------------


def split(project: Path, stack: Stack, upstream: Path, name: str, *, globs: Sequence[str],
          new_name: str | None = None, subject: str | None = None,
          concern: str | None = None) -> StackOpResult:
    """Carve the files of NAME matching ``globs`` (Scope globs) out into a new patch right
    after it. Both parts must be non-empty; together they equal NAME."""
    if not globs:
        raise InputError("--paths: give at least one path glob to carve out")
    check_globs(globs, "--paths")
    patchtext.check_options([
        ("--paths", lint.trailer_problem("Scope", " ".join(globs))),
        ("--subject", None if subject is None else lint.line_problem("the subject", subject)),
        ("--concern", None if concern is None else lint.trailer_problem("Concern", concern))])
    with transaction(project, stack, "split") as t:
        i = t.index_of(name)
        patch = t.patches[i]
        paths = list(dict.fromkeys(x for f in patch.files for x in f.paths))
        carved = [x for x in paths if any(glob_match(x, g) for g in globs)]
        rest = [x for x in paths if x not in carved]
        if not carved:
            raise InputError(f"--paths {' '.join(globs)} match no file of {patch.name} "
                             f"({', '.join(paths[:5])}); nothing was written")
        if not rest:
            raise InputError(f"--paths {' '.join(globs)} match every file of {patch.name}: "
                             "the remainder would be empty; nothing was written")
        pin = stack.pin()
        with gitrepo.temp_index(pinned_repo(upstream, pin)) as index:
            trees = Trees(index, pin)
            before, after = trees.around(t.patches, i, 1)
            first = trees.diff(before, after, rest)
            second = trees.diff(before, after, carved)
        subject = subject or f"{patch.subject} ({', '.join(globs)})"
        file = check_new_name(new_name) if new_name else \
            patchtext.numbered_name(patchtext.next_number(t.names), subject)
        if file in t.names or (stack.patches_dir / file).exists():
            raise InputError(f"{stack.patches_dir / file} already exists; pass --name")
        kept = patchtext.render(patchtext.header_text(patch), first, mail_form=patch.mail_form)
        trailers = [(k, v) for k, v in patchtext.trailers(patch) if k.lower() != "scope"]
        if concern:
            trailers = [(k, v) for k, v in trailers if k.lower() != "concern"]
            trailers.insert(0, ("Concern", concern))
        header = patchtext.mail_header(author=patch.author or gitrepo.author_ident(),
                                       date=patch.date or patchtext.now_rfc2822(),
                                       subject=subject, body=patch.body,
                                       trailers=[*trailers, ("Scope", " ".join(globs))])
        made = patchtext.render(header, second)
        order = [*t.patches[:i],
                 patchtext.reparse(kept, name=patch.name, path=patch.path),
                 patchtext.reparse(made, name=file, path=stack.patches_dir / file),
                 *t.patches[i + 1:]]
        return t.commit("split", f"split {', '.join(carved)} out of {patch.name} into {file}",
                        order, changes={f"patches/{patch.name}": _encode(kept),
                                        f"patches/{file}": _encode(made)},
                        regenerated=[patch.name])


# -- diff -------------------------------------------------------------------------------


@dataclass
class DiffResult:
    what: str  # the patch file, or "edit of <file>"
    stat: str
    diff: str

    def to_dict(self) -> dict[str, Any]:
        return {"schema": schemas.DIFF, **asdict(self)}


def diff(project: Path, stack: Stack, upstream: Path | None, name: str | None) -> DiffResult:
    """NAME's diff as it applies at the pin; without NAME, the changes made in the open
    edit's work tree since it was opened (or last refreshed). Read-only."""
    if name is None:
        from patchctl.authoring.edit import edit_dir, open_edit

        state = open_edit(project)
        if state is None:
            raise InputError("no edit is open: name a patch (`patchctl diff NAME`), or open "
                             "one with `patchctl edit NAME`")
        work = edit_dir(project) / "work"
        git_dir = work / ".git"
        text = gitrepo.format_diff(git_dir, state.tree, gitrepo.snapshot_tree(work))
        return _split_stat(f"edit of {state.target}", text)
    if upstream is None:
        raise InputError("diff NAME needs the upstream (--upstream)")
    patches = stack.patches()
    i = resolve_name([p.name for p in patches], name, where=str(stack.series_path))
    pin = stack.pin()
    with gitrepo.temp_index(pinned_repo(upstream, pin)) as index:
        trees = Trees(index, pin)
        before, after = trees.around(patches, i, 1)
        return _split_stat(patches[i].name, trees.diff(before, after))


def _split_stat(what: str, text: str) -> DiffResult:
    at = text.find("diff --git ")
    return DiffResult(what, text[:at].rstrip("\n") + "\n" if at > 0 else "",
                      text[at:] if at >= 0 else "")
