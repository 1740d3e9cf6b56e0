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


def environment():
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # Markdown, not HTML: the filters above do the escaping
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(md=md, code=code, cellcode=cellcode, block=block, shell=shell)
    return env


def render_patch(brief, patch) -> str:
    return _tidy(environment().get_template("outreach-patch.md.j2").render(b=brief, p=patch))


def render_series(brief) -> str:
    return _tidy(environment().get_template("outreach-series.md.j2").render(b=brief))


def _tidy(text: str) -> str:
    """At most one blank line in a row and one newline at the end."""
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip("\n") + "\n"


def template_hashes() -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(TEMPLATES.glob("outreach-*.j2"))}
