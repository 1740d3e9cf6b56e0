"""Peak memory (max RSS) of `patchctl series` on a stack holding one big patch.

The patch adds one file of N lines (default 800,000: a ~50 MB patch). The run is a
real subprocess of the console script; its peak RSS is read with
``resource.getrusage(RUSAGE_CHILDREN)`` after it exits. Printed: patch size, peak
RSS in MB, RSS per patch byte, wall seconds. Not a test: nothing is asserted.

    python bench/series_memory.py [--lines 800000] [--json]
    patchctl record --name bench-series-memory -- python bench/series_memory.py
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import find_patchctl, hermetic_env, machine_facts


def make_stack(root: Path, n: int) -> int:
    stack = root / "stack"
    (stack / "patches").mkdir(parents=True)
    (stack / "upstream.toml").write_text(f'name = "big"\nurl = "big"\ncommit = "{"a" * 40}"\n')
    body = "".join(f"+line {i:07d} of a big generated file, padding padding padding\n"
                   for i in range(n))
    text = ("From: Bench Dev <bench@bench.invalid>\nSubject: [PATCH] big\n\nConcern: big\n"
            "Upstream-Status: Pending\nScope: big.txt\n---\n"
            "diff --git a/big.txt b/big.txt\nnew file mode 100644\n--- /dev/null\n"
            f"+++ b/big.txt\n@@ -0,0 +1,{n} @@\n" + body)
    (stack / "patches" / "0001-big.patch").write_text(text)
    (stack / "series").write_text("0001-big.patch\n")
    return len(text.encode())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=800_000)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--patchctl", help="console script (default: next to this Python)")
    args = ap.parse_args(argv)
    patchctl = find_patchctl(args.patchctl)
    root = Path(tempfile.mkdtemp(prefix="patchctl-bench-memory-"))
    try:
        size = make_stack(root, args.lines)
        t0 = time.perf_counter()
        subprocess.run([str(patchctl), "-C", str(root), "series"], check=True,
                       stdout=subprocess.DEVNULL, env=hermetic_env())
        wall = time.perf_counter() - t0
        rss_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # Linux: KiB
        result = {"schema": "patchctl.bench-series-memory/1", "patch_bytes": size,
                  "max_rss_mb": round(rss_kb / 1024, 1),
                  "rss_per_patch_byte": round(rss_kb * 1024 / size, 2),
                  "seconds": round(wall, 2), "machine": machine_facts()}
        if args.json:
            print(json.dumps(result, indent=2, sort_keys=True))
        else:
            print(f"`patchctl series` on one {size / 1e6:.1f} MB patch: peak RSS "
                  f"{result['max_rss_mb']} MB ({result['rss_per_patch_byte']} bytes per patch "
                  f"byte), {result['seconds']} s")
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
