"""patchtext: setting and reading trailers in a patch header."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchctl.model.patchtext import reparse, set_body, set_trailer, trailers

MAIL = (
    "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
    "From: A <a@example.invalid>\nDate: Thu, 1 Jan 2026 00:00:00 +0000\n"
    "Subject: [PATCH] x : y\n\nWhy.\n\nConcern: y\nUpstream-Status: Pending\n"
    "Scope: a.c\n  b.c\nSigned-off-by: A <a@example.invalid>\n"
)
DIFF = "---\n a.c | 1 +\n\ndiff --git a/a.c b/a.c\n--- a/a.c\n+++ b/a.c\n@@ -0,0 +1 @@\n+x\n"


def test_set_trailer_replaces_in_place_and_drops_continuations() -> None:
    out = set_trailer(MAIL, "scope", "a.c b.c c.c")
    assert out.endswith("Upstream-Status: Pending\nScope: a.c b.c c.c\n"
                        "Signed-off-by: A <a@example.invalid>\n")
    assert "  b.c" not in out
    assert set_trailer(MAIL, "Bug", "7").endswith("Signed-off-by: A <a@example.invalid>\nBug: 7\n")
    assert "Upstream-Status" not in set_trailer(MAIL, "Upstream-Status", None)


def test_set_trailer_never_touches_mail_headers_and_starts_a_block_when_none() -> None:
    """`From:` is a mail header, not a trailer: setting the From trailer adds one."""
    assert set_trailer(MAIL, "From", "B").startswith(MAIL.split("\n\n")[0] + "\n\nWhy.")
    bare = "From: A <a@example.invalid>\nSubject: [PATCH] x\n\nJust prose here.\n"
    assert set_trailer(bare, "Concern", "x") == bare + "\nConcern: x\n"


def test_set_body_keeps_the_mail_headers_and_the_trailers() -> None:
    """Bug: a patch's body could be written only by `new -m`; `header -m` replaces it."""
    heads, _, rest = MAIL.partition("\n\n")
    block = rest.partition("\n\n")[2]
    out = set_body(MAIL, "First paragraph.\n\nSecond: not a trailer, it is prose.\n")
    assert out == f"{heads}\n\nFirst paragraph.\n\nSecond: not a trailer, it is prose.\n\n{block}"
    assert trailers(reparse(out + DIFF, name="p", path=Path("p"))) == \
        trailers(reparse(MAIL + DIFF, name="p", path=Path("p")))
    assert set_body(MAIL, "") == f"{heads}\n\n{block}"
    assert set_body(f"{heads}\n\n{block}", "Why.") == MAIL
    bare = "From: A <a@example.invalid>\nSubject: [PATCH] x\n"
    assert set_body(bare, "Because.\n") == bare + "\nBecause.\n"
    assert set_body(bare, "caf\u00e9") == (
        "From: A <a@example.invalid>\nSubject: [PATCH] x\nMIME-Version: 1.0\n"
        "Content-Type: text/plain; charset=UTF-8\nContent-Transfer-Encoding: 8bit\n\ncaf\u00e9\n")


def test_set_trailer_in_a_dep3_header() -> None:
    dep3 = "Description: fix it\nAuthor: A\nUpstream-Status: Pending\n"
    assert set_trailer(dep3, "Upstream-Status", "Denied", mail_form=False) == \
        "Description: fix it\nAuthor: A\nUpstream-Status: Denied\n"
    assert set_trailer(dep3, "Scope", "a.c", mail_form=False).endswith("Scope: a.c\n")


def test_trailers_lists_every_key_in_order() -> None:
    patch = reparse(MAIL + DIFF, name="p.patch", path=Path("p.patch"))
    assert trailers(patch) == [("Concern", "y"), ("Upstream-Status", "Pending"),
                               ("Scope", "a.c b.c"),
                               ("Signed-off-by", "A <a@example.invalid>")]


def _header(**kw: object) -> str:
    from patchctl.model.patchtext import mail_header

    args: dict = {"author": "A <a@example.invalid>", "date": "Thu, 1 Jan 2026 00:00:00 +0000",
                  "subject": "x : y", "body": "Why.", "trailers": [("Concern", "y")]}
    return mail_header(**{**args, **kw})


@pytest.mark.parametrize("field", [
    {"subject": "x\nScope: **"}, {"subject": "x\n\nConcern: z"}, {"author": "A\nScope: **"},
    {"date": "now\nScope: **"}, {"trailers": [("Concern", "y\nScope: **")]},
    {"trailers": [("Concern", "y\rScope: **")]}, {"trailers": [("Scope: **\nBug", "1")]},
    {"trailers": [("Concern", "y\x00")]}, {"body": "Why.\n---\nmore"},
    {"body": "Why.\n\ndiff --git a/x b/x"}, {"body": "Why.\n--- a/x\n+++ b/x\n@@ -1 +1 @@"},
    {"body": "Scope: **", "trailers": []}, {"body": "Why\x1b]52;c;x\x07"},
], ids=["subject", "subject-paragraph", "author", "date", "trailer-value", "trailer-cr",
        "trailer-key", "trailer-nul", "body-dashes", "body-diff", "body-traditional",
        "body-as-trailers", "body-escape"])
def test_every_header_value_is_checked_where_it_is_written(field: dict) -> None:
    """`mail_header` wrote every value verbatim, so whichever command passed
    one with a newline (split, new, import) added a header or trailer. It now refuses
    them (`lint.header_problem`), whoever calls it."""
    from patchctl.errors import InputError

    with pytest.raises(InputError) as e:
        _header(**field)
    assert "\n" not in str(e.value)


def test_ordinary_header_values_are_kept() -> None:
    """What the checks leave alone: non-ASCII, tabs, a `-----` rule, `Key:` lines in
    prose, and a paragraph of them that the trailer block follows."""
    body = ("Why.\n\n----- a rule\nKey: in the middle\nof prose.\n  indented\n\n"
            "Scope: a paragraph before trailers")
    text = _header(subject="caf\u00e9 : tab\there", body=body)
    patch = reparse(text + DIFF, name="p", path=Path("p"))
    assert patch.body == body and patch.subject == "caf\u00e9 : tab\there"
    assert trailers(patch) == [("Concern", "y")]


def test_set_trailer_and_set_body_refuse_what_would_add_lines() -> None:
    """`set_trailer` and `set_body` (header --set, header -m, fold)
    refuse a value that adds a line and a body that would end the message."""
    from patchctl.errors import InputError

    with pytest.raises(InputError, match="one line"):
        set_trailer(MAIL, "Bug", "1\nScope: **")
    with pytest.raises(InputError, match="not a trailer key"):
        set_trailer(MAIL, "Scope: **\nBug", None)
    with pytest.raises(InputError, match="start a diff"):
        set_body(MAIL, "Why.\n---\ndiff --git a/x b/x")
    bare = "From: A <a@example.invalid>\nSubject: [PATCH] x\n"
    with pytest.raises(InputError, match="read as trailers"):
        set_body(bare, "Why.\n\nScope: **")
