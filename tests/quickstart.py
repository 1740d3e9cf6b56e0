"""The README's quickstart as a script, and the downstream it runs on.

The quickstart is the fenced block between ``<!-- quickstart: begin -->`` and
``<!-- quickstart: end -->`` in README.md; the tests run it as it is written, so the two
cannot drift. Each line is a command, run in order in the downstream project by one bash
(so ``export`` and variables carry on) under ``set -euo pipefail``: a command that fails
stops it. A comment ``# or: CMD`` is another way to do the command above it: it runs in a
copy of the project taken just before that command (``../alt-N``, beside it, so relative
paths hold), and the test checks what it left there.

The world (``make_world``): an upstream with history past the pin (a local repository that
the user's GitHub URL is rewritten to, by git's own ``url.<base>.insteadOf``, so the
commands keep their real URL and nothing leaves the machine), and a downstream project
that keeps its patches as many do: ``llama/patches/*.patch`` from ``git format-patch``,
a quilt ``series`` beside them, the pin in ``llama/COMMIT``, and a fork with the same
patches as commits on a branch.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.builders import Upstream, commit_all, format_patch, git, make_upstream, replace_in

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
UPSTREAM_URL = "https://github.com/ggml-org/llama.cpp"
_BLOCK = re.compile(
    r"<!-- quickstart: begin[^>]*-->\s*```sh\n(.*?)^```\s*<!-- quickstart: end -->",
    re.MULTILINE | re.DOTALL,
)


@dataclass(frozen=True)
class Step:
    command: str
    alternatives: tuple[str, ...] = ()


def steps(readme: Path = README) -> list[Step]:
    """The quickstart's commands in order, each with its ``# or:`` alternatives."""
    found = _BLOCK.findall(readme.read_text(encoding="utf-8"))
    assert len(found) == 1, "README.md needs exactly one quickstart block between the markers"
    out: list[Step] = []
    for raw in found[0].replace("\\\n", " ").splitlines():
        line = raw.strip()
        if line.startswith("# or:"):
            assert out, f"an alternative before any command: {line}"
            alt = line.removeprefix("# or:").split("  #", 1)[0].strip()
            out[-1] = Step(out[-1].command, (*out[-1].alternatives, alt))
        elif line and not line.startswith("#"):
            out.append(Step(line.split("  #", 1)[0].strip()))
    return out


def script(all_steps: list[Step], *, install: bool) -> str:
    """A bash script that runs the steps in order, echoing each as `$ CMD`. Without
    ``install`` the `pipx install` step is left out (the tests' own patchctl is on PATH)."""
    lines = ["set -euo pipefail"]
    n = 0
    for step in all_steps:
        if step.command.startswith("pipx ") and not install:
            continue
        for alt in step.alternatives:
            n += 1
            # pipx's home is the user's: an alternative's own keeps it from standing in
            # for the install that follows it.
            home = (
                (
                    "export PIPX_HOME=$PWD/.pipx PIPX_BIN_DIR=$PWD/.pipx/bin "
                    "PIPX_MAN_DIR=$PWD/.pipx/man && "
                )
                if alt.startswith("pipx ")
                else ""
            )
            lines += [
                f"echo {shlex.quote(f'$ # or: {alt}   (in ../alt-{n})')}",
                f"rm -rf ../alt-{n} && cp -a . ../alt-{n}",
                f"(cd ../alt-{n} && {home}{alt})",
            ]
        lines += [f"echo {shlex.quote('$ ' + step.command)}", step.command]
    return "\n".join(lines) + "\n"


@dataclass
class World:
    root: Path
    upstream: Upstream
    project: Path  # the downstream project the quickstart runs in
    pin: str
    patches: list[str]  # the file names in llama/patches/, in order


