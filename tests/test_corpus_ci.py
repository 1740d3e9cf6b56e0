"""Corpus: hostile input to `patchctl ci`. Values that would reach a generated workflow
(options, the pin's name), and rebase-pin / upstream-status reports that `ci summary`
reads from the Actions cache. Each case: the exit code and a fragment of its one-line
error (or of the output, when the value is harmless)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tests.corpus import FINDINGS, OK, USAGE, Case, check, params, tree_digest
from tests.test_ci_canary import previous_report, status_report, synthetic_report

REPO = Path(__file__).resolve().parent.parent
DEEP = "[" * 200 + "]" * 200

# (extra `ci github` options, the pin's name): what must never change the workflow's shape
# or be evaluated by GitHub Actions.
WORKFLOW = [Case(i, data, code, frag) for i, data, code, frag in [
    ("name-secret", ([], "up ${{ secrets.NPM_TOKEN }}"), USAGE, "the pin's name"),
    ("name-secret-issue", (["--canary-issue"], "${{secrets.X}}"), USAGE, "'${{'"),
    ("name-newline", ([], "up\njobs: {}"), USAGE, "line break or control"),
    ("name-cr", ([], "up\rx"), USAGE, "line break or control"),
    ("name-escape", ([], "up\x1b]0;x\x07"), USAGE, "line break or control"),
    ("name-bidi", ([], "up\u202egnp.exe"), USAGE, "line break or control"),
    ("name-quotes", (["--canary-issue", "--install", "./ci/patchctl.whl"],
                     "a \"b\" 'c' $(id) `id` \\"), OK, "written"),
    ("install-expression", (["--install", "${{ github.event.head_commit.message }}"], None),
     USAGE, "--install"),
    ("install-newline", (["--install", "patchctl\n- run: id"], None), USAGE, "--install"),
    ("install-escape", (["--install", "patchctl\x1b[2J"], None), USAGE, "--install"),
    ("install-shell", (["--install", "patchctl; curl x | sh"], None), OK, "written"),
    ("out-newline-defaults", (["--out", "x\ndefaults:\n  run:\n    shell: id {0}\n#/../"
                                        ".github/workflows"], None), USAGE, "--out"),
    ("out-expression", (["--out", "${{ github.actor }}"], None), USAGE, "--out"),
    ("out-tab", (["--out", "a\tb"], None), USAGE, "--out"),
    ("cron-expression", (["--canary-cron", "0 4 * * ${{x}}"], None), USAGE, "--canary-cron"),
    ("runner-expression", (["--runner", "cpu=${{x}}"], None), USAGE, "not a runner label"),
]]


@params(WORKFLOW)
def test_workflow_value_corpus(case: Case, tmp_path: Path) -> None:
    """A value that reaches a generated workflow is refused (exit 2, one
    line, nothing written) when it holds `${{` or a control character; any other value is
    written inert (quoted YAML, reaching a shell through `env:` only)."""
    args, name = case.data  # type: ignore[misc]
    root = tmp_path / "repo"
    shutil.copytree(REPO / "examples" / "tiny", root / "examples" / "tiny")
    if name is not None:
        pin = root / "examples" / "tiny" / "stack" / "upstream.toml"
        pin.write_text(pin.read_text().replace('name = "tiny"', f"name = {json.dumps(name)}"))
    before = tree_digest(root)
    p = subprocess.run([sys.executable, "-m", "patchctl", "-C", "examples/tiny", "ci",
                        "github", *args], cwd=root, capture_output=True, text=True, check=False)
    check(SimpleNamespace(code=p.returncode, out=p.stdout, err=p.stderr), case)
    if case.code == USAGE:
        assert tree_digest(root) == before
    else:
        for f in (root / ".github" / "workflows").iterdir():
            assert "${{ secrets" not in f.read_text()


def _report(**change: Any) -> dict[str, Any]:
    """The synthetic report with top-level fields and (``p_`` names) patch 4's changed."""
    report = synthetic_report()
    report["patches"][3].update({k[2:]: v for k, v in change.items() if k.startswith("p_")})
    report.update({k: v for k, v in change.items() if not k.startswith("p_")})
    return report


