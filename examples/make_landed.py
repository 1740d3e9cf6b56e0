"""Regenerate examples/landed: backports that upstream merged, one of them in edited form.

The upstream (a git bundle) is tests/reference_history.py's: after the pin,
upstream squash-merged #202 edited in review (a doc comment, a declaration), so
the downstream's backport of it has another patch-id and does not reverse-apply;
#203 merged, but the stack's patch that names it declares one more function; #204
never merged. `patchctl -C examples/landed rebase-pin master --check` shows
0002 a `conflict` marked `superseded?` (the new pin does not hold it as the patch has it,
so its reference alone never drops it), 0003 `superseded?` with its interdiff, and the
others applying.
Run: python examples/make_landed.py (the stack's lock is written current).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.builders import (  # noqa: E402
    default_trailers,
    format_patch,
    git,
    make_project,
    replace_in,
    system_config_off,
)
from tests.reference_history import (  # noqa: E402
    decl_patch,
    make_reference_history,
    max_patch,
)

BUNDLE = "landed-upstream.bundle"


def main() -> None:
    out = ROOT / "examples" / "landed"
    with tempfile.TemporaryDirectory() as tmp, system_config_off():
        root = Path(tmp)
        up = make_reference_history(root)
        scratch = root / "scratch"
        bump = format_patch(up, up.commits["base"],
                            lambda w: replace_in(w / "src/tiny.c", "    int y = x * 4;\n",
                                                 "    int y = x * 4 + 1; /* patched */\n"),
                            subject="tiny : bump op 02", scratch=scratch,
                            trailers=default_trailers("bump", "src/tiny.c"))
        cmake = format_patch(up, up.commits["base"],
                             lambda w: replace_in(w / "CMakeLists.txt", '" OFF)', '" ON)'),
                             subject="cmake : build tests by default (#204)", scratch=scratch,
                             body="Proposed upstream as #204, not merged yet.",
                             trailers=default_trailers("cmake", "CMakeLists.txt"))
        patches = [("0001-tiny-bump-op-02.patch", bump),
                   ("0002-util-add-tiny_max.patch", max_patch(up, scratch)),
                   ("0003-tiny-declare-tiny_min-and-tiny_mid.patch", decl_patch(up, scratch)),
                   ("0004-cmake-build-tests-by-default.patch", cmake)]
        shutil.rmtree(out, ignore_errors=True)
        make_project(out, up, patches, url=BUNDLE)  # the pin file names the bundle beside it
        git(up.path, "bundle", "create", "-q", str(out / BUNDLE), "master")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
