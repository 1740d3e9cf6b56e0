"""Secrets: GITHUB_TOKEN's value never appears in output, logs, evidence, caches or errors.

The token is set for every command here; each test then looks for its value in
stdout, stderr, the log records Python's logging saw, and every file the command
left in the project, the evidence dir and the cache.
"""

from __future__ import annotations

import logging
import socket
import sys
from pathlib import Path

import pytest

from tests.builders import Upstream
from tests.corpus import OK, USAGE, check

TOKEN = "ghp_SECRETSCORPUS0123456789abcdefABCDEF"


@pytest.fixture(autouse=True)
def token(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("PATCHCTL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)


def _nowhere(tmp_path: Path, r, caplog) -> None:
    assert TOKEN not in r.out + r.err + caplog.text
    for path in tmp_path.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert TOKEN.encode() not in path.read_bytes(), path


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.parametrize("argv", [
    ["record", "--name", "env", "--", sys.executable, "-c",
     "import os; print(os.environ['GITHUB_TOKEN'])"],
    ["record", "--name", "argv", "--", sys.executable, "-c", "print(1)", TOKEN],
    ["record", "--name", "fails", "--expect", "fail", "--", sys.executable, "-c",
     f"raise SystemExit('{TOKEN}')"],
])
def test_evidence_records_never_hold_the_token(cli, project: Path, tmp_path: Path, caplog,
                                               argv) -> None:
    """Bug: `patchctl record` kept the token in NAME.log (and in the JSON's argv) when the
    recorded command printed it or was given it."""
    caplog.set_level(logging.DEBUG)
    r = cli("-C", str(project), *argv)
    check(r, OK)
    assert (project / "evidence" / f"{argv[2]}.log").exists()
    _nowhere(tmp_path, r, caplog)


@pytest.mark.parametrize("where", ["upstream", "pin"])
def test_a_token_in_an_upstream_url(cli, project: Path, tmp_path: Path, caplog,
                                    where: str) -> None:
    """Bug: a CI passes the token inside a URL (https://x-access-token:TOKEN@host/...): an
    unreachable upstream's one-line error printed it."""
    caplog.set_level(logging.DEBUG)
    url = f"http://x-access-token:{TOKEN}@127.0.0.1:{_closed_port()}/up.git"
    if where == "pin":
        pin = project / "stack/upstream.toml"
        text = pin.read_text()
        old = text.split('url = "', 1)[1].split('"', 1)[0]
        pin.write_text(text.replace(old, url))
        r = cli("-C", str(project), "verify")
    else:
        r = cli("-C", str(project), "verify", "--upstream", url)
    check(r, (USAGE, 3))
    assert TOKEN not in r.out + r.err
    # (the cache's git config keeps the URL it fetches from, as any clone does: SECURITY.md)


def test_online_status_with_an_unreachable_api(cli, project: Path, tmp_path: Path, caplog,
                                               monkeypatch) -> None:
    caplog.set_level(logging.DEBUG)
    name = next((project / "stack/patches").iterdir())
    name.write_text(name.read_text().replace("Scope:", "Bug: o/r#1\nScope:", 1))
    monkeypatch.setenv("PATCHCTL_GITHUB_API", f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.setenv("PATCHCTL_GITHUB_RETRIES", "0")
    r = cli("-C", str(project), "upstream-status", "--online", "--json")
    check(r, (OK, 1))
    _nowhere(tmp_path, r, caplog)


def test_every_command_with_the_token_set(cli, project: Path, tmp_path: Path, caplog,
                                          upstream: Upstream) -> None:
    caplog.set_level(logging.DEBUG)
    for argv in (["verify", "--json"], ["series"], ["lock"], ["fingerprint", "--json"],
                 ["apply", "--into", str(tmp_path / "t")], ["edit", "0001"], ["refresh"],
                 ["export", "--format", "mbox", str(tmp_path / "x")],
                 ["draft-outreach", "--series", "--out", str(tmp_path / "b")],
                 ["upstream-status", "--json"], ["rebase-pin", "--check", "master"]):
        r = cli("-C", str(project), *argv)
        assert r.code in (0, 1, 2), (argv, r.err)
        _nowhere(tmp_path, r, caplog)
