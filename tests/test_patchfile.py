"""Parsing patch files: git format-patch, plain DEP-3/quilt, and the fingerprint digest."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchctl.errors import StackError
from patchctl.patchfile import parse_patch

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
