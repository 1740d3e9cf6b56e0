"""upstream-status: offline report, landed/superseded at a later upstream, and --online
against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.builders import Upstream, commit_all, format_patch, make_project, replace_in
from tests.github_server import OPEN_ISSUE, github_server
from tests.rebase_history import History, make_history

TOKEN = "ghp_TESTSECRET0123456789abcdef"


def _patch(up: Upstream, scratch: Path, n: int, trailers: dict[str, str]) -> tuple[str, str]:
    def edit(work: Path) -> None:
        replace_in(work / "src/tiny.c", f"    int y = x * {n + 2};\n",
                   f"    int y = x * {n + 2} + 1;\n")

    name = f"{n:04d}-op-{n}.patch"
    return name, format_patch(up, up.commits["base"], edit, subject=f"tiny : op {n}",
                              trailers={"Concern": f"op{n}", "Scope": "src/tiny.c", **trailers},
                              scratch=scratch)


@pytest.fixture
def statuses(tmp_path: Path, upstream: Upstream) -> Path:
    scratch = tmp_path / "scratch"
    patches = [
        _patch(upstream, scratch, 1, {"Upstream-Status": "Pending"}),
        _patch(upstream, scratch, 2, {"Upstream-Status": "Submitted [https://github.com/o/r/pull/2]"}),
        _patch(upstream, scratch, 3, {"Upstream-Status": "pending"}),
        _patch(upstream, scratch, 4, {}),
        _patch(upstream, scratch, 5, {"Upstream-Status": "Pending", "Bug": "o/r#1"}),
    ]
    return make_project(tmp_path / "proj", upstream, patches)


def test_offline_report_counts_and_flags(cli, statuses: Path) -> None:
    r = cli("-C", str(statuses), "upstream-status", "--json")
    assert r.code == 1  # a malformed and a missing status are findings
    data = json.loads(r.out)
    assert data["counts"] == {"Pending": 2, "Submitted": 1, "malformed": 1, "missing": 1}
    assert data["malformed"] == ["0003-op-3.patch", "0004-op-4.patch"]
    assert data["unreferenced"] == ["0001-op-1.patch", "0003-op-3.patch", "0004-op-4.patch"]
    rows = {p["file"]: p for p in data["patches"]}
    assert rows["0002-op-2.patch"]["references"] == ["https://github.com/o/r/pull/2"]
    assert rows["0005-op-5.patch"]["references"] == ["o/r#1"]
    # format_patch dates commits 2026-01-01; Pending age counts from the patch's Date:
    expected = (dt.date.today() - dt.date(2026, 1, 1)).days
    assert rows["0001-op-1.patch"]["pending_days"] == expected
    assert rows["0002-op-2.patch"]["pending_days"] is None
    text = cli("-C", str(statuses), "upstream-status").out
    assert "malformed: Upstream-Status: pending" in text
    assert "o/r#1: not fetched yet: run with --online" in text


def test_pending_age_is_counted_in_words() -> None:
    """The text report said "pending 1 days"."""
    from patchctl.outreach.render import status_text
    from patchctl.outreach.status import PatchStatus, StatusReport

    rows = [PatchStatus(i, f"000{i}-x.patch", None, "Pending", "", None, ["o/r#1"],
                        "2026-01-01", days) for i, days in ((1, 1), (2, 2))]
    text = status_text(StatusReport("tiny", "a" * 40, None, None, {"Pending": 1}, rows[:1]))
    assert "tiny @ aaaaaaaaaaaa: 1 patch\n" in text and "pending 1 day (since" in text
    text = status_text(StatusReport("tiny", "a" * 40, None, None, {"Pending": 2}, rows))
    assert ": 2 patches\n" in text and "pending 2 days (since" in text


@pytest.fixture(scope="module")
def _history(tmp_path_factory: pytest.TempPathFactory) -> History:
    return make_history(tmp_path_factory.mktemp("history"))


def test_landed_and_superseded_between_the_pin_and_a_ref(cli, tmp_path: Path,
                                                        _history: History) -> None:
    """An exact landing (patch-id), a landing inside a larger commit (reverse-apply), an
    unrelated conflict (not superseded) and a half-landed change, on the planted history."""
    up = Upstream(tmp_path / "up", dict(_history.upstream.commits))
    shutil.copytree(_history.upstream.path, up.path, symlinks=True)
    project = make_project(tmp_path / "proj", up, _history.patches)
    r = cli("-C", str(project), "upstream-status", "--ref", "master", "--upstream",
            str(up.path), "--json")
    data = json.loads(r.out)
    rows = {p["file"][:4]: p["upstream"] for p in data["patches"]}
    c = up.commits
    assert rows["0008"]["verdict"] == "landed" and rows["0008"]["how"] == "patch-id"
    assert rows["0008"]["commit"]["id"] == c["c36"]
    assert rows["0006"]["verdict"] == "landed" and rows["0006"]["commit"]["id"] == c["c22"]
    assert rows["0005"] == {"grade": "conflict", "verdict": "broken", "contains": 0.0,
                            "first_breaking": rows["0005"]["first_breaking"],
                            "conflicts": ["src/tiny.c"]}
    assert rows["0005"]["first_breaking"]["id"] == c["c31"]
    assert rows["0007"]["first_breaking"]["id"] == c["c28"]
    assert rows["0007"]["contains"] == 0.5 and rows["0007"]["verdict"] == "superseded"
    assert rows["0001"] == {"grade": "exact", "verdict": "applies"}


def test_a_reworded_landing_is_superseded(cli, tmp_path: Path, upstream: Upstream) -> None:
    """Upstream added the same function in its own words: the patch conflicts, and the
    commit that broke it holds most of its post-image."""
    def cube(work: Path) -> None:
        replace_in(work / "src/util.c", "int tiny_abs(int v)",
                   "/* cube of v */\nint tiny_cube(int v)\n{\n    int sq = v * v;\n"
                   "    return sq * v;\n}\n\nint tiny_abs(int v)")

    name = "0001-util-add-tiny_cube.patch"
    text = format_patch(upstream, upstream.commits["base"], cube, subject="util : add tiny_cube",
                        trailers={"Concern": "cube", "Upstream-Status": "Pending",
                                  "Scope": "src/util.c"}, scratch=tmp_path / "scratch")
    project = make_project(tmp_path / "proj", upstream, [(name, text)])
    replace_in(upstream.path / "src/util.c", "int tiny_abs(int v)",
               "/* v cubed (#9) */\nint tiny_cube(int v)\n{\n    int sq = v * v;\n"
               "    return sq * v;\n}\n\nint tiny_abs(int v)")
    landed = commit_all(upstream.path, "util : tiny_cube (#9)")
    r = cli("-C", str(project), "upstream-status", "--ref", "HEAD", "--upstream",
            str(upstream.path), "--json")
    row = json.loads(r.out)["patches"][0]["upstream"]
    assert row["grade"] == "conflict" and row["verdict"] == "superseded"
    assert row["first_breaking"]["id"] == landed
    assert row["contains"] == 0.75  # 3 of the 4 non-brace added lines: the comment differs
    text = cli("-C", str(project), "upstream-status", "--ref", "HEAD", "--upstream",
               str(upstream.path)).out
    assert "superseded (grade conflict)" in text and "holds 75% of the patch's added lines" in text


@pytest.fixture
def many_refs(tmp_path: Path, upstream: Upstream) -> Path:
    bugs = {"Upstream-Status": "Submitted [https://github.com/o/r/pull/2]"}
    name, text = _patch(upstream, tmp_path / "scratch", 1, bugs)
    extra = "".join(f"Bug: o/r#{n}\n" for n in (1, 3, 4, 5, 6, 7, 8, 9))
    text = text.replace("Scope: src/tiny.c\n", "Scope: src/tiny.c\n" + extra, 1)
    return make_project(tmp_path / "proj", upstream, [(name, text)])


def _online_env(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.setenv("PATCHCTL_GITHUB_API", url)
    monkeypatch.setenv("PATCHCTL_GITHUB_TIMEOUT", "0.3")
    monkeypatch.setenv("PATCHCTL_GITHUB_RETRIES", "2")
    monkeypatch.setenv("PATCHCTL_GITHUB_BACKOFF", "0.01")
    monkeypatch.setenv("PATCHCTL_GITHUB_MAX_WAIT", "5")
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)


def test_online_states_errors_cache_and_no_token_anywhere(cli, many_refs: Path,
                                                         monkeypatch, caplog) -> None:
    caplog.set_level(logging.DEBUG)  # requests/urllib3 debug logs included
    with github_server(slow=1.0) as server:
        _online_env(monkeypatch, f"http://127.0.0.1:{server.server_port}")
        r = cli("-C", str(many_refs), "upstream-status", "--online", "--json")
        requests_seen = list(server.requests)
    assert r.code == 0, r.err
    online = {o["ref"]: o for o in json.loads(r.out)["patches"][0]["online"]}
    assert online["o/r#1"]["state"] == "open" and online["o/r#1"]["kind"] == "issue"
    assert online["o/r#2"]["state"] == "merged" and online["o/r#2"]["kind"] == "pull request"
    assert online["o/r#3"]["error"].startswith("not found (404)")
    assert online["o/r#4"]["error"] == "HTTP 500 (after 3 tries)"
    assert online["o/r#5"]["state"] == "open"  # a 500, then a retry that worked
    assert online["o/r#6"]["error"].startswith("rate limited until 20")
    assert online["o/r#7"]["state"] == "open"  # 429 with Retry-After: 0, then the answer
    assert online["o/r#8"]["error"] == "timed out after 0.3s (after 3 tries)"
    assert online["o/r#9"]["error"].startswith("malformed answer (not the JSON of an issue): ")
    paths = [p for p, _ in requests_seen]
    assert paths.count("/repos/o/r/issues/4") == 3 and paths.count("/repos/o/r/issues/6") == 1
    assert all(h.get("Authorization") == f"Bearer {TOKEN}" for _, h in requests_seen)
    assert {p.split("/")[-1] for p in paths} == {str(n) for n in range(1, 10)}

    # offline now: the cached answers come back with their age; errors were not cached
    monkeypatch.setenv("PATCHCTL_GITHUB_API", "http://127.0.0.1:9")  # nothing listens
    text = cli("-C", str(many_refs), "upstream-status").out
    assert "o/r#1: issue open, last activity 2026-11-01T10:00:00Z (cached, answer" in text
    assert "o/r#3: not fetched yet" in text

    # the token never appears in output, logs, the cache, or anywhere under the project
    assert caplog.records  # urllib3 did log the connections
    assert TOKEN not in r.out + r.err + text + caplog.text
    for path in many_refs.rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path
    cache = json.loads((many_refs / ".patchctl" / "github-cache.json").read_text())
    assert sorted(cache["answers"]) == ["o/r#1", "o/r#2", "o/r#5", "o/r#7"]


def test_a_failed_refresh_keeps_the_cached_answer(cli, many_refs: Path, monkeypatch) -> None:
    with github_server() as server:
        _online_env(monkeypatch, f"http://127.0.0.1:{server.server_port}")
        assert cli("-C", str(many_refs), "upstream-status", "--online").code == 0
    monkeypatch.setenv("PATCHCTL_GITHUB_API", "http://127.0.0.1:9")
    monkeypatch.setenv("PATCHCTL_GITHUB_RETRIES", "0")
    data = json.loads(cli("-C", str(many_refs), "upstream-status", "--online", "--json").out)
    one = next(o for o in data["patches"][0]["online"] if o["ref"] == "o/r#1")
    assert one["state"] == "open" and one["stale"] is True
    assert one["error"].startswith("request failed: ConnectionError")


# -- deadline, untrusted JSON, server text ------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
FORGED = "open\n| forged | row\x1b]0;title\x07"


@pytest.fixture
def one_ref(tmp_path: Path, upstream: Upstream) -> Path:
    name, text = _patch(upstream, tmp_path / "scratch", 1,
                        {"Upstream-Status": "Pending", "Bug": "o/r#1"})
    return make_project(tmp_path / "proj", upstream, [(name, text)])


def _run(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """patchctl in a process of its own: a hang is cut off by the guard, not by pytest."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, "-m", "patchctl", "-C", str(project), *args],
                          capture_output=True, text=True, env=env, timeout=120, check=False)


