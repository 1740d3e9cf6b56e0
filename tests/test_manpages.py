"""Man pages from the click help: one per command, and installed by the package build."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from patchctl.cli import COMMANDS
from patchctl.manpages import write_pages

ROOT = Path(__file__).resolve().parent.parent


def expected_pages() -> list[str]:
    """patchctl.1, one page per command, and one per subcommand of a group (`ci run`)."""
    import click

    from patchctl.cli import cli

    ctx = click.Context(cli, info_name="patchctl")
    names = ["patchctl.1"]
    for name in COMMANDS:
        command = cli.get_command(ctx, name)
        names.append(f"patchctl-{name}.1")
        names += [f"patchctl-{name}-{sub}.1" for sub in getattr(command, "commands", {})]
    return sorted(names)


def test_one_page_per_command(tmp_path: Path) -> None:
    pages = write_pages(tmp_path / "man1")
    assert sorted(p.name for p in pages) == expected_pages()
    assert len(pages) > len(COMMANDS)
    move = (tmp_path / "man1" / "patchctl-move.1").read_text()
    assert move.startswith('.TH "PATCHCTL MOVE" "1"')
    assert "Reorder: move a patch before or after another" in move  # the one-liner as NAME
    assert "\\fB\\-\\-before\\fP OTHER" in move and "refused, naming the patch and hunk" in move
    renumber = (tmp_path / "man1" / "patchctl-renumber.1").read_text()
    assert "so their NNNN- numbers follow the series order" in renumber
    top = (tmp_path / "man1" / "patchctl.1").read_text()
    assert all(f"\\fB{name}\\fP" in top or name in top for name in COMMANDS)


def test_pages_are_reproducible_with_source_date_epoch(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    first = {p.name: p.read_bytes() for p in write_pages(tmp_path / "a")}
    second = {p.name: p.read_bytes() for p in write_pages(tmp_path / "b")}
    assert first == second and b'"2026-01-01"' in first["patchctl-diff.1"]


def test_the_build_installs_the_pages(tmp_path: Path) -> None:
    """setup.py's install_data (what a wheel and `pip install -e` run) renders every page
    and installs it under share/man/man1, where `man` looks beside a venv's bin/."""
    r = subprocess.run([sys.executable, "setup.py", "-q", "build", "--build-base",
                        str(tmp_path / "build"), "install_data", "--install-dir",
                        str(tmp_path / "prefix")], cwd=ROOT, capture_output=True, text=True,
                       check=False)
    assert r.returncode == 0, r.stderr
    pages = sorted(p.name for p in (tmp_path / "prefix/share/man/man1").iterdir())
    assert pages == expected_pages()


def test_the_wheel_is_reproducible(tmp_path: Path) -> None:
    """Two `pip wheel` builds a minute apart differed (zip times, the man pages'
    build date). SOURCE_DATE_EPOCH defaults to the commit time: same commit, same bytes,
    whatever the files' mtimes; and the wheel ships the LICENSE (PEP 639)."""
    import os
    import zipfile

    src = tmp_path / "src"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(src)], check=True)
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    wheels = []
    for n, mtime in enumerate((1_800_000_000, 1_800_000_600)):
        for f in src.rglob("*"):
            if ".git" not in f.parts:
                os.utime(f, (mtime, mtime), follow_symlinks=False)
        out = tmp_path / f"out{n}"
        r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                            "--no-build-isolation", "--no-index", "-w", str(out), str(src)],
                           capture_output=True, text=True, env=env, check=False)
        assert r.returncode == 0, r.stderr
        [wheel] = out.glob("*.whl")
        wheels.append(wheel.read_bytes())
        subprocess.run(["git", "-C", str(src), "clean", "-qfdx"], check=True)
    assert wheels[0] == wheels[1]
    with zipfile.ZipFile(tmp_path / "out0" / wheel.name) as z:
        names = z.namelist()
        metadata = z.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert b"License-Expression: MIT" in metadata
