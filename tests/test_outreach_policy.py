"""Reading an upstream's rules: only what its files state, each with its file and line."""

from __future__ import annotations

from patchctl.outreach import policy

AGENTS = """# Instructions

## Guidelines

- Feature requests run high in volume: open an issue to discuss the idea before implementing it.

### Prohibited AI Usage (results in immediate PR closure)

- AI-written PR descriptions, commit messages, or reviewer responses
- Automated commits or PR submissions (may result in contributor ban)

Commit message:

```
llama : fix KV being cleared during context shift

Assisted-by: Claude Sonnet
```
"""


def test_rules_are_found_with_file_and_line_and_never_from_code_examples() -> None:
    rules = {r.id: r for r in policy.find_rules({"AGENTS.md": AGENTS})}
    assert set(rules) == {"no-machine-prose", "no-automated-submission", "issue-first",
                          "discuss-first"}
    prose = rules["no-machine-prose"].citations
    assert [(c.file, c.line) for c in prose] == [("AGENTS.md", 9)]
    assert prose[0].text == "- AI-written PR descriptions, commit messages, or reviewer responses"
    # the Assisted-by line sits in a code example: an example, not a rule
    assert "assisted-by" not in rules


def test_a_mention_without_a_prohibition_is_not_a_ban() -> None:
    """Regression guard: a guide that asks for good PR descriptions must not be reported as
    forbidding machine-written ones."""
    text = ("# Contributing\n\n- Write clear PR descriptions and commit messages.\n"
            "- Do not write comments that restate the code.\n"
            "- Never write commit messages longer than 72 columns.\n"
            "- Report vulnerabilities by responsible disclosure.\n")
    assert policy.find_rules({"CONTRIBUTING.md": text}) == []
    assert policy.find_rules({}) == []


def test_template_sections_keep_their_hints_and_items() -> None:
    text = ("## Overview\n\n<!-- Describe what\nand why -->\n\n## Requirements\n\n"
            "- I agree\n- AI usage disclosure: <!-- YES / NO -->\n")
    sections = policy.template_sections(text)
    assert [(s.heading, s.line, s.hints) for s in sections] == [
        ("Overview", 1, ["Describe what and why"]), ("Requirements", 6, [])]
    assert sections[1].items == ["I agree", "AI usage disclosure:"]
    assert sections[0].facts == ["what", "why"]
    assert sections[1].facts == ["disclosure", "rules"]


def test_editorconfig_sections_globs_and_unset() -> None:
    text = ("root = true\n[*]\nindent_style = space\ntrim_trailing_whitespace = true\n"
            "[Makefile]\nindent_style = tab\n[vendor/**]\ntrim_trailing_whitespace = unset\n"
            "[*.{c,h}]\nindent_size = 4\n")
    props = policy.editorconfig_for(text, "src/a.c")
    assert {k: (v.value, v.line) for k, v in props.items()} == {
        "indent_style": ("space", 3), "trim_trailing_whitespace": ("true", 4),
        "indent_size": ("4", 10)}
    assert policy.editorconfig_for(text, "sub/Makefile")["indent_style"].value == "tab"
    assert "trim_trailing_whitespace" not in policy.editorconfig_for(text, "vendor/x/y.h")


def test_codeowners_last_match_wins_and_anchoring() -> None:
    text = "# t\n/src/  @a\n/src/llama-model.*  @b\n*.h  @c\ndocs/ @d\nguide/* @e\n"
    assert policy.codeowners_for(text, "src/llama-model.cpp").owners == ("@b",)
    assert policy.codeowners_for(text, "src/llama-model-loader.cpp").owners == ("@a",)
    assert policy.codeowners_for(text, "src/x.h").owners == ("@c",)
    assert policy.codeowners_for(text, "a/docs/x.md").owners == ("@d",)  # any docs/ dir
    assert policy.codeowners_for(text, "guide/x.md").owners == ("@e",)
    assert policy.codeowners_for(text, "guide/sub/x.md") is None  # "/*": one level only
    assert policy.codeowners_for(text, "README.md") is None
