"""``patchctl export``: the stack as an mbox, format-patch files, a quilt series, or the
plain diffs a person submits upstream.

What is written is what ``git am`` (mbox, format-patch), ``quilt push -a``
(quilt, with ``QUILT_PATCHES=DIR``) or ``git apply`` in order (upstream) accepts
on the pinned upstream. The upstream form is the diff alone (no mail header,
commit message, trailers, diffstat or author): the stack's own text never
leaves the project through it; the person who submits writes the message. The
directory is assembled beside DIR and swapped into place (``fsutil.swap_in``),
so a reader never sees half an export and a crash leaves the old one or the new.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from patchctl import fsutil
from patchctl.errors import InputError
from patchctl.model import patchtext, schemas
from patchctl.model.patchfile import Patch
from patchctl.model.stack import Pin, Stack
from patchctl.model.stackwrite import output_areas

FORMATS = ("mbox", "format-patch", "quilt", "upstream")
MBOX = "stack.mbox"
README = "README.txt"
_NUMBER = re.compile(r"^\d{4}-")
_DEP3_ONLY = {"Description", "Author", "Last-Update"}


@dataclass
class ExportResult:
    format: str
    dest: str
    files: list[str]
    patches: int

    def to_dict(self) -> dict[str, Any]:
        return {"schema": schemas.EXPORT, **asdict(self)}


def mail_text(patch: Patch) -> str:
    """One patch as a mail ``git am`` accepts; a DEP-3 patch gets a mail header."""
    if patch.mail_form:
        text = patch.text
        if not text.startswith("From "):
            text = f"{patchtext.ZERO_FROM}\n{text}"
        return text if text.endswith("\n") else text + "\n"
    from patchctl.authoring.import_sources import _dep3_date

    trailers = [(k, v) for k, values in patch.metadata.items() if k not in _DEP3_ONLY
                for v in values]
    header = patchtext.mail_header(
        author=patch.author or "patchctl <patchctl@localhost>",
        date=_dep3_date(patch.date) if patch.date else patchtext.now_rfc2822(),
        subject=patch.subject or patch.name.removesuffix(".patch"), body=patch.body,
        trailers=trailers)
    diff = "\n".join(patch.text.split("\n")[patch.diff_line - 1:])
    return patchtext.render(header, diff if diff.endswith("\n") else diff + "\n")


def upstream_names(patches: list[Patch]) -> list[str]:
    """``NNNN-name.diff`` per patch, numbered in series order (a patch's own number and
    any folder it sits in are dropped)."""
    out = []
    for i, p in enumerate(patches, start=1):
        stem = p.name.rsplit("/", 1)[-1]
        for suffix in (".patch", ".diff"):
            stem = stem.removesuffix(suffix)
        out.append(f"{i:04d}-{_NUMBER.sub('', stem) or 'patch'}.diff")
    return out


def export_stack(stack: Stack, fmt: str, dest: Path, *, force: bool = False) -> ExportResult:
    if fmt not in FORMATS:
        raise InputError(f"--format {fmt!r}: use one of {', '.join(FORMATS)}")
    patches = stack.patches()
    if fmt != "quilt":
        odd = [p for p in patches if p.strip != 1]
        if odd:
            tool = "git apply" if fmt == "upstream" else "git am"
            raise InputError(f"{odd[0].name} is -p{odd[0].strip} in the series and `{tool}` "
                             "takes -p1 here: export it with --format quilt, or rewrite it "
                             "with `patchctl edit` + `patchctl refresh`")
    protect, inside = output_areas(stack.root.parent, stack)
    dest = fsutil.replaceable(dest, "export", protect, inside=inside)
    with fsutil.path_lock(dest, f"export to {dest}"):
        fsutil.recover(dest)
        if dest.is_dir() and any(dest.iterdir()) and not force:
            raise InputError(f"{dest} is not empty; choose a new directory or pass --force "
                             "to replace it")
        with fsutil.swap_in(dest) as staging:
            files = _write(staging, fmt, patches, stack.pin())
    return ExportResult(fmt, str(dest), files, len(patches))


def _write(out: Path, fmt: str, patches: list[Patch], pin: Pin) -> list[str]:
    if fmt == "upstream":
        names = upstream_names(patches)
        for name, p in zip(names, patches, strict=True):
            (out / name).write_bytes(p.diff_text().encode("utf-8", "surrogateescape"))
        (out / README).write_text(_readme(names, pin), encoding="utf-8")
        return [README, *names]
    if fmt == "mbox":
        # One blank line between mails, as mbox wants; git am ignores it after a diff.
        text = "\n".join(mail_text(p) for p in patches)
        (out / MBOX).write_bytes(text.encode("utf-8", "surrogateescape"))
        return [MBOX]
    if fmt == "format-patch":
        for p in patches:
            (out / p.name).write_bytes(mail_text(p).encode("utf-8", "surrogateescape"))
        return [p.name for p in patches]
    for p in patches:
        target = out / p.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p.path, target)
    series = "".join(p.name + (f" -p{p.strip}" if p.strip != 1 else "") + "\n" for p in patches)
    (out / "series").write_text(series, encoding="utf-8")
    return ["series", *(p.name for p in patches)]


def _readme(names: list[str], pin: Pin) -> str:
    from patchctl.untrusted import printable

    return "".join([
        f"Plain diffs for {printable(pin.name)} ({printable(pin.url)}).\n",
        f"Pin: {pin.commit}\n",
        "Apply them in this order with `git apply` at the pin, each on top of the ones "
        "before:\n\n",
        *(f"  {n}\n" for n in names),
        "\nThe diffs carry no commit message, no trailers and no author: the person who "
        "submits them\nwrites the commit message and the pull request text, and commits "
        "as themselves.\n",
    ])
