"""Corpus: hostile patch files, each read by verify, series, lock and import.

Each case is one mutation of a good `git format-patch` patch (the standard
0001 that adds ``tiny_square``) and states what verify and import must answer:
verify reports a broken patch as a finding (exit 1, graded ``invalid`` or
``failed``) or a correct grade; import takes it (0) or refuses it with one line
(2) and writes nothing. No case may end in a traceback.
"""

from __future__ import annotations

import base64
import json
import quopri
from pathlib import Path

import pytest

from tests.builders import Upstream, make_project
from tests.corpus import FINDINGS, OK, USAGE, Case, check, params, tree_digest

NAME = "0001-util-add-tiny_square.patch"
HEADER_END = "---\n src/util.c"
DIFF_GIT = "diff --git a/src/util.c b/src/util.c\n"
HUNK = "@@ -13,6 +13,11 @@ int tiny_clamp(int v, int lo, int hi)\n"
BODY = (" }\n \n+int tiny_square(int v)\n+{\n+    return v * v;\n+}\n+\n int tiny_abs(int v)\n"
        " {\n     return v < 0 ? -v : v;\n")


def sub(old: str, new: str, count: int = 1):
    def f(text: str) -> bytes:
        assert old in text, old
        return text.replace(old, new, count).encode("utf-8", "surrogateescape")
    return f


def raw(fn):
    def f(text: str) -> bytes:
        return fn(text.encode())
    return f


def cut_at(fraction: float):
    def f(text: str) -> bytes:
        start = text.index(DIFF_GIT)
        return text[: start + int((len(text) - start) * fraction)].encode()
    return f


def header_only(extra: str):
    """A diff-free edit of the header (stays a valid patch)."""
    return sub("Reproducer: reproducers/square\n", f"Reproducer: reproducers/square\n{extra}")


def new_file(path: str, mode: str = "100644", body: str = "+hello\n", count: str = "1"):
    """Append a second file diff creating ``path``."""
    def f(text: str) -> bytes:
        return (text + f"diff --git a/{path} b/{path}\nnew file mode {mode}\n--- /dev/null\n"
                f"+++ b/{path}\n@@ -0,0 +1,{count} @@\n{body}").encode("utf-8", "surrogateescape")
    return f


def mail_body(encoding: str):
    """The whole message body (trailers, diff) as base64 or quoted-printable, as mailers
    send it."""
    def f(text: str) -> bytes:
        head, _, body = text.partition("\n\n")
        data = body.encode()
        enc = base64.encodebytes(data) if encoding == "base64" else quopri.encodestring(data)
        return (head + f"\nMIME-Version: 1.0\nContent-Type: text/plain; charset=UTF-8\n"
                f"Content-Transfer-Encoding: {encoding}\n\n").encode() + enc
    return f


def many_files(n: int):
    def f(text: str) -> bytes:
        extra = "".join(f"diff --git a/gen/f{i}.c b/gen/f{i}.c\nnew file mode 100644\n"
                        f"--- /dev/null\n+++ b/gen/f{i}.c\n@@ -0,0 +1 @@\n+int f{i};\n"
                        for i in range(n))
        return sub("Scope: src/util.c", "Scope: src/util.c gen/*.c")(text + extra)
    return f


def huge_hunk(n: int):
    body = "".join(f"+int big_{i};\n" for i in range(n))
    return new_file("src/big.c", body=body, count=str(n))


