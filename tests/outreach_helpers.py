"""Shared by the outreach tests: upstreams with policy files, and Markdown checks."""

from __future__ import annotations

import re
from pathlib import Path

from tests.builders import Upstream, commit_all, format_patch, make_upstream, replace_in, write

FORBIDS = """# Contributing

## AI policy

- AI-generated code is allowed if you disclose it.
- Pull request descriptions and commit messages must not be machine-written.

## Before you start

- Features must begin with an issue, not a PR.
- New public API additions carry a higher bar: justify why existing functions do not suffice.
- Use ASCII only in code and comments.
"""

NO_RULES = """# Contributing

Thanks for your interest! Send patches to the mailing list.
"""

TEMPLATE = """## Overview

<!-- Describe what this PR does and why -->

## Testing

<!-- How did you test it? -->

## Checklist

- I have read the contributing guidelines
- AI usage disclosure: <!-- YES / NO -->
"""

EDITORCONFIG = """root = true

[*]
trim_trailing_whitespace = true
indent_style = space
insert_final_newline = true

[Makefile]
indent_style = tab
"""

CODEOWNERS = """# teams
# tiny-org/core : alice, bob

/src/           @carol
*.h             @tiny-org/core
/src/util.c     @dave dave@example.invalid
"""


def policy_upstream(path: Path, contributing: str, *, template: str | None = TEMPLATE
                    ) -> Upstream:
    """The tiny upstream plus one commit with policy files; ``commits['policy']`` is the pin."""
    up = make_upstream(path)
    files = {"CONTRIBUTING.md": contributing, ".editorconfig": EDITORCONFIG,
             "CODEOWNERS": CODEOWNERS}
    if template is not None:
        files[".github/pull_request_template.md"] = template
    write(path, files)
    up.commits["policy"] = commit_all(path, "docs : contribution policy (#4)")
    return up


def api_patch(up: Upstream, scratch: Path, *, subject: str = "tiny : add tiny_cube",
              trailers: dict[str, str] | None = None, body: str = "Why this change is needed.",
              odd_lines: bool = False) -> str:
    """A patch adding a public declaration to include/tiny.h and its definition."""

    def edit(work: Path) -> None:
        replace_in(work / "include/tiny.h", "int tiny_version(void);\n",
                   "int tiny_version(void);\nint tiny_cube(int v);\n")
        extra = "    /* cube \u00d7 3 */   \n\treturn v * v * v;\n" if odd_lines else \
            "    return v * v * v;\n"
        replace_in(work / "src/util.c", "int tiny_abs(int v)",
                   "int tiny_cube(int v)\n{\n" + extra + "}\n\nint tiny_abs(int v)")

    t = {"Concern": "cube", "Upstream-Status": "Pending", "Scope": "include/tiny.h src/util.c"}
    t.update(trailers or {})
    return format_patch(up, up.commits["policy"], edit, subject=subject, trailers=t, body=body,
                        scratch=scratch)


# -- Markdown checks ------------------------------------------------------------------------

_PIPE = re.compile(r"(?<!\\)\|")


