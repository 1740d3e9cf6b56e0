"""Who or what wrote a patch, as facts, and what `git am` would send upstream with it.

The facts come from the project's own git history of the patch file (the
authors and committers of the commits that touched it, the ``Assisted-by:``,
``Co-authored-by:`` and ``Generated-by:`` trailers of those commits) and from
the patch itself (its author, its trailers). A brief states them; it never
guesses what they leave out. ``warnings`` names what a patch file carries that
is the stack's, not the submitter's (a commit message, stack trailers, a
placeholder author): ``patchctl export --format upstream`` writes the diffs
without them.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from patchctl import gitrepo
from patchctl.model.patchfile import Patch
from patchctl.textout import count
from patchctl.untrusted import printable

EXPORT_COMMAND = ["patchctl", "export", "--format", "upstream", "DIR"]
TRAILERS = ("Assisted-by", "Co-authored-by", "Generated-by")
_TRAILER = re.compile(r"^(assisted-by|co-authored-by|generated-by):[ \t]*(.*)$", re.I)
_CANONICAL = {k.lower(): k for k in TRAILERS}
_EMAIL = re.compile(r"\s*<[^>]*>")
# DEP-3 fields that say who and when; every other known key is a trailer of the stack's
_DEP3_ONLY = {"Description", "Author", "Last-Update"}
# RFC 2606 / 6761 names: no one receives mail there
_RESERVED = (".invalid", ".example", ".test", ".localhost", ".local")
_RESERVED_DOMAINS = ("localhost", "example.com", "example.net", "example.org")


@dataclass
class Disclosure:
    file: str  # the patch file as the project names it (stack/patches/NAME)
    history: bool  # whether the project is a git repository (its history was read)
    shallow: bool  # the clone is shallow: commits older than its first are not counted
    commits: int  # commits of the project that touched the file (renames followed)
    authors: list[str]  # "NAME (N)", most commits first; names only
    committers: list[str]
    history_trailers: list[str]  # disclosure trailers of those commits, names only
    patch_trailers: list[str]  # disclosure trailers in the patch file
    author: str  # the patch's author, name only
    placeholder: str | None  # why the author is a placeholder, or None
    message: bool  # the patch carries a commit message (text between subject and trailers)
    stack_trailers: list[str]  # the trailer keys of the stack's it carries (Concern, Scope)
    # the upstream's own lines on AI use and its disclosure, (file, line, text), at the base
    rule: list[tuple[str, int, str]] = field(default_factory=list)

    @property
    def records(self) -> str:
        """What the patch itself records about assistance; never a guess at what it omits."""
        if self.patch_trailers:
            return "the patch records " + "; ".join(self.patch_trailers)
        return ("the patch carries no Assisted-by:, Co-authored-by: or Generated-by: trailer, "
                "which does not mean no AI was used: ask whoever wrote it")

    @property
    def todo(self) -> list[str]:
        """What the submitter must do, each with the upstream lines that ask it."""
        def at(pattern: str) -> str:
            found = [f"{f}:{n}" for f, n, t in self.rule if re.search(pattern, t, re.I)]
            return f" ({', '.join(found)})" if found else ""

        return [f"answer the template's AI usage disclosure truthfully: YES if AI generated "
                f"any part of the code{at(r'AI usage disclosure|generate any portion')}",
                f"describe how AI was used in your own words{at(r'disclose the manner')}",
                "review every line yourself and be able to explain it to a maintainer"
                + at(r"manual review|explain every line")]

    @property
    def facts(self) -> list[str]:
        """The facts as lines for the brief's disclosure section."""
        out = []
        if not self.history:
            out.append(f"history of {self.file}: no history available (the project is not "
                       "a git repository)")
        elif not self.commits:
            out.append(f"history of {self.file}: no commit of the project touches it "
                       "(not committed)")
        else:
            out.append(f"history of {self.file}: {count(self.commits, 'commit')} by "
                       f"{', '.join(self.authors)}; committed by {', '.join(self.committers)}"
                       + ("; the clone is shallow, so older commits are not counted"
                          if self.shallow else ""))
            out.append("trailers in those commits: " + ("; ".join(self.history_trailers) or
                                                        f"no {_listed()}"))
        out.append("trailers in the patch: " + ("; ".join(self.patch_trailers) or
                                                f"no {_listed()}"))
        out.append(f"author of the patch (From:): {self.author or 'none'}"
                   + (f", a placeholder ({self.placeholder})" if self.placeholder else ""))
        return out


def _listed() -> str:
    return ", ".join(f"{k}:" for k in TRAILERS[:-1]) + f" or {TRAILERS[-1]}:"


