"""patchctl reproduce: real cmake + ninja builds of fixture reproducers against `tiny`.

The stack: 0001 adds tiny_square (reproducers/square fails to link before it),
0002 adds tiny_cube in a new file with its declaration (reproducers/cube fails
to compile before it), 0003 makes tiny_clamp accept swapped bounds
(reproducers/clamp builds before it, but its test fails).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.builders import (
    Upstream,
    default_trailers,
    format_patch,
    make_project,
    replace_in,
    system_config_off,
)

FIXTURES = Path(__file__).parent / "fixtures" / "reproducers"
PROVEN = "fails-before/passes-after"

pytestmark = pytest.mark.slow


def add_cube(work: Path) -> None:
    replace_in(work / "CMakeLists.txt", "src/util.c)", "src/util.c src/cube.c)")
    replace_in(work / "include/tiny.h", "int tiny_version(void);\n",
               "int tiny_version(void);\nint tiny_cube(int v);\n")
    (work / "src/cube.c").write_text('#include "tiny.h"\n\nint tiny_cube(int v)\n{\n'
                                     "    return v * v * v;\n}\n")


def swap_clamp_bounds(work: Path) -> None:
    replace_in(work / "src/util.c", "int tiny_clamp(int v, int lo, int hi)\n{\n",
               "int tiny_clamp(int v, int lo, int hi)\n{\n    if (lo > hi) {\n"
               "        int t = lo;\n        lo = hi;\n        hi = t;\n    }\n")


def bump_op(work: Path) -> None:
    replace_in(work / "src/tiny.c", "    int y = x * 4;\n", "    int y = x * 4 + 1;\n")


def add_square(work: Path) -> None:
    replace_in(work / "src/util.c", "int tiny_abs(int v)",
               "int tiny_square(int v)\n{\n    return v * v;\n}\n\nint tiny_abs(int v)")


def make_patch_texts(up: Upstream, base: str, scratch: Path) -> dict[str, str]:
    """Patch texts against ``base`` by key: the proving stack is square, cube, clamp.

    Also used by bench/reproduce.py. Call with git's global config switched off.
    """
    def make(edit, subject: str, concern: str, scope: str, reproducer: str) -> str:
        trailers = default_trailers(concern, scope, Reproducer=f"reproducers/{reproducer}")
        return format_patch(up, base, edit, subject=subject, trailers=trailers,
                            scratch=scratch)

    return {
        "square": make(add_square, "util : add tiny_square", "square", "src/util.c",
                       "square"),
        "cube": make(add_cube, "tiny : add tiny_cube", "cube",
                     "CMakeLists.txt src/cube.c include/tiny.h", "cube"),
        "clamp": make(swap_clamp_bounds, "util : clamp accepts swapped bounds", "clamp",
                      "src/util.c", "clamp"),
        "vacuous": make(bump_op, "tiny : bump op 02", "bump", "src/tiny.c", "abs"),
        "broken": make(add_square, "util : add tiny_square", "square", "src/util.c",
                       "square-saturates"),
        "build-error": make(bump_op, "tiny : bump op 02", "bump", "src/tiny.c", "cube"),
    }


@pytest.fixture(scope="module")
def texts(_upstream_template, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Patch texts by key; the upstream's commit ids are fixed, so they fit every copy."""
    up: Upstream = _upstream_template[0]
    scratch = tmp_path_factory.mktemp("reproduce-scratch") / "work"
    with system_config_off(GIT_CONFIG_GLOBAL=os.devnull):
        return make_patch_texts(up, up.commits["base"], scratch)


def _project(tmp_path: Path, upstream: Upstream, texts: dict[str, str], keys: list[str],
             *, reproducers: bool = True) -> Path:
    patches = [(f"{i:04d}-{key}.patch", texts[key]) for i, key in enumerate(keys, start=1)]
    project = make_project(tmp_path / "project", upstream, patches)
    if reproducers:
        shutil.copytree(FIXTURES, project / "reproducers")
    return project


def _run_json(cli, project: Path, *args: str) -> tuple[int, dict]:
    r = cli("-C", str(project), "reproduce", "--json", *args)
    assert r.out.strip(), r.err
    return r.code, json.loads(r.out)


def _steps(report: dict) -> list[tuple[str, str, dict]]:
    """(patch, role, step) in the order the steps ran."""
    steps = [(p["name"], role, p[role]) for p in report["patches"] for role in ("before", "after")]
    return sorted(steps, key=lambda t: t[2]["order"])


