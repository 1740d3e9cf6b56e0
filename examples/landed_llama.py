"""Build, outside this repository, a one-patch stack on real llama.cpp history whose backport
upstream merged in edited form; `rebase-pin --check` finds it only by reference.

The patch is upstream's #24444 (c926ad098, "vulkan: link ggml-cpu when
GGML_VULKAN_CHECK_RESULTS / RUN_TESTS are enabled") as it could have been
backported before review: the two `target_link_libraries` lines without the
three comment lines the merged commit adds. It is made at the pin 45155597 by
editing that file's blob there (no llama.cpp file is copied into this
repository). The merged commit then has another patch-id, and the patch does not
reverse-apply at 8c146a83 (856 first-parent commits later).

    python examples/landed_llama.py MIRROR DIR [--control]
    patchctl -C DIR rebase-pin 8c146a8366304c871efc26057cc90370ccf58dad --check \\
        --upstream MIRROR

``--control`` writes the same patch naming nothing (no `(#24444)`, no PR URL):
what rebase-pin says without the reference. MIRROR is a clone of llama.cpp that
has both commits; DIR must not exist.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
from pathlib import Path

OLD = "45155597aa23243c5f6d10064bd9bca3eaddee16"
MERGED = "c926ad09857517978575d6a74d225b463f7417a0"  # #24444, merged between OLD and NEW
PATH = "ggml/src/ggml-vulkan/CMakeLists.txt"
LINK = "        target_link_libraries(ggml-vulkan PRIVATE ggml-cpu)\n"
SUBJECT = "vulkan: link ggml-cpu when GGML_VULKAN_CHECK_RESULTS / RUN_TESTS are enabled"
IDENT = {"GIT_AUTHOR_NAME": "Downstream Dev", "GIT_AUTHOR_EMAIL": "dev@downstream.invalid",
         "GIT_AUTHOR_DATE": "2026-06-01T00:00:00Z", "GIT_COMMITTER_NAME": "Downstream Dev",
         "GIT_COMMITTER_EMAIL": "dev@downstream.invalid",
         "GIT_COMMITTER_DATE": "2026-06-01T00:00:00Z"}


def git(repo: Path, *args: str, input: str | None = None,
        env: dict[str, str] | None = None) -> str:
    base = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(["git", "-C", str(repo), *args], input=input, text=True, check=True,
                          capture_output=True, env={**base, **IDENT, **(env or {})}).stdout


def backport(mirror: Path, *, control: bool) -> str:
    """The pre-review backport as a format-patch, made in a scratch clone that borrows the
    mirror's objects (the mirror itself is not written to)."""
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp) / "up.git"
        git(Path(tmp), "clone", "-q", "--bare", "--shared", str(mirror), str(scratch))
        text = git(scratch, "show", f"{OLD}:{PATH}")
        for option in ("GGML_VULKAN_CHECK_RESULTS", "GGML_VULKAN_RUN_TESTS"):
            line = f"        add_compile_definitions({option})\n"
            assert text.count(line) == 1, option
            text = text.replace(line, line + LINK)
        blob = git(scratch, "hash-object", "-w", "--stdin", input=text).strip()
        index = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git(scratch, "read-tree", OLD, env=index)
        git(scratch, "update-index", "--cacheinfo", f"100644,{blob},{PATH}", env=index)
        tree = git(scratch, "write-tree", env=index).strip()
        subject = SUBJECT if control else f"{SUBJECT} (#24444)"
        status = "Pending" if control else \
            "Backport [https://github.com/ggml-org/llama.cpp/pull/24444]"
        message = (f"{subject}\n\nggml-vulkan's result-checking and test paths call "
                   "ggml_graph_compute_with_ctx(), defined in ggml-cpu; link it under those "
                   f"options.\n\nConcern: vulkan-debug-link\nUpstream-Status: {status}\n"
                   f"Scope: {PATH}\n")
        commit = git(scratch, "commit-tree", tree, "-p", OLD, input=message).strip()
        return git(scratch, "format-patch", "-1", "--stdout", "--zero-commit", "--no-signature",
                   commit)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mirror", type=Path)
    ap.add_argument("dir", type=Path)
    ap.add_argument("--control", action="store_true")
    args = ap.parse_args()
    text = backport(args.mirror.resolve(), control=args.control)
    stack = args.dir / "stack"
    (stack / "patches").mkdir(parents=True)
    name = "0001-vulkan-link-ggml-cpu-for-CHECK_RESULTS-RUN_TESTS.patch"
    (stack / "patches" / name).write_text(text)
    (stack / "series").write_text(f"{name}\n")
    (stack / "upstream.toml").write_text(
        'name = "llama.cpp"\nurl = "https://github.com/ggml-org/llama.cpp"\n'
        f'commit = "{OLD}"\n')
    print(f"wrote {stack}; next: patchctl -C {args.dir} lock")


if __name__ == "__main__":
    main()
