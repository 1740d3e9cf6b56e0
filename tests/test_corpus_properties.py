"""Property-based tests (hypothesis) on the parsers, the fingerprint and verify.

* series: parse(render(entries)) == entries; rewriting a series with no change is identity;
* headers: parse(render(header, diff)) keeps subject, author, trailers; header_text gives
  the header back byte for byte;
* patches: parse -> header_text + diff -> parse keeps files, hunks and the digest;
* the fingerprint ignores any header-only edit and changes under any diff change;
* verify's batched answer equals its per-patch answer on random stacks;
* refresh of an unchanged patch is byte-identical (real git, fewer examples).

The default suite runs a small budget (profile ``default``); ``HYPOTHESIS_PROFILE=long``
runs thousands of examples (tests/conftest.py registers both).
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.builders import system_config_off, tiny_c
from tests.corpus import bounded

# -- series ---------------------------------------------------------------------------------

NAME = st.from_regex(r"\A[0-9]{4}-[a-z0-9][a-z0-9_.-]{0,30}\.patch\Z")
COMMENT = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF,
                                exclude_characters="\x7f\x85"), max_size=30)


@st.composite
def series_text(draw):
    names = draw(st.lists(NAME, unique=True, max_size=12))
    strips = [draw(st.integers(0, 4)) for _ in names]
    lines: list[str] = []
    for name, strip in zip(names, strips, strict=True):
        for _ in range(draw(st.integers(0, 2))):
            lines.append(draw(st.sampled_from(["#", "   #", "\t# "])) + draw(COMMENT)
                         if draw(st.booleans()) else "")
        opt = "" if strip == 1 and draw(st.booleans()) else f" -p{strip}"
        tail = draw(st.sampled_from(["", "  # note", "\t#x", " "]))
        lines.append(draw(st.sampled_from(["", " ", "\t"])) + name + opt + tail)
    return names, strips, "\n".join(lines) + "\n"


@given(series_text())
def test_series_round_trip(data) -> None:
    from patchctl.model.stack import parse_series, rewrite_series

    names, strips, text = data
    entries = parse_series(text)
    assert [(e.name, e.strip) for e in entries] == list(zip(names, strips, strict=True))
    assert rewrite_series(text) == text
    again = "".join(e.name + ("" if e.strip == 1 else f" -p{e.strip}") + "\n" for e in entries)
    assert [(e.name, e.strip) for e in parse_series(again)] == \
        [(e.name, e.strip) for e in entries]


# -- headers and patches ----------------------------------------------------------------------

DIFF = (" src/util.c | 1 +\n 1 file changed, 1 insertion(+)\n\n"
        "diff --git a/src/util.c b/src/util.c\n"
        "index 04cbe81..6a2328d 100644\n--- a/src/util.c\n+++ b/src/util.c\n"
        "@@ -1,3 +1,4 @@\n #include \"tiny.h\"\n+/* added */\n \n"
        " /* Helpers shared by the ops. */\n")
WORDS = st.text(st.characters(min_codepoint=33, max_codepoint=126, exclude_characters=":[]"),
                min_size=1, max_size=12)
SUBJECT = st.lists(WORDS, min_size=1, max_size=6).map(" ".join)
BODY_LINE = st.lists(WORDS, min_size=1, max_size=8).map(" ".join).filter(
    lambda s: s != "---" and not s.startswith(("diff", "From", "Index", "+++", "@@")))
BODY = st.lists(st.one_of(BODY_LINE, st.just("")), max_size=6).map(
    lambda ls: "\n".join(ls).strip("\n")).map(lambda b: "" if not b.strip() else b)
TRAILER_KEYS = ["Concern", "Upstream-Status", "Scope", "Reproducer", "Forwarded", "Bug",
                "Origin", "Binary", "Assisted-by"]
TRAILERS = st.lists(st.tuples(st.sampled_from(TRAILER_KEYS), SUBJECT), max_size=6)
AUTHOR = st.tuples(st.from_regex(r"\A[A-Z][a-z]{1,10}( [A-Z][a-z]{1,10})?\Z"),
                   st.from_regex(r"\A[a-z]{1,8}@[a-z]{1,8}\.invalid\Z")).map(
    lambda t: f"{t[0]} <{t[1]}>")


def _parse(text: str):
    from patchctl.model.patchtext import reparse

    return reparse(text, name="0001-x.patch", path=Path("0001-x.patch"))


@given(SUBJECT, BODY, TRAILERS, AUTHOR)
def test_header_round_trip(subject: str, body: str, trailers, author: str) -> None:
    from patchctl.model import patchtext

    # a body whose last paragraph reads as trailers is one: keep the cases unambiguous
    assume(not body or not re.fullmatch(r"[A-Za-z][A-Za-z0-9-]*:.*", body.split("\n")[-1]))
    # patchctl always writes trailers (a header with neither body nor trailers has no
    # blank line before `---`, and is no mail: see SECURITY.md's notes)
    assume(body or trailers)
    header = patchtext.mail_header(author=author, date="Thu, 1 Jan 2026 00:00:00 +0000",
                                   subject=subject, body=body, trailers=trailers)
    p = _parse(patchtext.render(header, DIFF))
    assert p.subject == subject
    assert p.author == author
    assert p.body == body
    for key in TRAILER_KEYS:
        assert p.metadata.get(key, []) == [v for k, v in trailers if k == key]
    assert patchtext.header_text(p) == header
    again = _parse(patchtext.render(patchtext.header_text(p), DIFF))
    assert (again.subject, again.body, again.metadata, again.digest) == \
        (p.subject, p.body, p.metadata, p.digest)


@st.composite
def file_diff(draw, index: int):
    """One file diff with 1-3 hunks of random lines (arithmetic consistent)."""
    path = f"src/f{index}.c"
    out = [f"diff --git a/{path} b/{path}", "index 1111111..2222222 100644",
           f"--- a/{path}", f"+++ b/{path}"]
    start = 1
    for _ in range(draw(st.integers(1, 3))):
        start += draw(st.integers(0, 40))
        lines = draw(st.lists(st.tuples(st.sampled_from(" +-"), WORDS), min_size=1, max_size=8))
        assume(any(s != " " for s, _ in lines))
        old = sum(1 for s, _ in lines if s != "+")
        new = sum(1 for s, _ in lines if s != "-")
        heading = draw(st.sampled_from(["", " int f(void)", " static x"]))
        out.append(f"@@ -{start},{old} +{start},{new} @@{heading}")
        out += [s + w for s, w in lines]
        start += old + 1
    return "\n".join(out) + "\n"


@st.composite
def patch_text(draw):
    from patchctl.model import patchtext

    diffs = [draw(file_diff(i)) for i in range(draw(st.integers(1, 3)))]
    header = patchtext.mail_header(author=draw(AUTHOR), date="Thu, 1 Jan 2026 00:00:00 +0000",
                                   subject=draw(SUBJECT), body=draw(BODY),
                                   trailers=draw(TRAILERS))
    return header, " 1 file changed\n\n" + "".join(diffs)


@given(patch_text())
def test_patch_round_trip(data) -> None:
    from patchctl.model import patchtext

    header, diff = data
    p = _parse(patchtext.render(header, diff))
    q = _parse(patchtext.render(patchtext.header_text(p), diff))
    assert q.files == tuple(f for f in p.files)
    assert q.digest == p.digest and q.metadata == p.metadata
    assert sum(len(f.hunks) for f in p.files) == diff.count("\n@@ ")


@given(patch_text(), SUBJECT, BODY, TRAILERS)
def test_fingerprint_ignores_header_only_edits(data, subject, body, trailers) -> None:
    from patchctl.model import patchtext

    header, diff = data
    other = patchtext.mail_header(author="Someone Else <x@y.invalid>", date="Fri, 2 Jan 2026 "
                                  "00:00:00 +0000", subject=subject, body=body, trailers=trailers)
    assert _parse(patchtext.render(header, diff)).digest == \
        _parse(patchtext.render(other, diff)).digest


@given(patch_text(), st.data())
def test_fingerprint_changes_under_any_diff_change(data, draw) -> None:
    from patchctl.model import patchtext

    header, diff = data
    lines = diff.split("\n")
    # any byte git applies: a hunk body line, a file header, an index or mode line
    first = next(i for i, ln in enumerate(lines) if ln.startswith("diff --git"))
    candidates = [i for i, ln in enumerate(lines) if i >= first and (
        (ln[:1] in " +-" and len(ln) > 1) or ln.startswith(("diff --git", "index ")))]
    i = draw.draw(st.sampled_from(candidates))
    line = lines[i]
    j = draw.draw(st.integers(1, len(line) - 1))
    new_char = draw.draw(st.sampled_from("xyz0")).replace(line[j], "Q")
    lines[i] = line[:j] + new_char + line[j + 1:]
    changed = "\n".join(lines)
    before = _parse(patchtext.render(header, diff))
    try:
        after = _parse(patchtext.render(header, changed))
    except Exception as e:  # a change can make the diff unparseable: that is a change too
        from patchctl.errors import StackError

        assert isinstance(e, StackError)
        return
    assert after.digest != before.digest, (lines[i], line)


# -- verify: batched == per-patch ------------------------------------------------------------

BASE = tiny_c().split("\n")


def _op_patch(op: int, kind: str, shift: int) -> str:
    """A patch changing `y += K;` in tiny_op_<op>: clean, offset by ``shift``, or with a
    context line that is not at the pin (it fails)."""
    target = next(i for i, ln in enumerate(BASE) if ln == f"int tiny_op_{op:02d}(int x)") + 3
    lo = target - 3
    ctx = BASE[lo:target]
    after = BASE[target + 1:target + 4]
    if kind == "fails":
        ctx = [*ctx[:-1], ctx[-1] + " /* not upstream */"]
    if lo + 1 + shift < 2:
        shift = -shift  # git anchors a hunk that starts at line 1 to the file's start
    start = lo + 1 + (shift if kind == "offset" else 0)
    body = [" " + c for c in ctx] + ["-" + BASE[target], "+" + BASE[target] + " /* p */"] + \
        [" " + c for c in after]
    return ("From: A <a@b.invalid>\nSubject: [PATCH] op\n\nWhy.\n\nConcern: op\n"
            "Upstream-Status: Pending\nScope: src/tiny.c\n---\n"
            "diff --git a/src/tiny.c b/src/tiny.c\n--- a/src/tiny.c\n+++ b/src/tiny.c\n"
            f"@@ -{start},7 +{start},7 @@\n" + "\n".join(body) + "\n")


STACKS = st.lists(st.tuples(st.integers(0, 23), st.sampled_from(["clean", "offset", "fails"]),
                            st.integers(-6, 6).filter(bool)),
                  max_size=6, unique_by=lambda t: t[0])


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(STACKS)
def test_verify_batched_equals_per_patch(upstream_tiny, tmp_path_factory, monkeypatch,
                                         stack) -> None:
    from patchctl.model.stack import find_stack
    from patchctl.verify import engine as verify_mod
    from tests.builders import make_project

    root = tmp_path_factory.mktemp("stack")
    patches = [(f"{i + 1:04d}-op.patch", _op_patch(op, kind, shift))
               for i, (op, kind, shift) in enumerate(stack)]
    project = make_project(root / "p", upstream_tiny, patches)

    def answer(report):
        return [(p.name, p.grade, [(o.file, o.hunk, o.offset) for o in p.offsets],
                 p.failure.reason if p.failure else None) for p in report.patches]

    batched = verify_mod.verify(find_stack(project), upstream_tiny.path)
    run = verify_mod._Run.run
    with monkeypatch.context() as m:  # no round trip, no batch: one `git apply` per patch
        m.setattr(verify_mod._Run, "take", lambda self, early, graded, pin_tree: False)
        m.setattr(verify_mod._Run, "run",
                  lambda self, pin_tree, batch=True: run(self, pin_tree, batch=False))
        single = verify_mod.verify(find_stack(project), upstream_tiny.path)
    assert single.mode == "per-patch" or not stack
    assert answer(batched) == answer(single)
    assert batched.reversed_tree == single.reversed_tree
    expect = []
    failed = False
    for _, kind, _ in stack:
        expect.append("skipped" if failed else {"clean": "exact", "offset": "offset",
                                                "fails": "failed"}[kind])
        failed = failed or kind == "fails"
    assert [p.grade for p in batched.patches] == expect


@pytest.fixture(scope="module")
def upstream_tiny(tmp_path_factory: pytest.TempPathFactory):

    from tests.builders import make_upstream

    with system_config_off():
        return make_upstream(tmp_path_factory.mktemp("up") / "tiny")


# -- refresh of an unchanged patch ------------------------------------------------------------


@settings(max_examples=settings().max_examples // 10 + 2,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(0, 23), min_size=1, max_size=4, unique=True), st.data())
def test_refresh_of_an_unchanged_patch_is_byte_identical(cli, upstream_tiny, tmp_path_factory,
                                                         ops, data) -> None:
    from tests.builders import make_project

    root = tmp_path_factory.mktemp("refresh")
    project = make_project(root / "p", upstream_tiny, [])
    for i, op in enumerate(ops):
        (root / f"{i}.patch").write_text(_op_patch(op, "clean", 0))
    r = cli("-C", str(project), "import", *(str(root / f"{i}.patch") for i in range(len(ops))))
    assert r.code == 0, r.err
    before = {p.name: p.read_bytes() for p in (project / "stack/patches").iterdir()}
    which = data.draw(st.integers(1, len(ops)))
    assert cli("-C", str(project), "edit", str(which)).code == 0
    done = cli("-C", str(project), "refresh")
    assert done.code == 0, done.err
    assert {p.name: p.read_bytes() for p in (project / "stack/patches").iterdir()} == before


# -- globs: fnmatch within a component, the old regex across components ---------------------

_NAME = "ab!-]^[\\"  # path characters, the ones that mean something in a set included
_RANGE = st.tuples(st.sampled_from("ab-]^!"), st.sampled_from("ab-]^!")).map(
    lambda t: f"{min(t)}-{max(t)}")
_SET = st.builds(lambda neg, items: "[" + ("!" if neg else "") + "".join(items) + "]",
                 st.booleans(), st.lists(st.one_of(st.sampled_from(_NAME), _RANGE),
                                         min_size=1, max_size=3))
_COMPONENT_GLOB = st.one_of(
    st.text("ab!-]^[*?\\", max_size=10),  # anything, broken sets included
    st.lists(st.one_of(st.sampled_from(["a", "b", "!", "-", "^", "*", "?", "**"]), _SET),
             max_size=6).map("".join))


def _with_fnmatch(path: str, pattern: str) -> tuple[bool | str, bool]:
    import fnmatch

    from patchctl.globs import GlobError, glob_match

    try:
        ours: bool | str = glob_match(path, pattern)
    except GlobError as e:
        ours = str(e)
    return ours, fnmatch.fnmatchcase(path, pattern)


@settings(max_examples=settings().max_examples * 10)
@given(_COMPONENT_GLOB, st.text(_NAME, max_size=8))
def test_glob_within_one_component_is_fnmatch(pattern: str, name: str) -> None:
    """`[!x]` was read as the set {!, x} and broken sets gave tracebacks.
    Within one path component the matcher is fnmatch, except that it refuses (one line)
    the sets fnmatch silently reads as text or as empty: a `[` never closed, a reversed
    range. Each case runs under a time bound."""
    ours, theirs = bounded(_with_fnmatch, name, pattern)
    if isinstance(ours, str):
        assert "[" in pattern and ("is not closed" in ours or "is reversed" in ours), ours
        assert "\n" not in ours
    else:
        assert ours == theirs, (pattern, name)


_PATH_TOKENS = ["a", "b", "/", "*", "**", "**/", "?", "[ab]", "[!a]"]
_REFERENCE = {"*": "[^/]*", "**": ".*", "**/": "(?:.*/)?", "?": "[^/]", "[ab]": "[ab]",
              "[!a]": "[^a/]"}


def _no_star_runs(tokens: list[str]) -> bool:
    """Star tokens side by side read as one longer run, and `**` then `/` as `**/`: not
    what the reference (one regex per token) means."""
    return not any((a.endswith("*") and b.startswith("*")) or (a == "**" and b[0] == "/")
                   for a, b in itertools.pairwise(tokens))


def _with_reference(path: str, tokens: list[str]) -> tuple[bool, bool, bool, bool]:
    """The matcher and, as reference, the regex the old `_glob_regex` built (small inputs:
    its backtracking stays cheap), plain and as CODEOWNERS reads a directory."""
    import re

    from patchctl.globs import compile_glob

    glob = compile_glob("".join(tokens))
    rx = "".join(_REFERENCE.get(t, re.escape(t)) for t in tokens)
    return (glob.match(path), re.fullmatch(rx, path) is not None,
            glob.match(path, or_parent=True), re.fullmatch(rx + "(?:/.*)?", path) is not None)


@settings(max_examples=settings().max_examples * 10)
@given(st.lists(st.sampled_from(_PATH_TOKENS), max_size=7).filter(_no_star_runs),
       st.text("ab/", max_size=10))
def test_glob_across_components_keeps_the_old_semantics(tokens: list[str], path: str) -> None:
    """`**` was `.*` in a backtracking regex (exponential). The linear matcher
    answers as that regex did: `*`, `?` and sets within a component, `**` across any,
    `**/` empty or ending in `/`. Each case runs under a time bound."""
    ours, reference, ours_dir, reference_dir = bounded(_with_reference, path, tokens)
    assert ours == reference, ("".join(tokens), path)
    assert ours_dir == reference_dir, ("".join(tokens), path)
