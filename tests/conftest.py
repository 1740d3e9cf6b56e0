"""Hermetic tests: git config, HOME and caches live in temp dirs; cwd must not move."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings

from tests.builders import (
    Upstream,
    make_project,
    make_upstream,
    many_patches,
    standard_patches,
    system_config_off,
)

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "tiny"

# Property tests (tests/test_corpus_properties.py): a small, repeatable budget by default;
# HYPOTHESIS_PROFILE=long runs thousands of random examples per property.
settings.register_profile("default", max_examples=30, deadline=None, derandomize=True,
                          database=None, print_blob=True)
settings.register_profile("long", max_examples=3000, deadline=None, database=None,
                          print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """``@needs(...)`` (tests/system_packages.py): skipped, with the one install line,
    where a system package the test needs is missing; before its fixtures run."""
    from tests import system_packages

    for mark in item.iter_markers("needs"):
        system_packages.require(*mark.args)


@pytest.fixture(autouse=True)
def _isolate(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    home = tmp_path_factory.mktemp("home")
    gitconfig = home / ".gitconfig"
    gitconfig.write_text(
        "[user]\n\tname = Test\n\temail = test@example.invalid\n"
        "[init]\n\tdefaultBranch = master\n"
        "[uploadpack]\n\tallowFilter = true\n\tallowAnySHA1InWant = true\n"
        "[protocol \"file\"]\n\tallow = always\n"
    )
    for key in list(os.environ):
        if key.startswith("GIT_") or key.startswith("PATCHCTL_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("PATCHCTL_QUIET", "1")
    from patchctl import gitrepo

    monkeypatch.setattr(gitrepo.core, "_ENV", None)
    cwd = os.getcwd()
    yield
    assert os.getcwd() == cwd, "a test or patchctl changed the process working directory"


@dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):
    """Run the real CLI in-process (main(), so error handling is exercised too)."""
    from patchctl.cli import main

    def run(*args: str) -> CliResult:
        capsys.readouterr()
        try:
            main(list(args))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        else:  # pragma: no cover - main always exits
            code = 0
        out, err = capsys.readouterr()
        return CliResult(code, out, err)

    return run


@pytest.fixture(scope="session")
def _upstream_template(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("template")
    with system_config_off():
        up = make_upstream(root / "upstream")
        patches = standard_patches(up, root / "scratch")
    return up, patches


@pytest.fixture
def upstream(_upstream_template, tmp_path: Path) -> Upstream:
    """A private copy of the synthetic upstream (same commit ids every time)."""
    import shutil

    up, _ = _upstream_template
    dest = tmp_path / "upstream"
    shutil.copytree(up.path, dest, symlinks=True)
    return Upstream(dest, dict(up.commits))


@pytest.fixture
def patches(_upstream_template) -> list[tuple[str, str]]:
    return list(_upstream_template[1])


@pytest.fixture
def project(tmp_path: Path, upstream: Upstream, patches) -> Path:
    return make_project(tmp_path / "project", upstream, patches)


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    """A copy of examples/tiny (its upstream is the bundle beside the stack)."""
    dest = tmp_path / "tiny"
    import shutil

    shutil.copytree(EXAMPLE, dest)
    return dest


@pytest.fixture(scope="session")
def docs_upstream(tmp_path_factory: pytest.TempPathFactory) -> Upstream:
    with system_config_off():
        return make_upstream(tmp_path_factory.mktemp("docs") / "upstream", n_docs=50)


@pytest.fixture
def big(tmp_path: Path, docs_upstream: Upstream) -> Path:
    """50 narrow patches, one doc page each; the 50th edits page 0 again after the 1st."""
    return make_project(tmp_path / "big", docs_upstream, many_patches(50))
