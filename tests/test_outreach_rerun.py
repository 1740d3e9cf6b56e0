"""draft-outreach: how a person reruns a record from a clone of the project (outreach/rerun.py),
and scripts/perf-prefixes.sh, the record's script, taking what such a person has.

The script is run for real with --dry-run (it builds nothing): the steps it prints are the
ones it runs otherwise.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from patchctl.outreach import rerun

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "perf-prefixes.sh"
RECORDED = ["scripts/bench.sh", "/home/dev/.patchctl/edit/work", "/scratch/run",
            "/scratch/model.gguf", "docs/text.md", "5", "pin=82bb48500", "p1=0868bb3de"]


def test_a_record_made_with_scratch_paths_is_rerun_by_its_scripts_usage(tmp_path: Path
                                                                         ) -> None:
    """Bug: the brief's rerun of the perplexity and llama-bench record was the command as
    recorded, which needs a developer's scratch folder (models, a work folder) and the
    ephemeral commits of a `patchctl edit` worktree: nobody else can run it. The rerun is
    now the usage the record's script states, with what it needs; a command that names
    only what a clone of the project has stays as recorded."""
    script = tmp_path / "scripts" / "bench.sh"
    script.parent.mkdir()
    script.write_text("#!/usr/bin/env bash\n# Runs the bench.\n#\n"
                      "#   scripts/bench.sh UPSTREAM WORK MODEL\n#\n"
                      "# Needs: a llama.cpp clone (UPSTREAM),\n# cmake and a model.\n#\n"
                      "# More words.\nset -e\nllama-bench -m \"$3\"\n")
    again = rerun.rerun(RECORDED, "/home/dev", tmp_path, [script])
    assert again == rerun.Rerun(["scripts/bench.sh", "UPSTREAM", "WORK", "MODEL"],
                                "a llama.cpp clone (UPSTREAM), cmake and a model.", False)
    # a hidden folder of the checkout that recorded it is not the project's either
    assert not rerun.relocatable(["x", "/home/dev/.patchctl/edit/work"], "/home/dev")
    kept = ["patchctl", "verify", "/home/dev/stack/series"]
    assert rerun.rerun(kept, "/home/dev", tmp_path, [script]) == rerun.Rerun(kept, "", True)
    # no script that states a usage: the command as recorded, saying what it needs
    bare = rerun.rerun(RECORDED, "/home/dev", tmp_path, [])
    assert bare.command == RECORDED and bare.as_recorded
    assert bare.needs == "the paths of the machine that recorded it"


def _script(*args: str, work: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATCHCTL": str(Path(sys.executable).parent / "patchctl")}
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True,
                          env=env, cwd=work, timeout=120, check=False)


def test_perf_prefixes_builds_each_prefix_from_the_stack_with_patchctl_apply(
        tmp_path: Path) -> None:
    """Bug: scripts/perf-prefixes.sh took a git repository holding the stack's patches as
    commits (a `patchctl edit` worktree of the developer who ran it) and LABEL=COMMIT
    arguments naming those commits, so a clone of this project could not rerun it. It now
    takes a llama.cpp clone and writes the pin and each prefix of stack/series itself
    with `patchctl apply --into`; --dry-run prints those steps and runs none."""
    for name in ("bench.gguf", "ppl.gguf", "text.md"):
        (tmp_path / name).write_text("x")
    up = tmp_path / "llama.cpp"
    up.mkdir()
    work = tmp_path / "work"
    series = [ln.split()[0] for ln in (ROOT / "stack" / "series").read_text().splitlines()
              if ln.strip() and not ln.startswith("#")]
    r = _script("--dry-run", "--exclude", "models/*.gguf", str(up), str(work), "bench.gguf",
                "ppl.gguf", "text.md", "5", work=tmp_path)
    assert r.returncode == 0, r.stderr
    labels = ["pin"] + [f"p{k}" for k in range(1, len(series) + 1)]
    applies = [ln for ln in r.stdout.splitlines() if " apply --into " in ln]
    assert applies == [
        f"{Path(sys.executable).parent / 'patchctl'} -C {work}/stacks/{label} apply --into "
        f"{work}/{label}/src --upstream {up} --exclude models/\\*.gguf -q --force"
        for label in labels]
    # the last prefix's stack holds every patch of the series, copied from this project
    last = r.stdout.split(f"/stacks/{labels[-1]}/stack/series)")[1].split(" apply --into")[0]
    assert [ln.split()[1].rsplit("/", 1)[1] for ln in last.splitlines()
            if ln.startswith("cp ")] == series
    assert "checkout" not in r.stdout and not work.exists()  # nothing run, nothing written
    assert f"{work}/pin/build-tools/bin/llama-perplexity -m ppl.gguf -f text.md" in r.stdout
    # a configure argument reaches every configure (a CPU whose AMX its VM does not run)
    native = _script("--dry-run", "--cmake-arg", "-DGGML_NATIVE=OFF", "--cmake-arg",
                     "-DGGML_AVX2=ON", str(up), str(work), "bench.gguf", "ppl.gguf",
                     "text.md", "5", work=tmp_path)
    assert native.returncode == 0, native.stderr
    configures = [ln for ln in native.stdout.splitlines() if ln.startswith("cmake -S ")]
    assert len(configures) == len(labels)
    assert all(ln.endswith(" -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DLLAMA_BUILD_TESTS=OFF "
                           "-DLLAMA_BUILD_TOOLS=ON") for ln in configures), configures
    bad = _script(str(up), str(work), "bench.gguf", "ppl.gguf", "text.md", "five",
                  work=tmp_path)
    assert (bad.returncode, bad.stderr.strip()) == (
        2, f"{SCRIPT}: ROUNDS must be a positive number, not 'five'")
    old = _script(str(up), str(work), "bench.gguf", "ppl.gguf", "text.md", "5", "pin=82bb485",
                  work=tmp_path)
    assert old.returncode == 2 and old.stderr.startswith("usage: ")
    assert _script("--bogus", work=tmp_path).returncode == 2


def test_the_committed_briefs_rerun_needs_no_scratch_folder() -> None:
    """Bug: the first screens of the briefs gave, as the rerun of the perplexity and
    llama-bench record, a command naming /work/scratch models and ephemeral commits."""
    from tests.test_outreach_evidence import perf_record_is_current

    if not perf_record_is_current():
        pytest.skip("the per-prefix record is of an earlier stack: no brief offers its rerun")
    briefs = ROOT / "evidence" / "outreach"
    for path in sorted(briefs.glob("0*.md")):
        if path.name.endswith(".details.md"):
            continue
        covered = path.read_text(encoding="utf-8").split(
            "Asked upstream, covered by records of this patch:")[1].split("\n5. ")[0]
        line = next(ln for ln in covered.splitlines() if "evidence/perf-prefixes.json" in ln)
        assert line.endswith("rerun: `scripts/perf-prefixes.sh UPSTREAM WORK BENCH_MODEL "
                             "PPL_MODEL TEXT ROUNDS`"), path.name
        assert "/work/" not in covered, path.name
        assert "its script's usage; needs: a llama.cpp clone at the pin" in covered, path.name
