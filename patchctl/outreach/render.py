"""Rendering a brief as Markdown with the jinja2 templates in patchctl/templates/.

Templates are the only template code: every value from patches, metadata or
policy files is passed in as data and escaped for Markdown by a filter, so a
subject holding ``{{ 7*7 }}`` or ``|`` is shown literally and never breaks a
table. StrictUndefined turns a misspelt field into an error, not a blank.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import TYPE_CHECKING

from patchctl.textout import count

if TYPE_CHECKING:
    import jinja2

    from patchctl.outreach.brief import Brief, PatchBrief
    from patchctl.outreach.status import StatusReport

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>#+!|~%])")


def md(value: object) -> str:
    """Inline Markdown text: special characters backslash-escaped, one line."""
    text = re.sub(r"\s*\n\s*", " ", str(value)).strip()
    return _MD_SPECIAL.sub(r"\\\1", text)


def code(value: object) -> str:
    """An inline code span that holds any text (the fence outgrows any backtick run)."""
    text = re.sub(r"\s*\n\s*", " ", str(value))
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def cellcode(value: object) -> str:
    """``code`` for a table cell: a pipe must be escaped even inside a code span (GFM)."""
    return code(value).replace("|", "\\|")


def block(value: object) -> str:
    """A fenced code block holding ``value`` verbatim."""
    text = str(value).rstrip("\n")
    longest = max((len(m) for m in re.findall(r"^`{3,}", text, re.M)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def shell(argv: list[str]) -> str:
    import shlex

    return " ".join(shlex.quote(a) for a in argv)


def environment() -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # Markdown, not HTML: the filters above do the escaping
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    from patchctl.outreach.firstscreen import sentences, short
    from patchctl.untrusted import shorten

    env.filters.update(md=md, code=code, cellcode=cellcode, block=block, shell=shell,
                       sentences=sentences, short=short, shorten=shorten,
                       brief_name=brief_name, details_name=details_name)
    env.globals["guide_comments"] = GUIDE_COMMENTS
    from patchctl.outreach.facts import is_test_path

    env.tests["test_path"] = is_test_path
    return env


# A patch's brief is read whole before a PR (at most 3,000 words, 800 before the guide): per
# file, its guide quotes this many of the comments a patch adds; every hunk, with all its
# comments and where the upstream code it uses is declared, is in the details file.
GUIDE_COMMENTS = 3


def brief_name(patch_file: str) -> str:
    """``0002-x.md`` for ``0002-x.patch``: the brief's file name."""
    return patch_file.removesuffix(".patch") + ".md"


def details_name(patch_file: str) -> str:
    """``0002-x.details.md``: the file beside the brief with the sources behind it."""
    return patch_file.removesuffix(".patch") + ".details.md"


def render_details(brief: Brief, patch: PatchBrief) -> str:
    """The reference beside a patch's brief: every hunk, and the sources its lines name."""
    return _tidy(environment().get_template("outreach-details.md.j2").render(b=brief, p=patch))


def render_patch(brief: Brief, patch: PatchBrief, *, series: bool = False) -> str:
    """One patch's brief; with ``series`` (series.md is written next to it) the upstream's
    rules are quoted there once and linked from here, else quoted at the end of this one."""
    return _tidy(environment().get_template("outreach-patch.md.j2").render(
        b=brief, p=patch, series=series))


def render_handoff(brief: Brief, briefs_dir: str) -> str:
    return _tidy(environment().get_template("outreach-handoff.md.j2").render(
        b=brief, briefs_dir=briefs_dir))


def render_series(brief: Brief) -> str:
    return _tidy(environment().get_template("outreach-series.md.j2").render(b=brief))


def _tidy(text: str) -> str:
    """At most one blank line in a row and one newline at the end."""
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip("\n") + "\n"


def template_hashes() -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(TEMPLATES.glob("outreach-*.j2"))}


def status_text(report: StatusReport) -> str:
    """upstream-status as plain text (a report for the terminal, not Markdown). Each row is
    escaped whole (``untrusted.printable``): a server's answer is kept exact in the report's
    data, so a newline or an escape sequence in it must not forge a row or reach the
    terminal here."""
    from patchctl.untrusted import printable

    out = [f"{report.name} @ {report.pin[:12]}: {count(len(report.patches), 'patch')}"]
    out.append("by Upstream-Status: " + (", ".join(f"{k} {v}" for k, v in report.counts.items())
                                          or "none"))
    for p in report.patches:
        status = p.status + (f" {p.detail}" if p.detail else "") if p.status else p.problem
        age = f", pending {count(p.pending_days, 'day')} (since {p.date})" \
            if p.pending_days is not None else ""
        out.append(f"{p.index:>3}  {p.file}  [{p.concern or '-'}]  {status}{age}")
        if not p.references:
            out.append("       no Forwarded/Bug/Submitted reference")
        for ref in p.references:
            out.append(f"       ref {ref}")
        for o in p.online:
            if "state" in o:
                age = f", answer {_age(o['age'])} old" if "age" in o else ""
                note = f" (cached{age})" if o.get("cached") or o.get("stale") else ""
                out.append(f"       {o['ref']}: {o['kind']} {o['state']}, last activity "
                           f"{o.get('updated_at') or '?'}{note}")
            if "error" in o:
                out.append(f"       {o['ref']}: {o['error']}")
        if p.burden and p.burden.get("skipped"):
            out.append(f"       burden: not counted: {p.burden['skipped']}")
        elif p.burden:
            b = p.burden
            out.append(f"       burden: {count(len(b['commits']), 'upstream commit')} of "
                       f"{count(b['days'], 'day')} before the pin on its lines, "
                       f"{count(b['files'], 'file')} (library ±{b['library']}, "
                       f"tests ±{b['tests']})")
        if p.upstream:
            u = p.upstream
            line = f"       at {report.ref}: {u['verdict']} (grade {u['grade']})"
            commit = u.get("commit") or u.get("first_breaking")
            if commit:
                line += f", {commit['id'][:12]} {commit['subject']}"
            if u.get("reference"):
                line += f" (the patch names {u['reference']})"
            if "contains" in u:
                line += f", holds {round(u['contains'] * 100)}% of the patch's added lines"
            out.append(line)
            if u.get("interdiff"):
                out.append("       it still changes what that commit does not; interdiff "
                           "(the patch -> the commit):")
                out += [f"         {ln}" for ln in u["interdiff"].rstrip("\n").split("\n")]
    if report.malformed:
        out.append(f"malformed or missing Upstream-Status: {', '.join(report.malformed)}")
    return "\n".join(printable(line) for line in out) + "\n"


def _age(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
