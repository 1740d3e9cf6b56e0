"""A concern's outreach data, ``stack/outreach/<concern>.toml``: why, prior art, the
questions and objections a reviewer is expected to raise, and facts to check upstream."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from patchctl.errors import StackError


@dataclass
class PriorArt:
    kind: str
    ref: str
    url: str
    title: str
    state: str
    verified: bool
    checked_via: str
    note: str


@dataclass
class Question:
    question: str
    evidence: list[str]  # prior-art refs, evidence record names, or files


@dataclass
class UpstreamCheck:
    what: str
    path: str
    text: str
    context: int = 0  # lines after each hit to show


@dataclass
class Objection:
    text: str  # what a reviewer is expected to object to, in a few words
    source: str  # where it was found: a file and section, a review, an upstream line
    checked: bool  # checked against the patch or the upstream by whoever wrote it down


@dataclass
class LeftOut:
    records: list[str]  # globs of evidence records, relative to the project
    why: str  # why they say nothing to the upstream (this project's own code, ...)


@dataclass
class OutreachData:
    file: str
    fields: dict[str, str]  # title, summary, motivation, api, scope, ...
    prior_art: list[PriorArt]
    questions: list[Question]
    checks: list[UpstreamCheck]
    objections: list[Objection] = field(default_factory=list)
    left_out: list[LeftOut] = field(default_factory=list)  # records a brief does not list


_TEXT_FIELDS = ("title", "summary", "motivation", "api", "scope", "upstream", "pin", "checked_on")


def load_outreach(stack_root: Path, concern: str | None) -> OutreachData | None:
    """``stack/outreach/<concern>.toml``, or None when the stack has none for the concern."""
    if not concern or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", concern):
        return None  # only a slug names a file there: `../x` must not read outside the stack
    path = stack_root / "outreach" / f"{concern}.toml"
    if not path.is_file():
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise StackError(f"{path}: cannot read outreach data: {e}") from e
    try:
        prior = [PriorArt(kind=str(p.get("kind", "")), ref=str(p["ref"]),
                          url=str(p.get("url", "")), title=str(p.get("title", "")),
                          state=str(p.get("state", "")), verified=p.get("verified") is True,
                          checked_via=str(p.get("checked_via", "")), note=str(p.get("note", "")))
                 for p in data.get("prior_art", [])]
        questions = [Question(str(q["question"]), [str(e) for e in q.get("evidence", [])])
                     for q in data.get("question", [])]
        checks = [UpstreamCheck(str(c["what"]), str(c["path"]), str(c["text"]),
                                int(c.get("context", 0)))
                  for c in data.get("upstream_check", [])]
        objections = [Objection(str(o["text"]), str(o["source"]), o.get("checked") is True)
                      for o in data.get("objection", [])]
        left_out = [LeftOut([str(g) for g in x["records"]], str(x["why"]))
                    for x in data.get("left_out", [])]
    except KeyError as e:
        raise StackError(f"{path}: malformed outreach entry (missing {e})") from e
    except (TypeError, AttributeError, ValueError) as e:  # a table where a list belongs, ...
        raise StackError(f"{path}: malformed outreach data ({e}); see docs/FORMATS.md") from e
    fields = {k: str(data[k]) for k in _TEXT_FIELDS if k in data}
    return OutreachData(path.relative_to(stack_root.parent).as_posix(), fields, prior,
                        questions, checks, objections, left_out)


def left_out(data: OutreachData | None, files: list[str], cited: set[str]) -> list[str]:
    """Of the records ``files``, those the outreach data leaves out of the brief (a
    ``[[left_out]]`` glob matches them), unless its questions cite them."""
    from fnmatch import fnmatchcase

    globs = [g for x in (data.left_out if data else []) for g in x.records]
    return [f for f in files if f not in cited and any(fnmatchcase(f, g) for g in globs)]
