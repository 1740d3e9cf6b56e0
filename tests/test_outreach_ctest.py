"""draft-outreach: upstream's ctest at the pin and at each prefix, compared (outreach/ctest.py).

The records are written by ``patchctl record`` running a command that prints the log, in a
real project whose stack holds the patch; the brief is rendered by the CLI.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.builders import make_project
from tests.outreach_helpers import FORBIDS, api_patch, policy_upstream, prose_problems

SUBJECT = "tiny : add tiny_cube"


def _section(label: str, commit: str, subject: str, outcomes: dict[str, str],
             unbuilt: tuple[str, ...] = ()) -> str:
    lines = [f"== {label}: {commit} {subject}",
             f"build: ninja -k 0 rc={1 if unbuilt else 0}; failed targets: {len(unbuilt)}"]
    lines += [f"  FAILED: tests/CMakeFiles/{t}.dir/{t}.cpp.o " for t in unbuilt]
    lines.append("ctest: rc=8")
    for test, outcome in sorted(outcomes.items()):
        status = "Passed" if outcome == "passed" else f"***{outcome.title()}"
        lines.append(f"  {test} {status}    0.01 sec")
    bad = sum(o != "passed" for o in outcomes.values())
    lines.append(f"{100 * (len(outcomes) - bad) // len(outcomes)}% tests passed, {bad} tests "
                 f"failed out of {len(outcomes)}")
    return "\n".join(lines) + "\n"


AT_PIN = {"test-alloc": "passed", "test-rope": "passed", "test-vocab": "failed",
          "test-chat": "not run", "test-net": "not run"}


def _log(pin: str, after: dict[str, str]) -> str:
    return (_section("pin", pin[:9], "docs : contribution policy (#4)", AT_PIN, ("test-chat",))
            + _section("p1", "abcdef012", SUBJECT, after, ("test-chat",)))


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, Path]:
    up = policy_upstream(tmp_path / "up", FORBIDS)
    patch = api_patch(up, tmp_path / "scratch")
    return make_project(tmp_path / "proj", up, [("0001-tiny-add-tiny_cube.patch", patch)],
                        pin=up.commits["policy"]), up.path


def _brief(cli, project: Path, up: Path, out: Path, log: str) -> str:
    """The brief after ``patchctl record`` ran a command printing ``log`` (the concern's
    evidence directory, so the brief finds it)."""
    r = cli("-C", str(project), "record", "--name", "cube-ctest", "--evidence-dir",
            str(project / "evidence" / "cube"), "--", sys.executable, "-c",
            f"import sys; sys.stdout.write({log!r})")
    assert r.code == 0, r.err
    r = cli("-C", str(project), "draft-outreach", "--upstream", str(up), "--out", str(out))
    assert r.code == 0, r.err
    # the brief, then its details (the evidence records and their reruns)
    return "".join((out / name).read_text(encoding="utf-8") for name in (
        "0001-tiny-add-tiny_cube.md", "0001-tiny-add-tiny_cube.details.md"))


def _results(text: str) -> str:
    return text.split("## Test results")[1].split("## Next actions")[0]


def test_the_same_failures_at_the_pin_and_after_the_patch_are_not_the_patchs(
        cli, project, tmp_path: Path) -> None:
    """The first screen said `80% tests passed, 12 tests failed out of 59`
    from upstream's ctest per prefix, which reads as if the patch broke twelve tests. It
    now says the same tests fail at the pin and at every prefix, none changed by the patch,
    names them by ctest's outcome (a test whose own target did not build says so; no other
    cause is given, as the log states none) and names the test the patch adds."""
    proj, up = project
    pin = (proj / "stack" / "upstream.toml").read_text().split('commit = "')[1][:40]
    after = {**AT_PIN, "test-cube": "passed"}
    text = _brief(cli, proj, up, tmp_path / "out", _log(pin, after))
    results = _results(text)
    assert "tests passed" not in results
    assert ("- upstream ctest, pin and 1 prefix: the same 3 fail at each, of 5/6 (pin to last "
            "prefix) tests; 0 changed by "
            "the patch (pin -\\> p1, which adds test-cube: passed) (cpu: "
            "`evidence/cube/cube-ctest.json`)\n") in results
    assert ("  - at the pin: failed: test-vocab; not run: test-net; not run, unbuilt: "
            "test-chat\n") in results
    assert "NEW FAILURES" not in results
    rerun = text.split("Rerun (as recorded")[1]  # beside the record's command, in Details
    assert "  - upstream ctest, pin and 1 prefix: the same 3 fail at each, of 5/6 (pin to last " \
        "prefix) tests;" in rerun
    assert prose_problems(text) == []


def test_a_test_the_patch_breaks_is_loud_and_first(cli, project, tmp_path: Path) -> None:
    """A test that passes at the pin and fails after the patch must be loud on
    the first screen: NEW FAILURES, the first result line, and what the patch changed."""
    proj, up = project
    pin = (proj / "stack" / "upstream.toml").read_text().split('commit = "')[1][:40]
    ev = proj / "evidence" / "cube"
    ev.mkdir(parents=True)
    r = cli("-C", str(proj), "record", "--name", "cube-aaa-other", "--evidence-dir", str(ev),
            "--", sys.executable, "-c", "print('cube ranges: 3 ok, 0 failed')")
    assert r.code == 0, r.err
    after = {**AT_PIN, "test-rope": "failed", "test-cube": "failed"}
    results = _results(_brief(cli, proj, up, tmp_path / "out", _log(pin, after)))
    first = results.strip().splitlines()[0]
    assert first.startswith("- upstream ctest, pin and 1 prefix: 3 of 5 fail at the pin; "
                            "NEW FAILURES (passing or absent at the pin): test-cube at p1; "
                            "test-rope at p1; 2 changed by the patch"), first
    assert ("  - changed by the patch: test-cube (absent -\\> failed), test-rope (passed -\\> "
            "failed)") in results
    assert "- cube ranges: 3 ok, 0 failed" in results  # the other record's line, after


def test_compare_needs_the_pin_and_a_later_section() -> None:
    """Without a section at the pin, or with nothing after it, the log's totals stand; a
    test removed or fixed after the pin is told apart; the patch's own section is found by
    its subject."""
    from patchctl.outreach import ctest

    pin = "1234567890" + "0" * 30
    one = _section("pin", pin[:9], "base", AT_PIN)
    assert ctest.compare(one, pin, SUBJECT) is None
    assert ctest.compare(_section("x", "abcdef012", "other", AT_PIN)
                         + _section("p1", "fedcba987", SUBJECT, AT_PIN), pin, SUBJECT) is None
    fixed = {k: v for k, v in AT_PIN.items() if k != "test-net"} | {"test-vocab": "passed"}
    c = ctest.compare(one + _section("p1", "abcdef012", "another patch", fixed), pin, SUBJECT)
    assert c is not None and not c.new_failures
    assert c.headline == ("upstream ctest, pin and 1 prefix: 3 of 5 fail at the pin; pass "
                          "again: test-vocab at p1; the patch's own prefix is not in the log")
    # ctest's own per-test lines are read the same way as the condensed ones
    own = (f"== pin: {pin[:9]} base\n 1/2 Test  #1: test-a ......   Passed    0.01 sec\n"
           " 2/2 Test  #2: test-b ......***Failed    0.02 sec\n"
           f"== p1: abcdef012 {SUBJECT}\n 1/2 Test  #1: test-a ......***Failed    0.01 sec\n"
           " 2/2 Test  #2: test-b ......***Failed    0.02 sec\n")
    c = ctest.compare(own, pin, SUBJECT)
    assert c is not None and c.new_failures == ["test-a at p1"]
    assert c.details == ["at the pin: failed: test-b",
                         "changed by the patch: test-a (passed -> failed)"]


def test_a_build_failure_repeated_at_every_tree_is_shown_once(cli, project,
                                                              tmp_path: Path) -> None:
    """Ninja writes "FAILED: [code=1] tests/CMakeFiles/test-chat.dir/..." once per tree the
    log builds; the brief pasted each of those lines again for every tree (20 lines for 4
    targets and 5 trees, in three briefs), and the code in brackets hid that the test did
    not run because its target failed to build."""
    proj, up = project
    pin = (proj / "stack" / "upstream.toml").read_text().split('commit = "')[1][:40]
    log = _log(pin, {**AT_PIN, "test-cube": "passed"}).replace(
        "  FAILED: tests/", "  FAILED: [code=1] tests/")
    text = _brief(cli, proj, up, tmp_path / "out", log)
    assert ("  - at the pin: failed: test-vocab; not run: test-net; not run, unbuilt: "
            "test-chat\n") in _results(text)
    lines = text.split("Test lines from its log:")[1].split("```")[1]
    assert [ln.strip() for ln in lines.splitlines() if "FAILED" in ln] == [
        "FAILED: [code=1] tests/CMakeFiles/test-chat.dir/test-chat.cpp.o (2 times, once per "
        "tree: the pin and 1 prefix)"]


CMAKE = """\
function(llama_test target)
    # NAME and ARGS as upstream's helper takes them