def test_every_patch_fails_before_and_passes_after(cli, tmp_path, upstream, texts):
    project = _project(tmp_path, upstream, texts, ["square", "cube", "clamp"])
    code, report = _run_json(cli, project)

    assert code == 0, report
    assert [p["outcome"] for p in report["patches"]] == [PROVEN] * 3
    assert [p["before"]["result"] for p in report["patches"]] == ["build", "build", "test"]
    assert all(p["after"]["result"] == "passed" for p in report["patches"])
    assert "tiny_clamp(5, 10, 0) = 10 (want 5)" in report["patches"][2]["before"]["ctest_output"]
    assert report["shared_build"] and report["toolchain"]["ninja"]
    assert report["compilers"]["C"]

    # One shared build tree: the upstream is compiled once, then only what a patch touched.
    upstream_compiled = [s["upstream_compiled"] for _, _, s in _steps(report)]
    assert [s["cold"] for _, _, s in _steps(report)] == [True] + [False] * 5
    assert upstream_compiled == [
        2,  # square before, pin: tiny.c util.c (cold)
        1,  # square after, pin+1: util.c
        0,  # cube before, pin+1: another reproducer, same upstream objects
        3,  # cube after, pin+2: tiny.h changed (tiny.c util.c) + new cube.c
        0,  # clamp before, pin+2
        1,  # clamp after, pin+3: util.c
    ]

    # The command wrote its own evidence and the logs behind it.
    record = json.loads((project / "evidence" / "reproduce-tiny.json").read_text())
    assert record["as_expected"] and record["exit_code"] == 0
    assert record["stack"]["fingerprint"] == report["fingerprint"]
    assert "cmake" in record["tools"]
    assert [p["outcome"] for p in record["extra"]["reproduce"]["patches"]] == [PROVEN] * 3
    log = (project / "evidence" / "reproduce-tiny.log").read_text()
    assert "undefined reference to `tiny_square'" in log and "$ " in log
    for _, _, step in _steps(report):
        assert Path(step["log"]).is_file()
        assert step["log"].startswith(str(project / ".patchctl" / "reproduce"))


def test_rerun_walks_back_and_recompiles_only_touched_files(cli, tmp_path, upstream, texts):
    project = _project(tmp_path, upstream, texts, ["square", "cube", "clamp"])
    assert cli("-C", str(project), "reproduce").code == 0

    r = cli("-C", str(project), "reproduce")
    assert r.code == 0, r.out + r.err
    assert "3/3 proven" in r.out and "fails-before/passes-after" in r.out
    report = json.loads((project / "evidence" / "reproduce-tiny.json").read_text())
    steps = report["extra"]["reproduce"]["patches"]
    by_step = {(p["name"], role): p[role] for p in steps for role in ("before", "after")}
    # Run order is backwards from pin+3, where the first run left the source.
    order = [("0003-clamp.patch", "after"), ("0003-clamp.patch", "before"),
             ("0002-cube.patch", "after"), ("0002-cube.patch", "before"),
             ("0001-square.patch", "after"), ("0001-square.patch", "before")]
    assert [by_step[k]["order"] for k in order] == [1, 2, 3, 4, 5, 6]
    counts = [(by_step[k]["compiled"], by_step[k]["upstream_compiled"]) for k in order]
    assert counts[0] == (0, 0), "a no-change re-run of the last step compiles nothing"
    assert [u for _, u in counts] == [0, 1, 0, 2, 0, 1]
    assert not any(by_step[k]["cold"] for k in order)


def test_hand_edit_in_cached_source_is_put_back(cli, tmp_path, upstream, texts):
    """Regression: the cached source tree must equal pin + prefix even after a stray edit."""
    project = _project(tmp_path, upstream, texts, ["square"])
    assert cli("-C", str(project), "reproduce").code == 0
    util = project / ".patchctl" / "reproduce" / "src" / "src" / "util.c"
    util.write_text(util.read_text() + "\nint tiny_abs(int v) { return 0; } /* stray */\n")
    code, report = _run_json(cli, project)
    assert code == 0 and report["patches"][0]["outcome"] == PROVEN
    assert "stray" not in util.read_text()


def test_vacuous_reproducer_fails_the_run(cli, tmp_path, upstream, texts):
    project = _project(tmp_path, upstream, texts, ["vacuous"])
    r = cli("-C", str(project), "reproduce")
    assert r.code == 1
    assert "vacuous" in r.out and "tiny_abs(-3) = 3" in r.out