# (id, mutation, verify exit, import exit, fragment in verify's output)
V_OK, V_FIND = OK, FINDINGS
V_ANY, I_ANY = (OK, FINDINGS), (OK, USAGE)  # as git decides: no traceback, consistent
CASES = [Case(i, (m, imp), v, frag) for i, m, v, imp, frag in [
    ("identity", lambda t: t.encode(), V_OK, OK, ""),
    ("empty", lambda t: b"", V_FIND, USAGE, "the patch is empty"),
    ("whitespace-only", lambda t: b" \n\t\n\n", V_FIND, USAGE, "the patch is empty"),
    ("prose-only", lambda t: t[: t.index("---\n")].encode(), V_FIND, USAGE, "not a diff"),
    ("header-only-mail", lambda t: t[: t.index(DIFF_GIT)].encode(), V_FIND, USAGE, "not a diff"),
    *[(f"truncated-{int(f * 100)}", cut_at(f), V_FIND, USAGE, "")
      for f in (0.02, 0.1, 0.3, 0.45, 0.6, 0.75, 0.9, 0.97)],
    ("truncated-mid-line", lambda t: t[:-5].encode(), V_FIND, USAGE, ""),
    ("hunk-source-len-plus", sub("@@ -13,6 +13,11", "@@ -13,7 +13,11"), V_FIND, USAGE, ""),
    ("hunk-source-len-minus", sub("@@ -13,6 +13,11", "@@ -13,5 +13,11"), V_FIND, USAGE, ""),
    ("hunk-target-len-plus", sub("@@ -13,6 +13,11", "@@ -13,6 +13,12"), V_FIND, USAGE, ""),
    ("hunk-target-len-minus", sub("@@ -13,6 +13,11", "@@ -13,6 +13,10"), V_FIND, USAGE, ""),
    ("hunk-zero-lengths", sub("@@ -13,6 +13,11", "@@ -13,0 +13,0"), V_FIND, USAGE, ""),
    ("hunk-offset", sub("@@ -13,6 +13,11", "@@ -10,6 +10,11"), V_OK, OK, "offset"),
    ("hunk-past-eof", sub("@@ -13,6 +13,11", "@@ -900,6 +900,11"), V_ANY, I_ANY,
     ""),
    ("hunk-start-zero", sub("@@ -13,6 +13,11", "@@ -0,6 +0,11"), V_FIND, USAGE, ""),
    ("hunk-header-garbage", sub("@@ -13,6 +13,11 @@", "@@ -x,6 +13,11 @@"), V_FIND, USAGE, ""),
    ("hunk-huge-numbers", sub("@@ -13,6 +13,11", "@@ -99999999999999999999,6 +13,11"),
     V_ANY, I_ANY, ""),
    ("context-changed", sub("     return v;\n }\n \n+", "     return w;\n }\n \n+"), V_FIND, USAGE,
     "failed"),
    ("line-without-prefix", sub(" }\n \n+int", "}\n \n+int"), V_FIND, USAGE, ""),
    ("no-newline-mid-hunk", sub("+{\n", "+{\n\\ No newline at end of file\n"), V_ANY, I_ANY, ""),
    ("no-newline-at-start", sub(HUNK, HUNK + "\\ No newline at end of file\n"), V_ANY, I_ANY, ""),
    ("no-newline-twice", lambda t: (t + "\\ No newline at end of file\n" * 2).encode(),
     V_ANY, I_ANY, ""),
    ("no-newline-wrong-end", lambda t: (t + "\\ No newline at end of file\n").encode(),
     V_ANY, I_ANY, ""),
    ("no-newline-misspelt", lambda t: (t + "\\ no newline\n").encode(), (V_OK, V_FIND),
     (OK, USAGE), ""),
    ("rename", sub("diff --git a/src/util.c b/src/util.c\nindex 04cbe81..6a2328d 100644\n"
                   "--- a/src/util.c\n+++ b/src/util.c\n",
                   "diff --git a/src/util.c b/src/util2.c\nsimilarity index 80%\n"
                   "rename from src/util.c\nrename to src/util2.c\n--- a/src/util.c\n"
                   "+++ b/src/util2.c\n"), V_FIND, OK, ""),
    ("rename-escaping", sub("diff --git a/src/util.c b/src/util.c\nindex 04cbe81..6a2328d 100644\n"
                            "--- a/src/util.c\n+++ b/src/util.c\n",
                            "diff --git a/src/util.c b/../util2.c\nrename from src/util.c\n"
                            "rename to ../util2.c\n--- a/src/util.c\n+++ b/../util2.c\n"),
     V_FIND, USAGE, ""),
    ("mode-change-only", lambda t: (t + "diff --git a/README.md b/README.md\nold mode 100644\n"
                                    "new mode 100755\n").encode(), V_FIND, OK, "Scope"),
    ("new-file-exec", new_file("src/run.sh", "100755"), V_FIND, OK, ""),
    ("new-file-symlink", new_file("src/evil", "120000", "+/etc/passwd\n"), V_FIND, (OK, USAGE),
     "symbolic link"),
    ("new-file-gitlink", new_file("src/sub", "160000", "+Subproject commit " + "a" * 40 + "\n"),
     V_FIND, (OK, USAGE), ""),
    ("new-file-bad-mode", new_file("src/x.c", "999999"), V_FIND, USAGE, ""),
    ("binary-differ", lambda t: (t + "diff --git a/logo.bin b/logo.bin\nnew file mode 100644\n"
                                 "index 0000000..1111111\nBinary files /dev/null and b/logo.bin "
                                 "differ\n").encode(), V_FIND, USAGE, "binary"),
    ("binary-literal-good", lambda t: (t + "diff --git a/logo.bin b/logo.bin\nnew file mode "
                                       "100644\nindex 0000000000000000000000000000000000000000.."
                                       "a5b3b3dfbeb2fe9fbf6d6b0f3da3e5d9b5a8d4e1\nGIT binary "
                                       "patch\nliteral 3\nKcmZ?d00001\n\nliteral 0\nHcmV?d00001\n"
                                       "\n").encode(), V_FIND, (OK, USAGE), "binary"),
    ("binary-literal-garbage", lambda t: (t + "diff --git a/logo.bin b/logo.bin\nnew file mode "
                                          "100644\nGIT binary patch\nliteral 99\n!!!!garbage\n\n")
     .encode(), V_FIND, (OK, USAGE), ""),
    ("nul-in-added-line", sub("+    return v * v;", "+    return v\x00 * v;"), V_ANY, I_ANY, ""),
    # import writes no header value with a control character (it is refused)
    ("nul-in-header", sub("Why this change", "Why\x00this change"), V_OK, USAGE, ""),
    ("nul-in-path", sub(DIFF_GIT, "diff --git a/src/ut\x00il.c b/src/ut\x00il.c\n"), V_FIND,
     (OK, USAGE), ""),
    ("latin1-in-body", raw(lambda b: b.replace(b"Why this change", b"Why \xe9\xe8 change")),
     V_OK, OK, ""),
    ("latin1-in-added-line", raw(lambda b: b.replace(b"+    return v * v;",
                                                     b"+    return v * v; /* \xe9 */")),
     V_ANY, I_ANY, ""),
    ("latin1-in-subject", raw(lambda b: b.replace(b"add tiny_square", b"add tiny_\xe9quare")),
     V_OK, OK, ""),
    ("non-utf8-new-path", raw(lambda b: b + b"diff --git a/src/\xff.c b/src/\xff.c\nnew file mode "
                              b"100644\n--- /dev/null\n+++ b/src/\xff.c\n@@ -0,0 +1 @@\n+x\n"),
     V_FIND, (OK, USAGE), ""),
    ("quoted-octal-path", lambda t: (t + 'diff --git "a/src/\\303\\244.c" "b/src/\\303\\244.c"\n'
                                     'new file mode 100644\n--- /dev/null\n+++ "b/src/\\303\\244.c"'
                                     '\n@@ -0,0 +1 @@\n+x\n').encode(), V_FIND, (OK, USAGE), ""),
    ("utf8-bom", raw(lambda b: b"\xef\xbb\xbf" + b), V_ANY, I_ANY, ""),
    ("crlf-everywhere", raw(lambda b: b.replace(b"\n", b"\r\n")), V_FIND, (OK, USAGE), "crlf"),
    ("crlf-in-body-only", raw(lambda b: b.replace(b"Why this change is needed.\n",
                                                  b"Why this change is needed.\r\n")), V_OK, OK,
     ""),
    ("crlf-one-added-line", raw(lambda b: b.replace(b"+{\n", b"+{\r\n")), V_ANY, I_ANY, ""),
    ("cr-only-line-ends", raw(lambda b: b.replace(b"\n", b"\r")), V_FIND, USAGE, ""),
    ("base64-body", mail_body("base64"), V_FIND, (OK, USAGE), ""),
    ("quoted-printable-body", mail_body("quoted-printable"), V_ANY, I_ANY, ""),
    ("rfc2047-subject", sub("Subject: [PATCH] util : add tiny_square",
                            "Subject: [PATCH] =?UTF-8?B?dXRpbCA6IGFkZCB0aW55X3NxdWFyZSDinJM=?="),
     V_OK, OK, ""),
    ("rfc2047-broken", sub("Subject: [PATCH] util : add tiny_square",
                           "Subject: [PATCH] =?UTF-8?B?!!!?= =?bogus-charset?Q?x?="),
     V_OK, USAGE, ""),
    ("folded-subject", sub("Subject: [PATCH] util : add tiny_square",
                           "Subject: [PATCH] util : add\n tiny_square\n\tfolded"), V_OK, OK, ""),
    ("no-from-no-date", sub("From: Upstream Dev <dev@upstream.invalid>\nDate: Thu, 1 Jan 2026 "
                            "00:00:00 +0000\n", ""), V_ANY, I_ANY, ""),
    ("no-subject", sub("Subject: [PATCH] util : add tiny_square\n", ""), (V_OK, V_FIND),
     (OK, USAGE), ""),
    ("from-line-in-body", sub("Why this change is needed.", "Why.\nFrom 0000000000000000000000"
                              "000000000000000000 Mon Sep 17 00:00:00 2001\nmore"), V_OK, I_ANY,
     ""),
    ("two-mails-in-one-file", lambda t: (t + "\n" + t).encode(), V_FIND, (OK, USAGE), ""),
    ("signature-kept", lambda t: (t + "-- \n2.43.0\n\n").encode(), V_OK, OK, ""),
    ("signature-long-tail", lambda t: (t + "-- \n2.43.0\nline\nline\nline\nline\n").encode(),
     V_ANY, I_ANY, ""),
    ("trailing-garbage", lambda t: (t + "this is not part of any hunk\n").encode(),
     V_ANY, I_ANY, ""),
    ("missing-concern", sub("Concern: square\n", ""), V_FIND, (OK, USAGE), "Concern"),
    ("duplicate-concern", header_only("Concern: other\n"), (V_OK, V_FIND), OK, ""),
    ("status-garbage", sub("Upstream-Status: Pending", "Upstream-Status: \x1b[31mred"), V_FIND,
     USAGE, "upstream-status"),
    ("empty-scope", sub("Scope: src/util.c", "Scope:"), V_FIND, OK, "missing `Scope:`"),
    ("scope-elsewhere", sub("Scope: src/util.c", "Scope: include/*"), V_FIND, OK, "Scope"),
    ("scope-dotdot", sub("Scope: src/util.c", "Scope: ../**"), V_FIND, OK, ""),
    ("scope-reversed-range", sub("Scope: src/util.c", "Scope: src/[z-a].c"), V_FIND, I_ANY,
     "the range `z-a` is reversed"),
    ("scope-unclosed-set", sub("Scope: src/util.c", "Scope: src/[]"), V_FIND, I_ANY,
     "is not closed"),
    ("scope-set-with-slash", sub("Scope: src/util.c", "Scope: src[/]util.c"), V_FIND, I_ANY,
     "is not closed"),
    ("scope-negated-set", sub("Scope: src/util.c", "Scope: src/[!x]til.c"), V_OK, OK, ""),
    ("scope-star-run", sub("Scope: src/util.c", "Scope: " + "*" * 24 + "c"), V_OK, OK, ""),
    ("scope-globstar-runs", sub("Scope: src/util.c", "Scope: " + "**/" * 40 + "*.c"), V_OK, OK,
     ""),
    ("binary-glob-reversed", header_only("Binary: [9-0]*\n"), V_FIND, I_ANY,
     "`Binary:` glob `[9-0]*`"),
    ("reproducer-dotdot", sub("Reproducer: reproducers/square", "Reproducer: ../../etc"),
     V_FIND, OK, ""),
    ("reproducer-absolute", sub("Reproducer: reproducers/square", "Reproducer: /etc"), V_FIND, OK,
     ""),
    ("trailer-control-chars", header_only("Bug: \x07\x08\x1b[2J\n"), V_OK, USAGE, ""),
    ("trailer-very-long", header_only("Bug: " + "x" * 200_000 + "\n"), V_OK, OK, ""),
    ("assisted-by-co-author", header_only("Co-authored-by: SomeTool <bot@x>\n"), (V_OK, V_FIND),
     OK, ""),
    ("dep3-form", lambda t: ("Description: add tiny_square\nAuthor: A <a@b.c>\nConcern: square\n"
                             "Upstream-Status: Pending\nScope: src/util.c\n\n" +
                             t[t.index(DIFF_GIT):]).encode(), V_OK, OK, ""),
    ("quilt-index-form", lambda t: ("Concern: square\nUpstream-Status: Pending\nScope: src/util.c"
                                    "\n\nIndex: src/util.c\n" + "=" * 67 + "\n" +
                                    t[t.index("--- a/src/util.c"):]).encode(), V_OK, OK, ""),
    ("plain-unified-no-git", lambda t: ("Concern: square\nUpstream-Status: Pending\nScope: "
                                        "src/util.c\n\n" + t[t.index("--- a/src/util.c"):])
     .encode(), V_OK, OK, ""),
    ("path-dotdot", sub("a/src/util.c b/src/util.c", "a/../x b/../x"), V_FIND, (OK, USAGE), ""),
    ("path-absolute-p0", lambda t: (b"Concern: c\nUpstream-Status: Pending\nScope: **\n\n"
                                    b"--- /dev/null\n+++ /tmp/patchctl-escape\n@@ -0,0 +1 @@\n"
                                    b"+x\n"), V_ANY, I_ANY, ""),
    ("path-into-dot-git", new_file(".git/hooks/pre-commit", "100755", "+#!/bin/sh\n"), V_FIND,
     USAGE, ""),
    ("path-into-nested-dot-git", new_file("src/.git/config"), V_FIND, USAGE, ""),
    ("path-dot-git-case", new_file(".GIT/config"), V_FIND, USAGE, ""),
    ("case-fold-collision", new_file("SRC/UTIL.C"), V_FIND, (OK, USAGE), ""),
    ("same-file-twice", lambda t: (t + t[t.index(DIFF_GIT):]).encode(), V_ANY, I_ANY, ""),
    ("delete-missing-file", lambda t: (t + "diff --git a/nope.c b/nope.c\ndeleted file mode 100644"
                                       "\n--- a/nope.c\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n")
     .encode(), V_FIND, USAGE, ""),
    ("create-existing-file", new_file("README.md"), V_FIND, USAGE, ""),
    ("context-only-hunk", lambda t: (t[: t.index("@@ -13")] +
                                     "@@ -13,3 +13,3 @@\n }\n \n int tiny_abs(int v)\n").encode(),
     V_FIND, (OK, USAGE), ""),
    ("overlapping-hunks", lambda t: (t + HUNK + BODY).encode(), V_FIND, USAGE, ""),
    ("long-line-1mb", sub("+    return v * v;", "+    return v * v; /* " + "y" * 1_000_000 +
                          " */"), V_OK, OK, ""),
    ("huge-hunk-20000", huge_hunk(20_000), V_FIND, OK, "Scope"),
    ("many-files-400", many_files(400), V_OK, OK, ""),
    ("form-feed-and-line-separators", sub("Why this change is needed.",
                                          "Why\x0cthis\u2028change\x85is\x1cneeded."),
     V_OK, USAGE, ""),
    ("unicode-bidi-in-added-line", sub("+    return v * v;", "+    return v * v; /* \u202e */"),
     (V_OK, V_FIND), OK, ""),
    ("tabs-in-file-header", sub("--- a/src/util.c\n+++ b/src/util.c",
                                "--- a/src/util.c\t2020-01-01\n+++ b/src/util.c\t2020-01-01"),
     V_OK, OK, ""),
]]