@pytest.mark.parametrize("drip", ["body", "all"])
def test_a_server_dripping_a_byte_a_second_is_cut_off_at_the_deadline(
        one_ref: Path, monkeypatch, drip: str) -> None:
    """PATCHCTL_GITHUB_TIMEOUT bounds each read only, so a server that sent
    one byte a second (in its body, or in its status line and headers too) held
    upstream-status --online for ever. Each request now has a total deadline
    (PATCHCTL_GITHUB_DEADLINE); passing it is the reference's error, asked once."""
    with github_server(answer=(200, {}, OPEN_ISSUE), drip=drip) as server:
        _online_env(monkeypatch, f"http://127.0.0.1:{server.server_port}")
        monkeypatch.setenv("PATCHCTL_GITHUB_TIMEOUT", "5")  # every byte comes within it
        monkeypatch.setenv("PATCHCTL_GITHUB_DEADLINE", "2")
        r = _run(one_ref, "upstream-status", "--online", "--json")
        asked = len(server.requests)
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 0, r.stderr
    online = json.loads(r.stdout)["patches"][0]["online"]
    assert online == [{"ref": "o/r#1", "error": "no complete answer within 2s"}]
    assert asked == 1  # a server that held the whole deadline is not asked again


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_a_deadline_that_is_not_a_positive_number_is_one_line(cli, one_ref: Path, monkeypatch,
                                                               value: str) -> None:
    """PATCHCTL_GITHUB_DEADLINE must be a positive number of seconds."""
    _online_env(monkeypatch, "http://127.0.0.1:9")
    monkeypatch.setenv("PATCHCTL_GITHUB_DEADLINE", value)
    r = cli("-C", str(one_ref), "upstream-status", "--online")
    assert r.code == 2 and r.err.count("\n") == 1, r.err
    assert r.err.startswith("patchctl: error: PATCHCTL_GITHUB_DEADLINE=")


