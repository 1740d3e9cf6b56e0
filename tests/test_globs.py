"""The one path-glob matcher (patchctl/globs.py): its semantics, its errors, and that it
answers in linear time whatever the pattern (each case under a time bound, in a worker
process). The property tests against fnmatch and the old regex are in
tests/test_corpus_properties.py."""

from __future__ import annotations

import pytest

from patchctl.errors import InputError
from patchctl.globs import MAX_GLOB, GlobError, compile_glob, glob_match, glob_problem
from patchctl.outreach.policy import codeowners_for, editorconfig_for
from tests.corpus import bounded

LONG = "src/" + "a_long_directory_name/" * 2 + "some_source_file_name.cpp"  # 73 bytes


@pytest.mark.parametrize(("path", "pattern", "expected"), [
    ("src/util.c", "src/util.c", True),  # no metacharacters: an exact comparison
    ("src/util.c", "src/util", False),
    ("src/util.c", "src/*.c", True),
    ("src/x/util.c", "src/*.c", False),  # `*` stays within one component
    ("src/x/util.c", "src/**", True),  # `**` spans components
    ("src", "src/**", False),
    ("a/b", "a/**/b", True),  # `**/` may be empty
    ("a/x/y/b", "a/**/b", True),
    ("ab", "a/**/b", False),
    ("foo", "**/foo", True),
    ("x/foo", "**/foo", True),
    ("xfoo", "**/foo", False),
    ("a/x/b", "a**b", True),  # `**` inside a name still spans components
    ("a/x/b", "a***b", True),  # a run of `*` longer than two is `**`
    ("a/b", "a?b", False),  # `?` and `[...]` never match `/`
    ("a/b", "a[!x]b", False),
    ("a/b", "a[/]b", None),  # a `[` must close within its component: an error
    ("y", "[!x]", True),  # `[!...]` negates, as in fnmatch
    ("x", "[!x]", False),
    ("!", "[!x]", True),
    ("^", "[^x]", True),  # `^` is a member, as in fnmatch
    ("y", "[^x]", False),
    ("]", "[]]", True),  # a leading `]` is a member
    ("]", "[!]]", False),
    ("-", "[a-]", True),
    ("b", "[a-c]", True),
    ("-", "[a-c]", False),
    ("[", "[[]", True),  # the way to write a literal `[`
    ("\\", "[\\]", True),  # a backslash is a plain character
    ("src/[]", "src/[]", None),  # `[]`: a `[` never closed (the `]` is a member)
    ("src/z.c", "src/[z-a].c", None),  # a reversed range
])
def test_glob_semantics(path: str, pattern: str, expected: bool | None) -> None:
    """`[!x]` was read as the set {!, x}, the opposite of fnmatch, and a
    broken set gave a traceback; the rest pins the semantics the new matcher keeps."""
    if expected is None:
        with pytest.raises(GlobError) as e:
            glob_match(path, pattern)
        assert isinstance(e.value, InputError) and "\n" not in str(e.value)
        assert f"`{pattern}`" in str(e.value)
    else:
        assert bounded(glob_match, path, pattern) is expected


@pytest.mark.parametrize(("pattern", "fragment"), [
    ("src/[z-a].c", "the range `z-a` is reversed; write `a-z`"),
    ("src/[]", "the `[` at character 5 is not closed"),
    ("[", "not closed"),
    ("[!]", "not closed"),
    ("[a--]", "reversed"),
    ("src/[ab/c]", "not closed by a `]` in the same path component"),
    ("[\x1b[2J", "\\x1b"),  # control characters are escaped in the message
])
def test_invalid_globs_are_one_line_errors(pattern: str, fragment: str) -> None:
    """`Scope: src/[z-a].c` and `split --paths 'src/[]'` ended in a
    re.error traceback; an invalid glob is now a one-line GlobError (an InputError)."""
    problem = glob_problem(pattern)
    assert problem is not None and fragment in problem and "\n" not in problem
    assert "\x1b" not in problem