# the lines of a contribution guide or pull request template that state the AI-use rule
_RULE_LINE = re.compile(r"\bAI\b.*\bgenerat|disclos|manual review|explain every line", re.I)
_RULE_FILES = re.compile(r"(^|/)CONTRIBUTING\.md$|pull_request_template\.md$", re.I)


def rule_lines(files: dict[str, str | None]) -> list[tuple[str, int, str]]:
    """The upstream's lines on AI-generated code and its disclosure, from its contribution
    guide and pull request template at the base: (file, line, text)."""
    return [(path, n, line.strip()) for path, text in files.items()
            if text and _RULE_FILES.search(path)
            for n, line in enumerate(text.splitlines(), start=1) if _RULE_LINE.search(line)]


def disclose(project: Path, patch: Patch,
             files: dict[str, str | None] | None = None) -> Disclosure:
    """The facts for one patch of the stack in ``project``; ``files``, the upstream's
    policy files at the base, give the rule they are held against."""
    file = Path(os.path.relpath(patch.path.absolute(), project.absolute())).as_posix()
    found = gitrepo.file_history(patch.path.absolute())
    commits, shallow = found if found is not None else ([], False)
    authors = Counter(c.author for c in commits)
    committers = Counter(c.committer for c in commits)
    history_trailers = list(dict.fromkeys(
        f"{_CANONICAL[k.lower()]}: {_name_only(v)}" for c in commits for k, v in c.trailers
        if k.lower() in _CANONICAL))
    header = patch.text.split("\n")[:patch.diff_line - 1]
    patch_trailers = list(dict.fromkeys(
        f"{_CANONICAL[m.group(1).lower()]}: {_name_only(printable(m.group(2).strip()))}"
        for ln in header if (m := _TRAILER.match(ln))))
    return Disclosure(
        file=file, history=found is not None, shallow=shallow, commits=len(commits),
        authors=_ranked(authors), committers=_ranked(committers),
        history_trailers=history_trailers, patch_trailers=patch_trailers,
        author=printable(_name_only(patch.author)), placeholder=placeholder(patch.author),
        message=bool(patch.body.strip()),
        stack_trailers=[k for k in patch.metadata if k not in _DEP3_ONLY],
        rule=rule_lines(files or {}))


def placeholder(author: str) -> str | None:
    """Why ``author`` (``Name <address>``) is no one's: no address, or one under a name
    reserved for examples and tests; None when it may be a person's."""
    m = re.search(r"<([^>]*)>", author)
    address = (m.group(1) if m else author if "@" in author else "").strip().lower()
    if not address:
        return "no e-mail address"
    domain = address.rpartition("@")[2].rstrip(".")
    for reserved in _RESERVED_DOMAINS:
        if domain == reserved or domain.endswith("." + reserved):
            return f"an address at {reserved}, a name reserved for examples"
    for suffix in _RESERVED:
        if domain.endswith(suffix) or domain == suffix[1:]:
            return f"an address under {suffix}, a name reserved for examples"
    return None


def warnings(facts: Sequence[Disclosure]) -> list[str]:
    """One line per condition that makes a patch file unfit to send upstream as it is."""
    export = " ".join(EXPORT_COMMAND)
    out = []
    carrying = [d for d in facts if d.message or d.stack_trailers]
    if carrying:
        keys = list(dict.fromkeys(k for d in carrying for k in d.stack_trailers))
        what = "a commit message" if all(d.message for d in carrying) else \
            "stack trailers" if not any(d.message for d in carrying) else \
            "a commit message or stack trailers"
        shown = ", ".join(f"{k}:" for k in keys[:3]) + (", ..." if len(keys) > 3 else "")
        out.append(f"warning: {_carry(len(carrying))} {what}"
                   + (f" ({shown})" if shown else "") + " that `git am` would send upstream "
                   f"as written; submit the plain diffs `{export}` writes, with a commit "
                   "message you write")
    odd = [d for d in facts if d.placeholder]
    if odd:
        verb = "names" if len(odd) == 1 else "name"
        out.append(f"warning: {count(len(odd), 'patch')} {verb} a placeholder author "
                   f"({odd[0].placeholder}); the diffs `{export}` writes carry no author: "
                   "commit them as yourself")
    return out


def _carry(n: int) -> str:
    return f"{count(n, 'patch')} {'carries' if n == 1 else 'carry'}"


def _ranked(counter: Counter[str]) -> list[str]:
    return [f"{name or '(no name)'} ({n})"
            for name, n in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))]


def _name_only(value: str) -> str:
    """A name without its e-mail address (addresses stay out of briefs)."""
    return _EMAIL.sub("", value).strip().strip('"') or ("(an address)" if value.strip() else "")