@pytest.fixture
def empty_project(tmp_path: Path, upstream: Upstream) -> Path:
    return make_project(tmp_path / "empty", upstream, [])


@params(CASES)
def test_patch_corpus(cli, case: Case, tmp_path: Path, upstream: Upstream, patches,
                      empty_project: Path) -> None:
    mutate, import_code = case.data
    data = mutate(patches[0][1])
    project = make_project(tmp_path / "p", upstream, [(NAME, "placeholder")], lock=False)
    (project / "stack/patches" / NAME).write_bytes(data)

    check(cli("-C", str(project), "series", "--json"), (OK, USAGE))
    lock = cli("-C", str(project), "lock")
    check(lock, (OK, USAGE))
    r = cli("-C", str(project), "verify", "--json", "--upstream", str(upstream.path))
    check(r, case)
    if r.code in (OK, FINDINGS):
        report = json.loads(r.out)
        grades = [p["grade"] for p in report["patches"]]
        assert len(grades) == 1
        if r.code == OK:
            assert grades == ["exact"] or grades == ["offset"], grades
        # a lock written for the patch is what verify then finds current
        assert (report["lock"] == "current") == (lock.code == OK), report["lock"]

    source = tmp_path / NAME
    source.write_bytes(data)
    before = tree_digest(empty_project / "stack")
    r = cli("-C", str(empty_project), "import", "--upstream", str(upstream.path), str(source))
    check(r, import_code)
    if r.code != OK:
        assert tree_digest(empty_project / "stack") == before, "a refused import wrote"
    else:
        v = cli("-C", str(empty_project), "verify", "--json", "--upstream", str(upstream.path))
        check(v, (OK, FINDINGS))
        assert json.loads(v.out)["lock"] == "current"


_BY_ID = {c.id: c for c in CASES}


def test_empty_scope_trailer_is_a_missing_scope(cli, tmp_path, upstream, patches,
                                               empty_project) -> None:
    """Bug: an empty `Scope:` trailer counted as present and switched the Scope check off:
    verify said OK for a patch with no scope at all."""
    test_patch_corpus(cli, _BY_ID["empty-scope"], tmp_path, upstream, patches, empty_project)


def test_import_of_a_non_utf8_subject(cli, tmp_path, upstream, patches, empty_project) -> None:
    """Bug: import of a mail whose Subject holds bytes that are not UTF-8 died with a
    UnicodeEncodeError traceback while writing the patch header."""
    test_patch_corpus(cli, _BY_ID["latin1-in-subject"], tmp_path, upstream, patches,
                      empty_project)


def test_import_of_a_mail_in_an_unknown_charset(cli, tmp_path, upstream, patches,
                                                empty_project) -> None:
    """Bug: a mail header in an unknown charset made `git mailinfo` fail and import exit 3
    (environment failure, quoting a long git command line) instead of 2 naming the file."""
    test_patch_corpus(cli, _BY_ID["rfc2047-broken"], tmp_path, upstream, patches,
                      empty_project)