@pytest.mark.parametrize("body", [
    b"[" * 100_000 + b"]" * 100_000,
    b'{"state": "open", "title": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
], ids=["deep-list", "deep-title"])
def test_an_answer_nested_100000_deep_is_a_malformed_answer(cli, one_ref: Path, monkeypatch,
                                                              body: bytes) -> None:
    """An API answer nested 100,000 deep ended upstream-status --online in a
    RecursionError traceback; answers are now size/depth-checked and validated against
    their schema (untrusted.parse_json) before use."""
    with github_server(answer=(200, {}, body)) as server:
        _online_env(monkeypatch, f"http://127.0.0.1:{server.server_port}")
        r = cli("-C", str(one_ref), "upstream-status", "--online", "--json")
    assert r.code == 0, r.err
    [online] = json.loads(r.out)["patches"][0]["online"]
    assert online["error"] == ("malformed answer (not the JSON of an issue): nested deeper "
                               "than 64 levels")


def _write_cache(project: Path, answers: dict) -> Path:
    path = project / ".patchctl" / "github-cache.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"schema": "patchctl.github-cache/1", "answers": answers}))
    return path


def test_a_cache_entry_missing_kind_is_a_miss_and_refetched(cli, one_ref: Path,
                                                            monkeypatch) -> None:
    """A cache entry without ``kind`` ended upstream-status in a KeyError
    traceback; cache entries are validated against their schema and a bad one is a miss."""
    cache = _write_cache(one_ref, {"o/r#1": {"state": "open", "title": "t", "url": "",
                                             "fetched_at": "2026-01-01T00:00:00+00:00"}})
    r = cli("-C", str(one_ref), "upstream-status")
    assert r.code == 0, r.err
    assert "o/r#1: not fetched yet: run with --online" in r.out
    with github_server() as server:
        _online_env(monkeypatch, f"http://127.0.0.1:{server.server_port}")
        r = cli("-C", str(one_ref), "upstream-status", "--online")
    assert r.code == 0, r.err
    assert "o/r#1: issue open, last activity 2026-11-01T10:00:00Z" in r.out
    assert json.loads(cache.read_text())["answers"]["o/r#1"]["kind"] == "issue"