def make_world(root: Path) -> World:
    """An upstream with two commits past the pin, and a downstream that carries two patches
    (without patchctl's trailers, as a project's patches are) against the pin."""
    upstream = make_upstream(root / "upstream")
    pin = upstream.commits["base"]
    scratch = root / "scratch"

    def add_square(work: Path) -> None:
        replace_in(
            work / "src/util.c",
            "int tiny_abs(int v)",
            "int tiny_square(int v)\n{\n    return v * v;\n}\n\nint tiny_abs(int v)",
        )

    def declare(work: Path) -> None:
        replace_in(
            work / "include/tiny.h",
            "int tiny_version(void);\n",
            "int tiny_version(void);\nint tiny_square(int v);\n",
        )

    texts = [
        (
            "0001-util-add-tiny_square.patch",
            format_patch(
                upstream, pin, add_square, subject="util: add tiny_square", scratch=scratch
            ),
        ),
        (
            "0002-tiny-declare-tiny_square.patch",
            format_patch(
                upstream, pin, declare, subject="tiny: declare tiny_square", scratch=scratch
            ),
        ),
    ]
    # Upstream moves on past the pin: lines above the first patch's (an offset), a doc.
    util = upstream.path / "src/util.c"
    util.write_text("/* util: helpers. */\n\n" + util.read_text())
    upstream.commits["later"] = commit_all(upstream.path, "util : a header comment (#4)")
    (upstream.path / "docs").mkdir()
    (upstream.path / "docs/BUILD.md").write_text("# Build\n\ncmake -B build\n")
    upstream.commits["tip"] = commit_all(upstream.path, "docs : build notes (#5)")

    work = root / "work"
    project = work / "myproject"
    patches = project / "llama" / "patches"
    patches.mkdir(parents=True)
    for name, text in texts:
        (patches / name).write_text(text)
    (patches / "series").write_text("".join(f"{name}\n" for name, _ in texts))
    (project / "llama" / "COMMIT").write_text(pin + "\n")
    git(project, "init", "-q", "-b", "main")
    commit_all(project, "my project, carrying two llama patches")
    fork = work / "llama-fork"
    git(work, "clone", "-q", str(upstream.path), str(fork))
    git(fork, "checkout", "-q", "-b", "patched", pin)
    for name, _ in texts:
        git(fork, "am", "-q", str(patches / name))
    # The user's URL for the upstream reaches the local one (git's own URL rewriting).
    # patchctl's own git calls read no global config, so a lazy fetch of a blob from a
    # partial clone would go to the real URL: this upstream serves no partial clone, and
    # `git clone --filter=blob:none` falls back to a whole one.
    git(upstream.path, "config", "uploadpack.allowFilter", "false")
    gitconfig = Path(os.environ["GIT_CONFIG_GLOBAL"])
    gitconfig.write_text(
        gitconfig.read_text() + f'[url "{upstream.path.as_uri()}"]\n\tinsteadOf = {UPSTREAM_URL}\n'
    )
    return World(root, upstream, project, pin, [name for name, _ in texts])


def run(
    world: World, text: str, *, path_dirs: list[Path], extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``text`` with bash in the project; stdout and stderr together, as a person sees
    them. ``path_dirs`` come first on PATH (where `patchctl` and `pipx` are)."""
    env = {k: v for k, v in os.environ.items() if k != "PATCHCTL_QUIET"}
    env.update(extra_env or {})
    env["PATH"] = os.pathsep.join([*map(str, path_dirs), env.get("PATH", "")])
    return subprocess.run(
        ["bash", "-c", text],
        cwd=world.project,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        check=False,
        timeout=600,
    )


def wheel_name() -> str:
    """The wheel the quickstart installs, as the README names it."""
    from patchctl import __version__

    return f"patchctl-{__version__}-py3-none-any.whl"


def snapshot(dest: Path) -> Path:
    """This checkout's working tree (tracked files and new ones git does not ignore) as a
    git repository of one commit at ``dest``: what pre-commit installs and the wheel is
    built from, uncommitted changes included."""
    files = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout
    for rel in sorted(set(files.decode().split("\0")) - {""}):
        src = REPO / rel
        if src.is_file() and not src.is_symlink():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
    git(dest, "init", "-q", "-b", "main")
    commit_all(dest, "patchctl: this checkout's working tree")
    return dest