def markdown_problems(text: str, *, files: set[str] = frozenset()) -> list[str]:
    """Broken tables, broken links and leftover template syntax, found by parsing the text
    with markdown-it-py (CommonMark + GFM tables)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table")
    tokens = md.parse(text)
    lines = text.splitlines()
    problems: list[str] = []
    in_table: set[int] = set()
    for t in tokens:
        if t.type == "table_open" and t.map:
            rows = [ln for ln in lines[t.map[0] : t.map[1]] if ln.strip()]
            widths = {len(_PIPE.findall(r)) for r in rows}
            if len(widths) != 1:
                problems.append(f"table at line {t.map[0] + 1}: rows differ in cells {rows}")
            in_table.update(range(t.map[0], t.map[1]))
    fence = False
    for number, line in enumerate(lines):
        if line.strip().startswith("```"):
            fence = not fence
        if not fence and line.startswith("|") and number not in in_table:
            problems.append(f"line {number + 1} looks like a table row outside a table: {line}")
    for t in tokens:
        for child in t.children or []:
            if child.type == "link_open":
                href = str(child.attrGet("href") or "")
                if not href:
                    problems.append("a link without a target")
                # on stdout (no files named) a brief and its details, which --out writes
                # side by side, link each other
                elif not (href.startswith(("https://", "http://", "#")) or href in files or
                          (not files and re.fullmatch(r"\d{4}-[\w.+-]+\.md", href))):
                    problems.append(f"link to {href!r}, which is not a written file")
    for marker in ("{{", "}}", "{%", "%}", "{#", "#}"):
        if marker in text:
            problems.append(f"leftover template syntax {marker!r}")
    return problems


def html(text: str) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table").render(text)


# -- no paste-ready prose ------------------------------------------------------------------

# first person, or words that argue rather than state
_FIRST_PERSON = re.compile(r"\bI(?!/)\b|\b(?:I'm|I've|I'd|we|we're|we've|we'd|our|ours|us|let's)\b")
_ARGUING = re.compile(r"\b(?:clearly|obviously|simply put|should be (?:merged|accepted)|"
                      r"please (?:merge|review|consider)|we (?:believe|propose|think)|"
                      r"this PR|in this PR|I hope)\b", re.I)
_CITATION = re.compile(r"^\S+:\d+$")
PARAGRAPH_WORDS = 40  # a plain paragraph longer than this argues; facts are lists and tables
ITEM_WORDS = 80  # one list item: one fact


def prose_problems(text: str) -> list[str]:
    """Paragraphs of argument in rendered Markdown: a plain paragraph (not a list item, table,
    heading, quote or code) over PARAGRAPH_WORDS words, a list item over ITEM_WORDS, or any
    of them in the first person or with persuasive words. Text in code spans is data and is
    not read; a list item that opens with a citation (`FILE:LINE`) quotes the upstream and
    is not read either."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    problems: list[str] = []
    open_: list[str] = []
    for t in tokens:
        if t.nesting == 1:
            open_.append(t.type)
        elif t.nesting == -1:
            open_.pop()
        if t.type != "inline" or open_[-1:] != ["paragraph_open"]:
            continue
        if "blockquote_open" in open_:
            continue
        children = t.children or []
        if "list_item_open" in open_ and children[:1] and children[0].type == "code_inline" \
                and _CITATION.match(children[0].content):
            continue
        words = " ".join(c.content for c in children if c.type == "text")
        n = len(words.split())
        where = f"line {t.map[0] + 1 if t.map else '?'}"
        limit = ITEM_WORDS if "list_item_open" in open_ else PARAGRAPH_WORDS
        if n > limit:
            problems.append(f"{where}: {n} words in one "
                            f"{'list item' if limit == ITEM_WORDS else 'paragraph'}: {words[:80]}")
        for pattern in (_FIRST_PERSON, _ARGUING):
            if m := pattern.search(words):
                problems.append(f"{where}: {m.group(0)!r} argues: {words[:80]}")
    return problems


# -- the whole contribution surface ------------------------------------------------

SURFACE_AGENTS = """# Instructions for tiny

## Guidelines for Contributors

- Feature requests run high in volume: open an issue to discuss the idea before implementing it.

### Code and Commit Standards

- Code comments:
    - Keep code comments concise (usually 1-2 lines)
- Prefer reusing existing infrastructure over introducing new components.
- Do NOT split a line into multiple lines mid-sentence
- Do NOT generate changes too extensive for the contributor to fully review
"""

SURFACE_CONTRIBUTING = """# Contributing

- New public API additions carry a **higher bar**: justify why others do not suffice.

# Pull requests (for maintainers)

- Use the following format for the squashed commit title: `<module> : <title> (#<issue>)`
"""

ENHANCEMENT_FORM = """name: Enhancement
description: Used to request enhancements for tiny.
title: "Feature Request: "
labels: ["enhancement"]
body:
  - type: markdown
    attributes:
      value: |
        [Please post your idea first in Discussion if there is not yet a consensus.](https://github.com/tiny-org/tiny/discussions/categories/ideas)

        Fill this in yourself: copypasting language model outputs is strictly prohibited.

  - type: textarea
    id: motivation
    attributes:
      label: Motivation
      description: Why this feature is necessary.
"""

FORM_CONFIG = """blank_issues_enabled: true
contact_links:
  - name: Got an idea?
    url: https://github.com/tiny-org/tiny/discussions/categories/ideas
    about: Pop it there.
"""