def test_broken_after_and_build_error(cli, tmp_path, upstream, texts):
    project = _project(tmp_path, upstream, texts, ["broken", "build-error"])
    code, report = _run_json(cli, project)
    assert code == 1
    assert [p["outcome"] for p in report["patches"]] == ["broken-after", "build-error"]
    assert report["patches"][0]["after"]["result"] == "test"
    assert report["patches"][1]["after"]["result"] == "build"
    assert report["patches"][1]["after"]["failed_target"]
    # Why it failed, from the compiler or linker (tiny_cube is not in this upstream), not
    # ninja's "build stopped"; the text report shows it too (bare machine, item 2).
    why = report["patches"][1]["after"]["reason"]
    assert "tiny_cube" in why and "build stopped" not in why, why
    assert f"fails at build: {why}" in cli("-C", str(project), "reproduce").out
    record = json.loads((project / "evidence" / "reproduce-tiny.json").read_text())
    assert record["exit_code"] == 1 and not record["as_expected"]


def test_keep_stops_at_the_first_unexpected_step(cli, tmp_path, upstream, texts):
    project = _project(tmp_path, upstream, texts, ["vacuous", "square"])
    code, report = _run_json(cli, project, "--keep")
    assert code == 1 and report["stopped_early"]
    assert [p["outcome"] for p in report["patches"]] == ["vacuous", "not-run"]
    assert report["patches"][1]["before"]["result"] == "not-run"


def test_names_select_patches(cli, tmp_path, upstream, texts):
    project = _project(tmp_path, upstream, texts, ["square", "cube", "clamp"])
    code, report = _run_json(cli, project, "cube")
    assert code == 0
    assert [p["name"] for p in report["patches"]] == ["0002-cube.patch"]
    assert [report["patches"][0][r]["prefix"] for r in ("before", "after")] == [1, 2]

    r = cli("-C", str(project), "reproduce", "nope")
    assert r.code == 2 and "no patch named 'nope'" in r.err


def test_a_named_run_keeps_other_patches_records(cli, tmp_path, upstream, texts):
    """Bug: `reproduce NAME` overwrote the one per-stack record, so a run for one patch
    lost the result another run recorded for another patch."""
    project = _project(tmp_path, upstream, texts, ["square", "cube"])
    evidence = project / "evidence"
    assert cli("-C", str(project), "reproduce", "square").code == 0
    whole = cli("-C", str(project), "reproduce")
    assert whole.code == 0
    stack_record = (evidence / "reproduce-tiny.json").read_bytes()
    code, report = _run_json(cli, project, "cube")
    assert code == 0 and report["records"] == [str(evidence / "reproduce-tiny--0002-cube.json")]
    assert (evidence / "reproduce-tiny.json").read_bytes() == stack_record
    square = json.loads((evidence / "reproduce-tiny--0001-square.json").read_text())
    assert [p["name"] for p in square["extra"]["reproduce"]["patches"]] == ["0001-square.patch"]
    cube = json.loads((evidence / "reproduce-tiny--0002-cube.json").read_text())
    assert cube["argv"][-1] == "cube" and cube["exit_code"] == 0
    brief = cli("-C", str(project), "draft-outreach", "--json", "0001")
    files = {e["file"] for e in json.loads(brief.out)["patches"][0]["evidence"]}
    assert {"evidence/reproduce-tiny.json", "evidence/reproduce-tiny--0001-square.json"} <= files
    assert "evidence/reproduce-tiny--0002-cube.json" not in files


def test_patch_without_reproducer_trailer_is_bad_input(cli, tmp_path, upstream, patches):
    project = make_project(tmp_path / "project", upstream, patches)
    r = cli("-C", str(project), "reproduce", "0002-tiny-bump-op-02.patch")
    assert r.code == 2 and "no `Reproducer:` trailer" in r.err


def test_missing_reproducer_dir_is_bad_input(cli, tmp_path, upstream, texts):
    project = _project(tmp_path, upstream, texts, ["square"], reproducers=False)
    r = cli("-C", str(project), "reproduce")
    assert r.code == 2
    assert "`Reproducer: reproducers/square` does not exist" in r.err
    assert not (project / "evidence").exists()


def _cli_subprocess(project: Path, path_dirs: list[Path], **env: str):
    full = {k: v for k, v in os.environ.items() if k not in ("CC", "CXX")}
    full.update(PATH=os.pathsep.join(map(str, path_dirs)), **env)
    return subprocess.run([sys.executable, "-m", "patchctl", "-C", str(project), "reproduce"],
                          capture_output=True, text=True, env=full, check=False)


def _bin_with(tmp_path: Path, *tools: str) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in tools:
        found = shutil.which(tool)
        assert found, f"{tool} is needed for this test"
        (bin_dir / tool).symlink_to(found)
    return bin_dir