def test_a_forged_state_is_escaped_in_text_and_exact_in_json(cli, one_ref: Path,
                                                             monkeypatch) -> None:
    """An answer's ``state`` holding a newline and an OSC escape was printed
    raw: it forged a report row and retitled the terminal. The text report escapes it;
    --json and the cache keep it exact (JSON encoding escapes it there)."""
    answer = {**OPEN_ISSUE, "state": FORGED, "updated_at": "2026\x1b[2J"}
    with github_server(answer=(200, {}, answer)) as server:
        _online_env(monkeypatch, f"http://127.0.0.1:{server.server_port}")
        text = cli("-C", str(one_ref), "upstream-status", "--online")
        data = cli("-C", str(one_ref), "upstream-status", "--online", "--json")
    assert text.code == 0 and data.code == 0, text.err + data.err
    assert "o/r#1: issue open\\n| forged | row\\x1b]0;title\\x07, last activity " \
        "2026\\x1b[2J" in text.out
    assert "\x1b" not in text.out and "\x07" not in text.out
    assert not any(line.startswith("| forged") for line in text.out.split("\n"))
    [online] = json.loads(data.out)["patches"][0]["online"]
    assert online["state"] == FORGED and online["updated_at"] == "2026\x1b[2J"
    assert "\x1b" not in data.out  # JSON encoding escapes it
    cache = one_ref / ".patchctl" / "github-cache.json"
    assert json.loads(cache.read_text())["answers"]["o/r#1"]["state"] == FORGED
    assert b"\x1b" not in cache.read_bytes()
    offline = cli("-C", str(one_ref), "upstream-status")  # from the cache: escaped again
    assert "| forged | row\\x1b]0;title\\x07, last activity" in offline.out
    assert "\x1b" not in offline.out