endfunction()
llama_test(test-tokenizer-0 NAME test-vocab     ARGS ${PROJECT_SOURCE_DIR}/models/vocab.gguf)
add_test(NAME test-net COMMAND ${CMAKE_COMMAND}
    -DDEST=${MODEL_DEST}
    -P ${CMAKE_SOURCE_DIR}/cmake/download-models.cmake
)
set_tests_properties(test-net PROPERTIES FIXTURES_SETUP net-model)
llama_build_and_test(test-state.cpp ARGS -m "${MODEL_DEST}")
set_tests_properties(test-state PROPERTIES FIXTURES_REQUIRED net-model)
llama_build_and_test(test-args.cpp)
"""


def test_why_the_tests_failing_at_the_pin_fail_is_said_from_the_log_and_the_cmake_file(
        ) -> None:
    """Bug: the brief said the same 12 tests fail at the pin and at every prefix, but not
    why, so a reviewer reads them as the patch's problem or the tester's. It now says what
    the log states (build targets failing everywhere, a library too) and what upstream's
    tests/CMakeLists.txt at the pin says each failing test needs (a fixture test that must
    pass first, a file of the source tree it reads, a script it runs); a test neither
    explains is named as such, and no cause is made up."""
    from patchctl.outreach import ctest

    pin = "1234567890" + "0" * 30
    at_pin = {"test-alloc": "passed", "test-vocab": "failed", "test-net": "failed",
              "test-state": "not run", "test-args": "failed", "test-chat": "not run"}
    log = "".join(_section(label, commit, subject, {**at_pin, **more},
                           ("test-chat", "llama-app"))
                  for label, commit, subject, more in (
                      ("pin", pin[:9], "base", {}),
                      ("p1", "abcdef012", SUBJECT, {"test-cube": "passed"})))
    c = ctest.compare(log, pin, SUBJECT, CMAKE)
    assert c is not None
    where = "tests/CMakeLists.txt at the pin"
    named = ("at the pin: failed: test-args, test-net, test-vocab; not run: test-state; "
             "not run, unbuilt: test-chat")
    assert c.details == [
        "why, at the pin (each: Details): unbuilt: "
        "llama-app, test-chat; test-net runs cmake/download-models.cmake; test-state needs "
        "test-net to pass first; test-vocab reads models/vocab.gguf; test-args: none stated"]
    assert c.why == [
        named,
        "build targets failing at the pin and every prefix (the log): llama-app, test-chat",
        f"runs a script of the source tree, {where}: "
        "test-net: cmake/download-models.cmake (:5)",
        f"need test-net (failed at the pin) to pass first (FIXTURES_REQUIRED), {where}: "
        "test-state (:11)",
        f"reads a file of the source tree, {where}: test-vocab: models/vocab.gguf (:4)",
        "no cause in the log or tests/CMakeLists.txt: test-args"]
    # without the CMake file only what the log says, and no test is said to lack a cause
    bare = ctest.compare(log, pin, SUBJECT)
    assert bare is not None and bare.details == [named, "also unbuilt: llama-app"]
    assert bare.why == c.why[1:2]
