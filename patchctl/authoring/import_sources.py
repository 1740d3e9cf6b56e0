"""Reading patches to import: format-patch files, mboxes, quilt series, commit ranges.

Each source becomes one or more ``Candidate``s: the author, date, subject,
body and trailers of a change, and a file ``git apply`` can read its diff
from. Applying them on the stack and writing patchctl's own form is
``authoring.import_patches``' job; nothing here touches the stack.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from patchctl import gitrepo
from patchctl.errors import InputError, StackError
from patchctl.model import patchtext
from patchctl.model.patchfile import parse_patch
from patchctl.model.stack import parse_series

_MAIL_KEY = re.compile(rb"^(From|Subject|Date):", re.IGNORECASE)
# DEP-3 fields that carry over as trailers when a quilt patch is imported.
DEP3_CARRIED = ("Upstream-Status", "Concern", "Scope", "Reproducer", "Origin", "Bug",
                "Forwarded", "Applied-Upstream", "Binary")


@dataclass
class Candidate:
    source: str  # for reports: a path, `path#N` for the Nth mail of an mbox, `repo@commit`
    subject: str
    author: str
    date: str
    body: str
    trailers: list[tuple[str, str]]
    diff: Path  # what `git apply` reads (leading non-diff text is ignored by it)
    strip: int = 1
    dep3: dict[str, list[str]] = field(default_factory=dict)


def collect(sources: list[str], tmp: Path, *, from_repo: Path | None = None) -> list[Candidate]:
    out: list[Candidate] = []
    for n, spec in enumerate(sources):
        work = tmp / f"src{n}"
        work.mkdir()
        if from_repo is not None:
            out += _from_commits(from_repo, spec, work)
            continue
        path = Path(spec).expanduser()
        if path.is_dir():
            out += _from_directory(path, work)
        elif path.is_file() and _is_series(path):
            out += _from_series(path, work)
        elif path.is_file():
            out += _from_file(path, work, strip=1, label=spec)
        else:
            raise InputError(f"{spec}: no such file or directory to import")
    if not out:
        raise InputError("nothing to import: the sources hold no patches")
    return out


_CONFLICTS_NOTE = re.compile(r"\n# Conflicts:\n(?:#\t[^\n]*(?:\n|$))+")


def _from_commits(repo: Path, spec: str, work: Path) -> list[Candidate]:
    git_dir = gitrepo.git_dir(repo)
    out = []
    for i, commit in enumerate(gitrepo.rev_range(git_dir, spec)):
        info = gitrepo.commit_info(git_dir, commit)
        diff = work / f"{i:04d}.diff"
        diff.write_text(gitrepo.format_diff(git_dir, info.parent_tree, info.tree),
                        encoding="utf-8", errors="surrogateescape")
        out.append(commit_candidate(info, f"{repo}@{commit[:12]}", diff))
    return out


def commit_candidate(info: gitrepo.CommitInfo, source: str, diff: Path) -> Candidate:
    """A commit as a patch to write: its subject, body and trailers (the message's last
    paragraph of `Key: value` lines), author and date; ``diff`` holds its diff.

    The `# Conflicts:` note git adds to the message of a step that stopped on a conflict
    is dropped, as git drops it from a message edited in an editor: `git commit --no-edit`
    keeps it, and it would end the message after the trailers."""
    subject, _, rest = _CONFLICTS_NOTE.sub("\n", info.message).partition("\n")
    body, trailers = patchtext.split_trailers(rest)
    return Candidate(source, subject.strip(), info.author, info.date, body, trailers, diff)


def _series_file(directory: Path) -> Path | None:
    for candidate in (directory / "series", directory / "patches" / "series",
                      directory / "debian" / "patches" / "series"):
        if candidate.is_file():
            return candidate
    return None


def _from_directory(directory: Path, work: Path) -> list[Candidate]:
    series = _series_file(directory)
    out: list[Candidate] = []
    if series is None:
        files = sorted(p for p in directory.iterdir()
                       if p.is_file() and p.suffix in (".patch", ".diff"))
        if not files:
            raise InputError(f"{directory}: no quilt `series` file and no *.patch files")
        for i, f in enumerate(files):
            out += _from_file(f, work / str(i), strip=1, label=str(f))
        return out
    return _from_series(series, work)


def _is_series(path: Path) -> bool:
    """A quilt ``series`` file given by itself (as ``stg import --series`` takes it): not a
    diff or a mail, and every line names a file beside it."""
    data = path.read_bytes()
    if b"\n--- " in b"\n" + data or b"\ndiff --git " in b"\n" + data or \
            data.lstrip(b"\n").startswith(b"From "):
        return False
    try:
        entries = parse_series(data.decode("utf-8"), source=path)
    except (UnicodeDecodeError, StackError):
        return False
    return bool(entries) and (path.name == "series" or
                              all((path.parent / e.name).is_file() for e in entries))


def _from_series(series: Path, work: Path) -> list[Candidate]:
    out: list[Candidate] = []
    entries = parse_series(series.read_text(encoding="utf-8"), source=series)
    for i, entry in enumerate(entries):
        path = series.parent / entry.name
        if not path.is_file():
            raise InputError(f"{series}:{entry.line}: {entry.name} does not exist")
        out += _from_file(path, work / str(i), strip=entry.strip, label=str(path))
    return out


def _from_file(path: Path, work: Path, *, strip: int, label: str) -> list[Candidate]:
    """``work``: a name for what this file needs written (``work.*`` files, a ``work`` dir
    only for an mbox of several mails)."""
    work.parent.mkdir(parents=True, exist_ok=True)
    data = path.read_bytes()
    head = data.lstrip(b"\n").split(b"\n", 8)
    if head and head[0].startswith(b"From ") and not _one_mail(data):
        mails = gitrepo.mailsplit(path, work / "split")
        several = len(mails) > 1
        return [_from_mail(m, work / f"m{i}", strip=strip,
                           label=f"{label}#{i + 1}" if several else label)
                for i, m in enumerate(mails)]
    if sum(bool(_MAIL_KEY.match(ln)) for ln in head) >= 2:
        return [_from_mail(path, work, strip=strip, label=label)]
    return [_from_dep3(path, data, strip=strip, label=label)]


_MBOX_FROM = re.compile(rb"^From \S+ +\S+ \S+ +\d+ \d+:\d+(:\d+)? \d{4}", re.MULTILINE)


def _one_mail(data: bytes) -> bool:
    """A format-patch file holds one mail: `git mailinfo` reads it as it is (no split)."""
    return len(_MBOX_FROM.findall(data)) == 1 and \
        _MBOX_FROM.match(data.lstrip(b"\n")) is not None


def _from_mail(mail: Path, work: Path, *, strip: int, label: str) -> Candidate:
    msg, diff = work.with_name(f"{work.name}.msg"), work.with_name(f"{work.name}.patch")
    try:
        info = gitrepo.mailinfo(mail, msg, diff)
    except InputError as e:
        raise InputError(f"{label}: {e}") from e
    if not diff.is_file() or not diff.read_bytes().strip():
        raise InputError(f"{label}: the mail holds no diff")
    body, trailers = patchtext.split_trailers(msg.read_text(encoding="utf-8", errors="replace"))
    author = info.get("Author", "")
    if info.get("Email"):
        author = f"{author} <{info['Email']}>".strip()
    return Candidate(label, info.get("Subject", "").strip() or mail.name, author,
                     info.get("Date", ""), body, trailers, diff, strip)


def _from_dep3(path: Path, data: bytes, *, strip: int, label: str) -> Candidate:
    try:
        patch = parse_patch(data, path=path, name=path.name, strip=strip)
    except StackError as e:
        raise InputError(f"{label}: {e}") from e
    subject = patch.subject or re.sub(r"^\d+-", "", path.stem).replace("-", " ")
    return Candidate(label, subject, patch.author, _dep3_date(patch.date), patch.body, [],
                     path, strip, dep3=patch.metadata)


def _dep3_date(value: str) -> str:
    """DEP-3's Last-Update is YYYY-MM-DD; a mail Date wants RFC 2822."""
    import datetime as dt
    import email.utils

    try:
        day = dt.datetime.strptime(value.strip(), "%Y-%m-%d").replace(tzinfo=dt.UTC)
    except ValueError:
        return value.strip()
    return email.utils.format_datetime(day)