def test_an_upstream_commit_subject_is_escaped_in_every_output(cli, tmp_path: Path,
                                                               upstream: Upstream) -> None:
    """The subject of the upstream commit that broke a patch was printed raw
    by upstream-status --ref (and rebase-pin): an escape sequence in it reached the
    terminal. gitrepo returns upstream subjects printable."""
    def cube(work: Path) -> None:
        replace_in(work / "src/util.c", "int tiny_abs(int v)",
                   "int tiny_cube(int v)\n{\n    return v * v * v;\n}\n\nint tiny_abs(int v)")

    text = format_patch(upstream, upstream.commits["base"], cube, subject="util : tiny_cube",
                        trailers={"Concern": "cube", "Upstream-Status": "Pending",
                                  "Scope": "src/util.c"}, scratch=tmp_path / "scratch")
    project = make_project(tmp_path / "proj", upstream, [("0001-cube.patch", text)])
    replace_in(upstream.path / "src/util.c", "int tiny_abs(int v)",
               "int tiny_cube(int v)\n{\n    return v * v * v + 0;\n}\n\nint tiny_abs(int v)")
    commit_all(upstream.path, "util : cube\x1b]0;pwned\x07\x9b2J\u202eevil")
    args = ("--upstream", str(upstream.path))
    for argv in (["upstream-status", "--ref", "HEAD", *args],
                 ["upstream-status", "--ref", "HEAD", "--json", *args],
                 ["rebase-pin", "--check", "HEAD", *args]):
        r = cli("-C", str(project), *argv)
        assert "Traceback" not in r.out + r.err
        assert "cube\\x1b]0;pwned\\x07\\x9b2J\\u202eevil" in r.out.replace("\\\\", "\\"), argv
        for c in "\x1b\x07\x9b\u202e":
            assert c not in r.out + r.err, (argv, c)


def test_an_answer_larger_than_the_cap_is_refused(cli, one_ref: Path, monkeypatch) -> None:
    """The body of an answer was read whole, however large; it is capped
    (httpget.MAX_BODY) and a larger one is the reference's error, asked once."""
    body = b'{"state": "open", "title": "' + b"t" * (5 << 20) + b'"}'
    with github_server(answer=(200, {}, body)) as server:
        _online_env(monkeypatch, f"http://127.0.0.1:{server.server_port}")
        r = cli("-C", str(one_ref), "upstream-status", "--online", "--json")
        asked = len(server.requests)
    assert r.code == 0, r.err
    [online] = json.loads(r.out)["patches"][0]["online"]
    assert online == {"ref": "o/r#1", "error": f"answer larger than {4 << 20} bytes"}
    assert asked == 1