# A report (JSON-able, or raw bytes) that `ci summary` reads as this run's and, in a second
# run, as the previous run's (the one that comes from the Actions cache).
REPORTS = [Case(i, data, code, frag) for i, data, code, frag in [
    ("bisect-string", _report(p_bisect="x"), USAGE, "patches/3/bisect"),
    ("bisect-commit-string", _report(p_bisect={"commit": "x"}), USAGE, "patches/3/bisect"),
    ("bisect-commit-id-int", _report(p_bisect={"commit": {"id": 7}}), USAGE, "bisect/commit"),
    ("landed-list", _report(p_landed=[1]), USAGE, "patches/3/landed"),
    ("landed-commit-no-id", _report(p_landed={"commit": {}, "how": "x"}), USAGE, "landed"),
    ("index-string", _report(p_index="four"), USAGE, "patches/3/index"),
    ("index-bool", _report(p_index=True), USAGE, "patches/3/index"),
    ("offsets-number", _report(p_offsets=3), USAGE, "patches/3/offsets"),
    ("conflicts-ints", _report(p_conflicts=[1, 2]), USAGE, "patches/3/conflicts/"),
    ("conflicts-newline", _report(p_conflicts=["a\n| forged | row |"]), USAGE, "conflicts/0"),
    ("name-newline", _report(p_name="x\n| 9 | `forged` |"), USAGE, "patches/3/name"),
    ("name-missing", _report(p_name=None), USAGE, "patches/3/name"),
    ("grade-pipe", _report(p_grade="exact | forged"), USAGE, "patches/3/grade"),
    ("grade-newline", _report(p_grade="conflict\n"), USAGE, "patches/3/grade"),
    ("superseded-commit-int", _report(p_superseded={"commit": 5}), USAGE, "superseded"),
    ("old-not-sha", _report(old="HEAD; rm -rf /"), USAGE, "at old"),
    ("new-sha-newline", _report(new="2" * 40 + "\n"), USAGE, "at new"),
    ("commits-string", _report(commits="many"), USAGE, "at commits"),
    ("patches-object", _report(patches={}), USAGE, "at patches"),
    ("schema-other", _report(schema="patchctl.verify/1"), USAGE, "at schema"),
    ("top-level-list", [], USAGE, "the top level"),
    ("deep", DEEP.encode(), USAGE, "nested deeper"),
    ("not-json", b"{\"schema\": ", USAGE, "not JSON"),
    ("not-utf8", b"\xff\xfe{}", USAGE, "not JSON"),
    ("unknown-fields", _report(p_future={"x": [1]}, later=None), FINDINGS, "newly broken"),
    ("superseded-odd-shape", _report(p_superseded=[1, 2]), FINDINGS, "Superseded"),
    ("subject-escape", _report(p_bisect={"commit": {"id": "a" * 40, "subject": "\x1b[2Jx"}}),
     FINDINGS, r"\\x1b\[2Jx"),  # printable, then Markdown-escaped
]]


def _write(path: Path, data: object) -> Path:
    path.write_bytes(data if isinstance(data, bytes) else json.dumps(data).encode())
    return path


@params(REPORTS)
def test_canary_report_corpus(cli, case: Case, tmp_path: Path) -> None:
    """`ci summary` validates both reports against their schema first
    (untrusted.py): a malformed one is one line, exit 2, never a traceback."""
    bad = _write(tmp_path / "bad.json", case.data)
    good = _write(tmp_path / "good.json", synthetic_report())
    r = cli("ci", "summary", str(bad))
    check(r, case)
    assert "\x1b" not in r.out
    prev = cli("ci", "summary", str(good), "--previous", str(bad))
    if case.code == USAGE:
        check(prev, case.code, "previous report")
    else:
        check(prev, (OK, FINDINGS))


STATUSES = [Case(i, data, code, frag) for i, data, code, frag in [
    ("upstream-list", {**status_report(), "patches": [{"file": "a", "upstream": [1]}]},
     USAGE, "patches/0/upstream"),
    ("file-int", {**status_report(), "patches": [{"file": 3}]}, USAGE, "patches/0/file"),
    ("ref-commit-int", {**status_report(), "ref_commit": 5}, USAGE, "ref_commit"),
    ("first-breaking-int", {**status_report(), "patches": [
        {"file": "a", "upstream": {"verdict": "superseded", "first_breaking": 5}}]},
     USAGE, "first_breaking"),
    ("contains-string", {**status_report(), "patches": [
        {"file": "a", "upstream": {"verdict": "superseded", "contains": "all"}}]},
     USAGE, "contains"),
    ("schema-rebase", previous_report(), USAGE, "at schema"),
]]


@params(STATUSES)
def test_canary_status_corpus(cli, case: Case, tmp_path: Path) -> None:
    """The --status report is validated the same way."""
    status = _write(tmp_path / "status.json", case.data)
    report = _write(tmp_path / "report.json", synthetic_report())
    check(cli("ci", "summary", str(report), "--status", str(status)), case)
