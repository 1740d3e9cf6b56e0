"""An upstream history where pull requests the stack backported merged, some edited.

On top of ``make_upstream``'s ``base`` (the pin), commits made the way GitHub
makes them (squash merges ``subject (#N)``, one merge commit ``Merge pull request
#N from ...``):

| label | commit | what it does |
| --- | --- | --- |
| r1 | docs : page 1 (#201) | filler |
| r2 | util : add tiny_max (#202) | ``max_patch`` edited: a doc comment, a declaration |
| r3 | tiny : declare tiny_min (#203) | one of the two declarations ``decl_patch`` adds |
| r4 | docs : notes, follow-up to #204 (#205) | names #204 without merging it |
| r5 | Merge pull request #206 from dev/sign | merges ``SIGN_FN`` (side commit s1) |
| r6 | util : add tiny_avg (#207) | ``AVG_FN`` ... |
| r7 | Revert "util : add tiny_avg (#207)" (#208) | ... reverted |

r2 merges the backport ``max_patch`` edited in review, so it has another patch-id and
the patch does not reverse-apply at the head. The patches are made on ``base`` with
``format_patch``; each test picks its own.
"""

from __future__ import annotations

from pathlib import Path

from tests.builders import (
    Upstream,
    commit_all,
    default_trailers,
    format_patch,
    git,
    make_upstream,
    replace_in,
    write,
)

URL = "https://github.com/tiny-org/tiny"  # the pin file's URL in these tests
MAX_FN = "int tiny_max(int a, int b)\n{\n    return a > b ? a : b;\n}\n"
SIGN_FN = "int tiny_sign(int v)\n{\n    return (v > 0) - (v < 0);\n}\n"
AVG_FN = "int tiny_avg(int a, int b)\n{\n    return a / 2 + b / 2;\n}\n"
TOP = 'extern "C" {\n#endif\n\n'  # where upstream declares its new functions


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def make_reference_history(root: Path) -> Upstream:
    up = make_upstream(root / "upstream")
    w, c = up.path, up.commits
    write(w, {"docs/page1.md": "# Page 1\n"})
    c["r1"] = commit_all(w, "docs : page 1 (#201)")
    _append(w / "src/util.c", "\n/* The larger of a and b. */\n" + MAX_FN)
    replace_in(w / "include/tiny.h", TOP, TOP + "int tiny_max(int a, int b);\n")
    c["r2"] = commit_all(w, "util : add tiny_max (#202)\n\nReviewed upstream: a doc comment "
                         "added, and the declaration.")
    replace_in(w / "include/tiny.h", TOP, TOP + "int tiny_min(int a, int b);\n")
    c["r3"] = commit_all(w, "tiny : declare tiny_min (#203)")
    write(w, {"docs/notes.md": "# Notes\n\nSee #204 for what comes next.\n"})
    c["r4"] = commit_all(w, "docs : notes, follow-up to #204 (#205)")
    git(w, "checkout", "-q", "-b", "dev/sign")
    _append(w / "src/util.c", "\n" + SIGN_FN)
    c["s1"] = commit_all(w, "util : add tiny_sign")
    git(w, "checkout", "-q", "master")
    git(w, "merge", "-q", "--no-ff", "-m", "Merge pull request #206 from dev/sign\n\n"
        "util : add tiny_sign", "dev/sign")
    c["r5"] = up.head
    _append(w / "src/util.c", "\n" + AVG_FN)
    c["r6"] = commit_all(w, "util : add tiny_avg (#207)")
    git(w, "revert", "--no-edit", "HEAD")
    git(w, "commit", "-q", "--amend", "-m", 'Revert "util : add tiny_avg (#207)" (#208)\n\n'
        f"This reverts commit {c['r6']}.")
    c["r7"] = up.head
    return up


def max_patch(up: Upstream, scratch: Path, *, subject: str = "util : add tiny_max (#202)",
              body: str = "Backported: the downstream needs it now.",
              trailers: dict[str, str] | None = None) -> str:
    """The downstream's backport of #202 as it was before review: no doc comment, no
    declaration (so upstream's edited merge has another patch-id and the patch does not
    reverse-apply there)."""
    return format_patch(up, up.commits["base"],
                        lambda w: _append(w / "src/util.c", "\n" + MAX_FN),
                        subject=subject, body=body, scratch=scratch,
                        trailers={**default_trailers("max", "src/util.c"), **(trailers or {})})


def decl_patch(up: Upstream, scratch: Path) -> str:
    """Cites #203 but declares tiny_mid as well: more than upstream merged."""
    return format_patch(
        up, up.commits["base"],
        lambda w: replace_in(w / "include/tiny.h", "int tiny_version(void);\n",
                             "int tiny_version(void);\nint tiny_min(int a, int b);\n"
                             "int tiny_mid(int a, int b, int c);\n"),
        subject="tiny : declare tiny_min and tiny_mid (#203)", scratch=scratch,
        body="Backport of #203, with tiny_mid, which the downstream adds.",
        trailers=default_trailers("min", "include/tiny.h"))


def function_patch(up: Upstream, scratch: Path, fn: str, *, subject: str, base: str = "base",
                   body: str = "Why this change is needed.") -> str:
    """A patch that appends ``fn`` to src/util.c at ``base``."""
    return format_patch(up, up.commits[base], lambda w: _append(w / "src/util.c", "\n" + fn),
                        subject=subject, body=body, scratch=scratch,
                        trailers=default_trailers("fn", "src/util.c"))