def fill_trailers(c: Candidate, *, concern: str | None, files: list[str]) -> list[str]:
    """Add what patchctl needs and the candidate lacks; returns the added `Key: value`s."""
    have = {k.lower() for k, _ in c.trailers}
    for key in DEP3_CARRIED:
        if key.lower() not in have and c.dep3.get(key):
            c.trailers += [(key, value) for value in c.dep3[key]]
            have.add(key.lower())
    added: list[tuple[str, str]] = []
    if "concern" not in have:
        added.append(("Concern", concern or patchtext.slug(c.subject).lower()[:40]))
    if "upstream-status" not in have:
        added.append(("Upstream-Status", _status_from_dep3(c.dep3)))
    if "scope" not in have:
        added.append(("Scope", " ".join(files)))
    c.trailers += added
    return [f"{k}: {v}" for k, v in added]


def _status_from_dep3(meta: dict[str, list[str]]) -> str:
    forwarded = (meta.get("Forwarded") or [""])[0].strip()
    if meta.get("Applied-Upstream"):
        return f"Backport [{meta['Applied-Upstream'][0]}]"
    if re.match(r"^https?://", forwarded):
        return f"Submitted [{forwarded}]"
    if forwarded.lower() == "not-needed":
        return "Inappropriate [not needed upstream]"
    return "Pending"
