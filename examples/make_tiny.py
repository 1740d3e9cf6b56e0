"""Regenerate examples/tiny: a small offline upstream (a git bundle) and a stack against it.

The README's first command verifies this example, so patchctl can be seen
working without network. The upstream's last commit adds a LICENSE (MIT), so a
worker release built from this example carries real license text from its
pinned tree (`patchctl release build` refuses an upstream without one); the
pin is that commit. Run: python examples/make_tiny.py && patchctl -C
examples/tiny lock
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.builders import (  # noqa: E402
    commit_all,
    git,
    make_project,
    make_upstream,
    standard_patches,
    write,
)

LICENSE = """MIT License

Copyright (c) 2026 The tiny authors

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""


def main() -> None:
    out = ROOT / "examples" / "tiny"
    with tempfile.TemporaryDirectory() as tmp:
        up = make_upstream(Path(tmp) / "tiny")
        patches = standard_patches(up, Path(tmp) / "scratch")
        write(up.path, {"LICENSE": LICENSE})
        pin = commit_all(up.path, "license : MIT (#4)")
        shutil.rmtree(out / "stack", ignore_errors=True)
        make_project(out, up, patches, pin=pin)
        bundle = out / "tiny-upstream.bundle"
        git(up.path, "bundle", "create", "-q", str(bundle), "master")
    pin = out / "stack" / "upstream.toml"
    text = pin.read_text()
    url = text.split('url = "', 1)[1].split('"', 1)[0]
    pin.write_text(text.replace(url, "tiny-upstream.bundle"))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
