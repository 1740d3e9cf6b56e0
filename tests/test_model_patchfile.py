"""Parsing patch files: git format-patch, plain DEP-3/quilt, and the fingerprint digest."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchctl.errors import StackError
from patchctl.model.patchfile import parse_patch

DIFF = """diff --git a/src/a.c b/src/a.c
index 1111111..2222222 100644
--- a/src/a.c
+++ b/src/a.c
@@ -1,3 +1,3 @@ int main(void)
 one
-two
+TWO
 three
"""

DEP3 = """Description: Fix the frobnicator. Longer text
 continues here.
Author: Jane Dev <jane@example.org>
Origin: upstream, https://example.org/commit/abc
Forwarded: not-needed
Concern: frob
Upstream-Status: Backport [abc]
Scope: src/*.c
Last-Update: 2026-01-01

--- a/src/a.c
+++ b/src/a.c
@@ -1,3 +1,3 @@
 one
-two
+TWO
 three
"""


def _mail(trailers: str, subject: str = "[PATCH 1/2] llama : do a thing") -> str:
    return (f"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
            f"From: Dev <dev@example.org>\nDate: Thu, 1 Jan 2026 00:00:00 +0000\n"
            f"Subject: {subject}\n\nBody line.\n\nConcern: x\n{trailers}\n---\n"
            " src/a.c | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n\n"
            f"{DIFF}-- \n2.39.5\n\n")


def test_format_patch_headers_trailers_and_diff() -> None:
    p = parse_patch(_mail("Upstream-Status: Pending\nScope: src/a.c").encode(), path=Path("x"),
                    name="x.patch")
    assert p.subject == "llama : do a thing"
    assert p.author == "Dev <dev@example.org>"
    assert p.body == "Body line."
    assert p.metadata == {"Concern": ["x"], "Upstream-Status": ["Pending"], "Scope": ["src/a.c"]}
    assert [f.path for f in p.files] == ["src/a.c"]
    assert p.files[0].hunks[0].lines == (" one", "-two", "+TWO", " three")
    assert (p.added, p.removed) == (1, 1)
    assert p.mail_form


def test_a_last_removed_dash_line_is_the_diffs_not_a_signature() -> None:
    """Regression: a diff whose last line removes a `- ` line (`-- `) had that line taken
    for format-patch's signature and cut: the hunk was short and the patch failed to
    parse. A signature has text after its `-- `; with one, both are told apart."""
    diff = DIFF.replace(" three\n", "-- \n").replace("-1,3 +1,3", "-1,3 +1,2")
    for tail in ("", "-- \n2.39.5\n\n"):
        text = _mail("Upstream-Status: Pending").replace(f"{DIFF}-- \n2.39.5\n\n", diff + tail)
        p = parse_patch(text.encode(), path=Path("x"), name="x.patch")
        assert p.files[0].hunks[0].lines == (" one", "-two", "+TWO", "-- "), tail
        assert (p.added, p.removed) == (1, 2)


def test_diff_text_is_the_diff_alone() -> None:
    """The diff without the mail header, message,
    trailers, diffstat and signature; a DEP-3 header goes too."""
    mail = parse_patch(_mail("Scope: src/a.c").encode(), path=Path("x"), name="x.patch")
    assert mail.diff_text() == DIFF
    dep3 = parse_patch(DEP3.encode(), path=Path("x"), name="x.patch")
    assert dep3.diff_text() == DEP3[DEP3.index("--- a/src/a.c"):]


def test_rfc2047_subject_is_decoded() -> None:
    p = parse_patch(_mail("Upstream-Status: Pending", "=?UTF-8?q?[PATCH]_caf=C3=A9_fix?=")
                    .encode(), path=Path("x"), name="x")
    assert p.subject == "café fix"


def test_plain_dep3_patch() -> None:
    p = parse_patch(DEP3.encode(), path=Path("x"), name="x")
    assert not p.mail_form
    assert p.concern == "frob"
    assert p.upstream_status == "Backport [abc]"
    assert p.scope == ["src/*.c"]
    assert p.meta("Forwarded") == "not-needed"
    assert p.subject == "Fix the frobnicator"
    assert p.files[0].path == "src/a.c"


def test_the_dashes_ending_a_dep3_header_are_not_its_body() -> None:
    """The `---` line that ends a DEP-3 header (and a diffstat after it) was
    read as the patch's body; import, which now refuses a body holding a `---` line
    (it would end the message of the patch it writes), refused every such patch."""
    text = DEP3.replace("--- a/src/a.c", "Prose.\n---\n a.c | 2 +-\n\n--- a/src/a.c", 1)
    p = parse_patch(text.encode(), path=Path("x"), name="x")
    assert p.body.endswith("Prose.") and "---" not in p.body and "a.c |" not in p.body
    assert p.digest == parse_patch(DEP3.encode(), path=Path("x"), name="x").digest


def test_digest_ignores_headers_but_not_the_diff() -> None:
    a = parse_patch(_mail("Upstream-Status: Pending").encode(), path=Path("x"), name="x")
    b = parse_patch(_mail("Upstream-Status: Submitted [https://x/1]").encode(), path=Path("x"),
                    name="x")
    c = parse_patch(_mail("Upstream-Status: Pending").replace("+TWO", "+Two").encode(),
                    path=Path("x"), name="x")
    d = parse_patch(DEP3.encode(), path=Path("x"), name="x")
    e = parse_patch(DEP3.replace("Backport [abc]", "Pending").encode(), path=Path("x"), name="x")
    assert a.digest == b.digest and d.digest == e.digest  # whatever the header says
    assert a.digest != c.digest
    # pcfp2: the git form's `diff --git` and `index ... 100644` lines are read by git
    # apply (the mode is checked), so the plain form of the same hunks is another diff.
    assert a.digest != d.digest


def test_hunk_line_points_at_the_header() -> None:
    text = _mail("Upstream-Status: Pending")
    p = parse_patch(text.encode(), path=Path("x"), name="x")
    assert text.splitlines()[p.files[0].hunks[0].line - 1].startswith("@@ -1,3 +1,3 @@")
    assert text.splitlines()[p.files[0].line - 1].startswith("diff --git")


@pytest.mark.parametrize("data", [b"", b"\n\n", b"hello\nworld\n"])
def test_not_a_patch(data: bytes) -> None:
    with pytest.raises(StackError):
        parse_patch(data, path=Path("x"), name="x")


def test_strip_levels() -> None:
    text = DIFF.replace("a/src/a.c", "a/x/src/a.c").replace("b/src/a.c", "b/x/src/a.c")
    p = parse_patch(text.encode(), path=Path("x"), name="x", strip=2)
    assert p.files[0].path == "src/a.c"


QUILT = """Description: two files, quilt style
Author: A <a@example.invalid>

--- a/src/one.c
+++ b/src/one.c
@@ -1,2 +1,2 @@
 a
-b
+c
--- a/src/two.c
+++ b/src/two.c
@@ -5,2 +5,2 @@
 d
-e
+f
Index: b/src/three.c
===================================================================
--- a/src/three.c
+++ b/src/three.c
@@ -5,1 +5,1 @@
-e
+f
"""


def test_quilt_style_files_point_at_their_own_header() -> None:
    """Regression: in a plain `---/+++` multi-file diff every file after the first was
    reported at the first file's line, so lint findings pointed at the wrong place."""
    from patchctl.model.lint import lint_patch

    p = parse_patch(QUILT.encode(), path=Path("x"), name="x")
    lines = QUILT.splitlines()
    assert [lines[f.line - 1] for f in p.files] == [
        "--- a/src/one.c", "--- a/src/two.c", "Index: b/src/three.c"]
    scoped = parse_patch(QUILT.replace("Author:", "Scope: src/one.c\nAuthor:").encode(),
                         path=Path("x"), name="x")
    slines = QUILT.replace("Author:", "Scope: src/one.c\nAuthor:").splitlines()
    where = {f.message.split(" ")[0]: slines[f.line - 1] for f in lint_patch(scoped)
             if f.code == "scope"}
    assert where == {"src/two.c": "--- a/src/two.c", "src/three.c": "Index: b/src/three.c"}


def _hunks(diff: str):
    return parse_patch(diff.encode(), path=Path("x"), name="x").files[0].hunks


def test_apply_hunks_places_hunks_as_git_apply_does(tmp_path: Path) -> None:
    """The import's batched path re-makes each file with apply_hunks; every case here
    is checked against `git apply` on the same input."""
    import subprocess

    from patchctl.model.patchfile import apply_hunks

    cases = [
        ("a\nb\nc\nd\ne\n", "--- a/f\n+++ b/f\n@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n"),
        ("x\ny\na\nb\nc\nd\ne\n", "--- a/f\n+++ b/f\n@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n"),
        ("b\nc\nd\nq\nb\nc\nd\n", "--- a/f\n+++ b/f\n@@ -5,3 +5,3 @@\n b\n-c\n+C\n d\n"),
        ("a\nb", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n"
                 "+b\n"),
        ("a\nb\n", "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n a\n b\n+c\n"),
        ("", "--- /dev/null\n+++ b/f\n@@ -0,0 +1,2 @@\n+one\n+two\n\\ No newline at end of "
             "file\n"),
    ]
    for n, (before, diff) in enumerate(cases):
        repo = tmp_path / f"r{n}"
        repo.mkdir()
        if diff.startswith("--- a/"):
            (repo / "f").write_text(before)
        subprocess.run(["git", "apply", "-"], cwd=repo, input=diff, text=True, check=True,
                       capture_output=True)
        ours = apply_hunks(before.encode(), _hunks(diff))
        assert ours == (repo / "f").read_bytes(), n
    # A hunk without trailing context must match at the end; git refuses it elsewhere.
    assert apply_hunks(b"a\nb\nc\n", _hunks("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n")) \
        is None