SURFACE_CODEOWNERS = """# tiny-org/tiny-rpc : rgerganov

/src/rpc/   @tiny-org/tiny-rpc
/src/       @carol
"""

# a copy in a tool comes first in path order, the declaration is in include/
TOOL_ASSERT = "#define TINY_ASSERT(x) ((void)(x))\n"
PARAMS = ("\nstruct tiny_params {\n    int a;\n};\n\n"
          "#define TINY_ASSERT(x) do { if (!(x)) abort(); } while (0)\n")
RPC_AUTHOR = {"GIT_AUTHOR_NAME": "Radoslav",
              "GIT_AUTHOR_EMAIL": "7+rgerganov@users.noreply.github.com"}
ALICE = {"GIT_AUTHOR_NAME": "Alice Dev", "GIT_AUTHOR_EMAIL": "42+alice-gh@users.noreply.github.com"}


def surface_upstream(path: Path) -> Upstream:
    """The tiny upstream with issue forms, code standards, a CODEOWNERS without include/,
    per-architecture files, a tool's copy of a macro and authors with GitHub no-reply
    addresses; ``commits['policy']`` is the pin."""
    from tests.builders import git

    up = make_upstream(path)
    tiny_h = (path / "include/tiny.h").read_text()
    write(path, {"AGENTS.md": SURFACE_AGENTS, "CONTRIBUTING.md": SURFACE_CONTRIBUTING,
                 ".github/ISSUE_TEMPLATE/020-enhancement.yml": ENHANCEMENT_FORM,
                 ".github/ISSUE_TEMPLATE/config.yml": FORM_CONFIG,
                 "CODEOWNERS": SURFACE_CODEOWNERS, "tools/aa/aa.h": TOOL_ASSERT,
                 "include/tiny.h": tiny_h.replace("#endif /* TINY_H */",
                                                  PARAMS + "\n#endif /* TINY_H */"),
                 **{f"src/models/{a}.c": f"int {a}_build(int x)\n{{\n    return x;\n}}\n"
                    for a in ("alpha", "beta", "gamma", "delta")}})
    commit_all(path, "docs : contribution surface (#4)")
    write(path, {"src/rpc/rpc.c": "int tiny_rpc(void)\n{\n    return 0;\n}\n"})
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "rpc : add (#5)", env=RPC_AUTHOR)
    for i in range(2):
        write(path, {"src/util.c": (path / "src/util.c").read_text() + f"\n/* note {i} */\n"})
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", f"util : note {i}", env=ALICE)
    up.commits["policy"] = git(path, "rev-parse", "HEAD").strip()
    return up


RANGE_COMMENT = """    // Clamp the value into the range that the caller
    // asked for, as the models expect.
    // Callers never see a negative value.
"""


def surface_patch(up: Upstream, scratch: Path) -> str:
    """Adds a field to struct tiny_params, a three-line comment with a sentence split
    across lines, a use of TINY_ASSERT, and edits three of the four model files."""

    def edit(work: Path) -> None:
        replace_in(work / "include/tiny.h", "    int a;\n", "    int a;\n    int b;\n")
        replace_in(work / "src/util.c", "int tiny_abs(int v)\n{\n",
                   "int tiny_abs(int v)\n{\n" + RANGE_COMMENT + "    TINY_ASSERT(v > -1000);\n")
        for a in ("alpha", "beta", "gamma"):
            replace_in(work / f"src/models/{a}.c", "return x;", "return x + 1;")

    t = {"Concern": "range", "Upstream-Status": "Pending",
         "Scope": "include/tiny.h src/util.c src/models/*"}
    return format_patch(up, up.commits["policy"], edit, subject="tiny : run a range",
                        trailers=t, scratch=scratch)


RANGE_TOML = """format = 1
concern = "range"
title = "tiny : run a range"
summary = "Runs a range. Only the builders that run a range are accepted (alpha, beta)."
scope = "running a range; builders other than alpha and beta are rejected"

[[prior_art]]
kind = "issue"
ref = "tiny-org/tiny#7"
url = "https://github.com/tiny-org/tiny/issues/7"
title = "Run a range"
state = "open"
verified = true
checked_via = "test"
note = "The request."

[[question]]
question = "Why not use the RPC backend?"
evidence = []
"""
