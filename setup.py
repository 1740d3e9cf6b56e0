"""Build hook: the man pages, generated from the click help, installed with the package.

Everything else about the package is in pyproject.toml. ``install_data`` runs for
wheels and editable installs alike; it writes one page per command (see
patchctl/manpages.py) into the build directory and installs them under
``<prefix>/share/man/man1``, where ``man`` finds them for a venv's ``bin/`` on PATH.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import Distribution, setup

# setuptools' own install_data (a module of it only in recent versions; ask the Distribution).
install_data = Distribution().get_command_class("install_data")

MAN_DIR = "share/man/man1"
HERE = Path(__file__).resolve().parent


def _source_date_epoch() -> None:
    """Reproducible wheels: SOURCE_DATE_EPOCH (zip entry times, the man pages' date)
    defaults to the checkout's HEAD commit time; outside a git work tree it stays unset."""
    if "SOURCE_DATE_EPOCH" in os.environ:
        return
    sys.path.insert(0, str(HERE))
    try:
        from patchctl.errors import PatchctlError
        from patchctl.gitrepo.history import head_commit

        try:
            head = head_commit(HERE)
        except PatchctlError:  # no git: an unpacked sdist built where git is missing
            head = None
    finally:
        sys.path.remove(str(HERE))
    if head is not None:
        os.environ["SOURCE_DATE_EPOCH"] = str(head[1])


class install_data_with_man_pages(install_data):
    def run(self) -> None:
        sys.path.insert(0, str(HERE))
        try:
            from patchctl.manpages import write_pages
        finally:
            sys.path.remove(str(HERE))
        build = Path(self.get_finalized_command("build").build_base).resolve() / "man"
        pages = [str(p) for p in write_pages(build)]
        self.data_files = [(MAN_DIR, pages)]
        super().run()


class DistributionWithData(Distribution):
    def has_data(self) -> bool:
        # `pip install -e` (setuptools' editable_wheel) installs data files only when
        # the distribution answers has_data(), a name only it asks for.
        return self.has_data_files()


_source_date_epoch()
setup(
    distclass=DistributionWithData,
    data_files=[(MAN_DIR, [])],  # filled in by install_data_with_man_pages
    cmdclass={"install_data": install_data_with_man_pages},
)