def test_cmake_missing_is_an_environment_failure(tmp_path, upstream, texts):
    project = _project(tmp_path, upstream, texts, ["square"])
    proc = _cli_subprocess(project, [_bin_with(tmp_path, "git")])
    assert proc.returncode == 3, proc.stderr
    assert "cmake is not on PATH" in proc.stderr and "pip install cmake ninja" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_compiler_is_an_environment_failure(tmp_path, upstream, texts):
    """A configure that fails for lack of a compiler is the machine's fault, not a
    'fails before' result."""
    project = _project(tmp_path, upstream, texts, ["square"])
    bin_dir = _bin_with(tmp_path, "git", "cmake", "ctest", "ninja")
    proc = _cli_subprocess(project, [bin_dir], CC=str(tmp_path / "no-such-cc"))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "compiler" in proc.stderr and "Traceback" not in proc.stderr


def test_exclude_leaves_paths_out_of_the_source(cli, tmp_path, upstream, texts):
    """Regression: `update-index --force-remove` refused a non-bare clone's git dir
    ("must be run in a work tree"), so --exclude failed on a llama.cpp clone."""
    project = _project(tmp_path, upstream, texts, ["square"])
    code, report = _run_json(cli, project, "--exclude", "*.md")
    assert code == 0 and report["patches"][0]["outcome"] == PROVEN
    src = project / ".patchctl" / "reproduce" / "src"
    assert (src / "src" / "util.c").is_file() and not (src / "README.md").exists()


def test_isolate_gives_each_reproducer_its_own_build_tree(cli, tmp_path, upstream, texts):
    project = _project(tmp_path, upstream, texts, ["square", "clamp"])
    code, report = _run_json(cli, project, "--isolate")
    assert code == 0 and not report["shared_build"]
    steps = _steps(report)
    assert [s["cold"] for _, _, s in steps] == [True, False, True, False]
    assert [s["upstream_compiled"] for _, _, s in steps] == [2, 1, 2, 1]
    builds = sorted(p.name for p in (project / ".patchctl/reproduce/build").iterdir())
    assert len(builds) == 2 and all(b.startswith(("square-", "clamp-")) for b in builds)


def test_relative_pin_url_is_relative_to_the_project(cli, tmp_path, upstream, patches):
    """Regression: `patchctl -C examples/tiny reproduce` failed ("upstream
    tiny-upstream.bundle does not exist"): reproduce resolved the pin file's relative URL
    against the working directory, where verify and apply use the project."""
    project = make_project(tmp_path / "project", upstream, patches)
    pin = project / "stack/upstream.toml"
    pin.write_text(pin.read_text().replace(f'url = "{upstream.path}"', 'url = "../upstream"'))
    assert os.getcwd() != str(project)
    assert cli("-C", str(project), "verify").code == 0
    r = cli("-C", str(project), "reproduce", "0002-tiny-bump-op-02.patch")
    assert r.code == 2 and "no `Reproducer:` trailer" in r.err, r.err


def test_progress_per_step_on_stderr(cli, tmp_path, upstream, texts, monkeypatch):
    """Bug: `reproduce` printed nothing until it was done (off a terminal: a pipe, a CI log,
    `patchctl record`), while it builds for minutes. Each step now reports on stderr what
    it is doing and, when done, its result and time; stdout's report is unchanged, and
    --quiet, or --json off a terminal, leaves progress out."""
    project = _project(tmp_path, upstream, texts, ["square", "clamp"])
    monkeypatch.delenv("PATCHCTL_QUIET")
    monkeypatch.setenv("PATCHCTL_PROGRESS", "lines")  # what a log gets after its first 2 s
    r = cli("-C", str(project), "reproduce")
    assert r.code == 0, r.out + r.err
    lines = r.err.splitlines()
    assert lines and all(ln.startswith("patchctl: [0:") for ln in lines), r.err
    steps = [("0001-square.patch", "before", 0, "fails at build"),
             ("0001-square.patch", "after", 1, "passes"),
             ("0002-clamp.patch", "before", 1, "fails at test"),
             ("0002-clamp.patch", "after", 2, "passes")]
    for n, (name, role, prefix, verdict) in enumerate(steps, start=1):
        label = f"[{n}/4] {name} {role} (pin + {prefix}): "
        said = [ln.split(label, 1)[1] for ln in lines if label in ln]
        assert said[:3] == ["preparing the source tree", "configuring", "building"], said
        assert said[-1].startswith(f"{verdict} in ") and said[-1].endswith(" s"), said
        if verdict != "fails at build":
            assert "running the test" in said
    assert "patchctl: [" not in r.out and "2/2 proven" in r.out
    assert r.out.splitlines()[0].startswith("tiny @ ")  # the report, as before
    quiet = cli("-C", str(project), "reproduce", "--quiet")
    assert (quiet.code, quiet.err) == (0, "")
    monkeypatch.delenv("PATCHCTL_PROGRESS")  # auto: off a terminal, --json means a script
    code, report = _run_json(cli, project)
    assert code == 0 and report["ok"]
    assert cli("-C", str(project), "reproduce", "--json").err == ""
