"""bench/decode_cost.py's arithmetic: callgrind's counts per generated token,
from two runs that differ in their steps only. The runs themselves need valgrind and a
llama.cpp build, so they are the bench's, not the tests'."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from _common import BenchError
from decode_cost import parse_annotated, per_token, process_name

# The lines that matter of `callgrind_annotate --inclusive=yes` on a stage, as it prints
# them (valgrind 3.19), with a callee of llama_decode that must not be taken for it.
ANNOTATED = """\
--------------------------------------------------------------------------------
Ir
--------------------------------------------------------------------------------
587,579,872 (100.0%)  PROGRAM TOTALS

--------------------------------------------------------------------------------
Ir                    file:function
--------------------------------------------------------------------------------
494,946,045 (84.23%)  ???:worker::stage::(anonymous namespace)::Stage::serve() [/b/worker]
456,372,306 (77.67%)  ???:llama_decode [/b/worker]
456,372,153 (77.67%)  ???:llama_context::decode(llama_batch const&) [/b/worker]
 27,663,575 ( 4.71%)  ???:worker::digest_row(float const*, unsigned int, float*) [/b/worker]
"""


def test_parse_takes_the_totals_decode_and_digest() -> None:
    assert parse_annotated(ANNOTATED, "cg.1") == \
        {"total": 587_579_872, "decode": 456_372_306, "digest": 27_663_575}
    # llama-bench has no digest: 0, not an error.
    bench = "\n".join(ln for ln in ANNOTATED.splitlines() if "digest_row" not in ln)
    assert parse_annotated(bench, "cg.2")["digest"] == 0


def test_a_file_without_totals_is_an_error() -> None:
    with pytest.raises(BenchError, match=r"cg\.3: no PROGRAM TOTALS"):
        parse_annotated("Ir\n", "cg.3")


def test_per_token_is_the_difference_per_step() -> None:
    short = {"stage 0:12": {"total": 1_000, "decode": 600, "digest": 0}}
    long = {"stage 0:12": {"total": 3_000, "decode": 2_200, "digest": 400}}
    assert per_token(short, long, 16) == {"stage 0:12": {
        "total": 125.0, "decode": 100.0, "digest": 25.0, "rest": 0.0}}
    with pytest.raises(BenchError, match="other processes"):
        per_token(short, {"stage 0:8": long["stage 0:12"]}, 16)


def test_a_stage_is_named_by_its_layers(tmp_path: Path) -> None:
    stage = tmp_path / "cg.100"
    stage.write_text("# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\npid: 100\n"
                     "cmd:  /b/bin/worker --stage --model m.gguf --layers 12:24 --listen "
                     "127.0.0.1:0\npart: 1\n")
    driver = tmp_path / "cg.99"
    driver.write_text("version: 1\ncmd:  /b/bin/worker --drive --model m.gguf\n")
    assert (process_name(stage), process_name(driver)) == ("stage 12:24", "worker")
