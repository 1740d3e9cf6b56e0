"""Regenerate examples/tiny: a small offline upstream (a git bundle) and a stack against it.

The README's first command verifies this example, so patchctl can be seen
working without network. Run: python examples/make_tiny.py
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.builders import make_project, make_upstream, standard_patches  # noqa: E402


def main() -> None:
    out = ROOT / "examples" / "tiny"
    with tempfile.TemporaryDirectory() as tmp:
        up = make_upstream(Path(tmp) / "tiny")
        patches = standard_patches(up, Path(tmp) / "scratch")
        shutil.rmtree(out / "stack", ignore_errors=True)
        make_project(out, up, patches)
        bundle = out / "tiny-upstream.bundle"
        subprocess.run(["git", "-C", str(up.path), "bundle", "create", "-q", str(bundle),
                        "master"], check=True)
    pin = out / "stack" / "upstream.toml"
    text = pin.read_text()
    url = text.split('url = "', 1)[1].split('"', 1)[0]
    pin.write_text(text.replace(url, "tiny-upstream.bundle"))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