def _star_runs() -> list[tuple[str, str]]:
    return [(LONG, "*" * 24 + "x"), (LONG, "*a" * 40 + "*z"), ("a" * 3000, "*a" * 200 + "*b"),
            (LONG, "**/" * 30 + "x"), (LONG, "?*" * 60), ("/" * 500, "**/*" * 50 + "x"),
            ("a/" * 2000, "**/" * (MAX_GLOB // 3) + "x"), ("a" * 1000, "*a" * 500 + "*b")]


@pytest.mark.parametrize(("path", "pattern"), _star_runs())
def test_star_runs_match_in_linear_time(path: str, pattern: str) -> None:
    """Each `**` became `.*` in a backtracking regex, so a 25-byte
    `Scope: ************************x` hung verify on a long enough path."""
    assert bounded(glob_match, path, pattern) is False


def test_a_glob_longer_than_max_glob_is_an_error() -> None:
    """Matching is O(len(pattern) * len(path)); the pattern's side is bounded
    (PATH_MAX): a longer glob, literal or not, is a one-line error, and a CODEOWNERS line
    that long owns nothing."""
    for pattern in ("x" * (MAX_GLOB + 1), "*" * (MAX_GLOB + 1)):
        problem = glob_problem(pattern)
        assert problem is not None and f"at most {MAX_GLOB}" in problem and len(problem) < 200
        with pytest.raises(GlobError):
            glob_match("x", pattern)
    assert glob_problem("*" * MAX_GLOB) is None
    assert _codeowners("/" + "[" * MAX_GLOB + " @a\n", "[" * MAX_GLOB) is None


def _codeowners(text: str, path: str) -> tuple[str, ...] | None:
    entry = codeowners_for(text, path)
    return None if entry is None else entry.owners


def test_codeowners_star_run_is_linear() -> None:
    """A 30-byte CODEOWNERS line hung draft-outreach (its own backtracking
    regex); CODEOWNERS now uses the shared matcher."""
    assert bounded(_codeowners, "*" * 28 + "x @a\n", LONG) is None
    assert bounded(_codeowners, "/" + "**/" * 20 + "*.cpp @a\n", LONG) == ("@a",)


def _editorconfig(text: str, path: str) -> list[str]:
    return sorted(editorconfig_for(text, path))


def test_editorconfig_star_run_is_linear() -> None:
    """.editorconfig sections had the same backtracking `.*` translation."""
    assert bounded(_editorconfig, "[" + "*" * 28 + "x]\nindent_style = tab\n", LONG) == []
    assert bounded(_editorconfig, "[{" + ",".join(["*a*a*a"] * 30) + "}]\nx = 1\n",
                   "a" * 200 + "b") == []


def test_codeowners_keeps_its_rules() -> None:
    """CODEOWNERS on the shared matcher keeps GitHub's anchoring and reads
    `[` as itself (CODEOWNERS has no character sets); `a/**/b` now also owns `a/b`."""
    text = "/src/[x]/ @lit\ndocs/**/api @api\n"
    assert _codeowners(text, "src/[x]/a.c") == ("@lit",)
    assert _codeowners(text, "src/x/a.c") is None
    assert _codeowners(text, "docs/api/ref.md") == ("@api",)
    assert _codeowners(text, "docs/v1/api/ref.md") == ("@api",)
    assert _codeowners(text, "x/docs/api") is None  # anchored: it has a `/` inside


def test_editorconfig_sets_braces_and_broken_sections() -> None:
    """.editorconfig shares the matcher; `[...]` sets work there as the
    EditorConfig spec says, braces hold globs, and a section whose glob is broken applies
    to no file instead of raising."""
    text = ("[*.[ch]]\na = 1\n[{*.md,docs/*.txt}]\nb = 2\n[[z-a]]\nc = 3\n[src/[]\nd = 4\n")
    assert _editorconfig(text, "src/x.c") == ["a"]
    assert _editorconfig(text, "src/x.cpp") == []
    assert _editorconfig(text, "README.md") == ["b"]
    assert _editorconfig(text, "x/README.md") == []  # a glob with a `/` is anchored
    assert _editorconfig(text, "docs/a.txt") == ["b"]
    assert _editorconfig(text, "z") == []


def test_compiled_globs_are_cached() -> None:
    assert compile_glob("src/*.c") is compile_glob("src/*.c")
