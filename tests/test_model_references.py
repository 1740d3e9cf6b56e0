"""model/references.py: what a patch names upstream, what a commit merged, containment (no git)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from patchctl.model import references as refs
from patchctl.model.patchtext import reparse

SLUG = "tiny-org/tiny"
SHA = "6bcd82992791aa3d1c0c3d2b5e9f1e8a7b6c5d4e"


def patch(subject: str, body: str = "Why.", trailers: str = "Concern: x",
          diff: str = "") -> refs.Patch:
    diff = diff or ("diff --git a/f.c b/f.c\n--- a/f.c\n+++ b/f.c\n@@ -1,1 +1,2 @@\n"
                    " int a;\n+int b;\n")
    text = (f"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
            f"From: A <a@b.invalid>\nDate: Thu, 1 Jan 2026 00:00:00 +0000\n"
            f"Subject: [PATCH] {subject}\n\n{body}\n\n{trailers}\n---\n{diff}")
    return reparse(text, name="p.patch", path=Path("p.patch"))


def labels(p: refs.Patch, slug: str | None = SLUG) -> list[str]:
    return [f"{r.kind}:{r.value}@{r.where}" for r in refs.references(p, slug)]


@pytest.mark.parametrize(("url", "slug"), [
    ("https://github.com/ggml-org/llama.cpp", "ggml-org/llama.cpp"),
    ("https://github.com/GGML-org/llama.cpp.git", "ggml-org/llama.cpp"),
    ("git@github.com:ggml-org/llama.cpp.git", "ggml-org/llama.cpp"),
    ("ssh://git@github.com/ggml-org/llama.cpp/", "ggml-org/llama.cpp"),
    ("https://gitlab.com/ggml-org/llama.cpp", None),
    ("tiny-upstream.bundle", None),
])
def test_repo_slug(url: str, slug: str | None) -> None:
    assert refs.repo_slug(url) == slug


def test_subject_numbers_and_urls_of_the_upstream_only() -> None:
    p = patch("vulkan: fix foo (#123)",
              body="See #999 in the body (not a reference), "
                   "https://github.com/Tiny-Org/Tiny/pull/124, "
                   "https://github.com/other/tiny/pull/125, tiny-org/tiny#126, other/tiny#127.")
    assert labels(p) == ["pr:123@subject", "pr:124@body", "pr:126@body"]
    assert labels(p, None) == ["pr:123@subject"]  # a pin URL not on GitHub: no URL counts


def test_trailers_and_cherry_picks() -> None:
    p = patch("x", body=f"Text.\n\n(cherry picked from commit {SHA[:10]})",
              trailers=f"Upstream-Status: Backport [#77]\nOrigin: upstream, "
                       f"https://github.com/tiny-org/tiny/commit/{SHA}\n"
                       f"Bug: https://github.com/tiny-org/tiny/issues/78\n"
                       "Applied-Upstream: 1234567")
    assert labels(p) == [f"commit:{SHA[:10]}@body", f"commit:{SHA}@Origin",
                         "pr:77@Upstream-Status", "pr:78@Bug"]


def test_a_number_alone_is_no_commit_id_and_other_repos_hash_is_no_pr() -> None:
    p = patch("util: port other/tiny#5", trailers="Origin: 20260101, deadbee")
    assert labels(p) == ["commit:deadbee@Origin"]


@pytest.mark.parametrize(("subject", "pr"), [
    ("vulkan: fix foo (#12345)", "12345"),
    ("vulkan: fix foo (#12345) ", "12345"),
    ("Merge pull request #77 from someone/branch", "77"),
    ("docs : follow-up to #204 (#205)", "205"),
    ("docs : follow-up to #204", None),
    ("Merge branch 'master' into x", None),
])
def test_merged_pr(subject: str, pr: str | None) -> None:
    assert refs.merged_pr(subject) == pr


@dataclass
class C:
    id: str
    subject: str
    body: str = ""


def test_landing_is_the_oldest_unreverted_commit() -> None:
    a, b, r = "a" * 40, "b" * 40, "c" * 40
    log = [C(r, 'Revert "x (#5)"', f"This reverts commit {b}."), C(b, "x again (#5)"),
           C(a, "x (#5)")]  # newest first, as git log lists them
    found = refs.landing(refs.references(patch("x (#5)"), SLUG), log)
    assert found is not None and found[1].id == a
    assert refs.landing(refs.references(patch("x (#5)"), SLUG), log[:2]) is None  # reverted
    assert refs.landing(refs.references(patch("x (#5)"), SLUG),
                        [C(r, "revert", f"This reverts commit {a}."), C(a, "x (#5)")]) is None
    assert refs.landing(refs.references(patch("y", body=f"(cherry picked from commit "
                                                        f"{a[:7]})"), SLUG), log)[1].id == a


def _diff(*lines: str) -> str:
    body = "\n".join(lines)
    return f"diff --git a/f.c b/f.c\n--- a/f.c\n+++ b/f.c\n@@ -1,1 +1,{len(lines)} @@\n{body}\n"


def test_contained_compares_changed_lines_as_multisets() -> None:
    ours = patch("x", diff=_diff(" int a;", "+int  b;", "+}", "+"))
    theirs = refs.diff_patch(_diff(" int a;", "+/* b */", "+int b;"), "c")
    assert refs.contained(ours, theirs)  # whitespace runs, braces and blanks do not count
    twice = patch("x", diff=_diff(" int a;", "+int b;", "+int b;"))
    assert not refs.contained(twice, theirs)
    assert not refs.contained(ours, None)
    assert refs.diff_patch("", "c") is None
    assert "-+int b;" in refs.interdiff(twice, theirs, "c" * 40)


def test_interdiff_is_bounded() -> None:
    big = patch("x", diff=_diff(" int a;", *(f"+int b{i};" for i in range(200))))
    text = refs.interdiff(big, None, "c" * 40)
    lines = text.splitlines()
    assert len(lines) == refs.MAX_INTERDIFF_LINES + 1 and lines[-1].endswith("more lines")


def test_a_patch_with_nothing_to_compare_is_never_contained() -> None:
    """Changed lines that are all short or punctuation, a mode change and a binary file
    compared as nothing, so any commit touching the file "contained" the patch and was
    named as its landing. A mode counts only when the commit sets the same one."""
    theirs = refs.diff_patch(_diff(" int a;", "+int b;"), "c")
    entry = patch("x", diff="diff --git a/f.c b/f.c\n--- a/f.c\n+++ b/f.c\n@@ -1,3 +1,3 @@\n"
                            " {\n-    0,\n+    1,\n };\n")
    assert not refs.contained(entry, theirs)
    chmod = patch("x", diff="diff --git a/f.c b/f.c\nold mode 100644\nnew mode 100755\n")
    assert not refs.contained(chmod, theirs)
    assert refs.contained(chmod, refs.diff_patch(
        "diff --git a/f.c b/f.c\nold mode 100644\nnew mode 100755\n--- a/f.c\n+++ b/f.c\n"
        "@@ -1,1 +1,2 @@\n int a;\n+int b;\n", "c"))
    binary = patch("x", diff="diff --git a/f.c b/f.c\nindex 1111111..2222222 100644\n"
                             "Binary files a/f.c and b/f.c differ\n")
    assert not refs.contained(binary, theirs)
