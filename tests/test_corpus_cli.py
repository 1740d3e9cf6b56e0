"""Corpus: hostile command-line arguments, upstream repositories and HTTP answers.

Arguments: each case is an argv (``{P}`` the project, ``{T}`` a scratch dir, ``{C}`` a
canary path that must never be created) with its exit code and error fragment; a
refused command leaves the stack as it was. Upstreams: not a repo, empty, shallow,
partial, missing the pin, a corrupt object, unreachable or stalled URLs (fail fast).
HTTP: GitHub answers of every odd shape, each a state or an error per reference.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

from tests.builders import Upstream, git, make_project
from tests.corpus import ENVIRONMENT, FINDINGS, OK, USAGE, Case, check, params, tree_digest
from tests.github_server import github_server
from tests.test_upstream_status import _online_env

ARGS = [Case(i, argv, code, frag) for i, argv, code, frag in [
    ("no-command", [], (OK, USAGE), ""),
    ("unknown-command", ["frobnicate"], USAGE, "No such command"),
    ("unknown-option", ["verify", "--frob"], USAGE, "No such option"),
    ("project-missing", ["-C", "{T}/absent", "verify"], USAGE, ""),
    ("project-is-a-file", ["-C", "{P}/stack/series", "verify"], USAGE, ""),
    ("upstream-empty-string", ["verify", "--upstream", ""], USAGE, ""),
    ("upstream-option-like", ["verify", "--upstream", "--output={C}"], USAGE, ""),
    ("upstream-ext-transport", ["verify", "--upstream", "ext::sh -c touch% {C}"], (USAGE, 3), ""),
    ("upstream-file-url", ["verify", "--upstream", "file:///nonexistent/repo"], (USAGE, 3), ""),
    ("rebase-option-ref", ["rebase-pin", "--check", "--", "--upload-pack=touch {C}"], USAGE, ""),
    ("rebase-output-ref", ["rebase-pin", "--check", "--", "--output={C}"], USAGE, ""),
    ("rebase-unknown-ref", ["rebase-pin", "--check", "no-such-ref"], USAGE, "no-such-ref"),
    ("rebase-range-ref", ["rebase-pin", "--check", "HEAD..HEAD~1"], USAGE, ""),
    ("rebase-no-ref", ["rebase-pin"], USAGE, ""),
    ("rebase-continue-none", ["rebase-pin", "--continue"], USAGE, "no rebase-pin in progress"),
    ("rebase-abort-none", ["rebase-pin", "--abort"], (OK, USAGE), ""),
    ("rebase-continue-abort", ["rebase-pin", "--continue", "--abort"], USAGE, ""),
    ("import-missing-file", ["import", "{T}/absent.patch"], USAGE, "absent.patch"),
    ("import-empty-dir", ["import", "{T}"], USAGE, ""),
    ("import-dev-null", ["import", "/dev/null"], USAGE, ""),
    ("import-range-option", ["import", "--from-repo", "{U}", "--", "--output={C}"], USAGE, ""),
    ("import-range-bad", ["import", "--from-repo", "{U}", "nope..nope"], USAGE, ""),
    ("import-from-repo-not-repo", ["import", "--from-repo", "{T}", "HEAD~1..HEAD"], USAGE, ""),
    ("new-dotdot", ["new", "0009-../../escape", "--concern", "c", "--scope", "x"], USAGE,
     "leaves patches/"),
    ("new-absolute", ["new", "/tmp/escape", "--concern", "c", "--scope", "x"], USAGE,
     "leaves patches/"),
    ("new-slash", ["new", "a/b", "--concern", "c", "--scope", "x"], USAGE, "not a path"),
    ("new-empty", ["new", "", "--concern", "c", "--scope", "x"], (OK, USAGE), ""),
    ("new-no-scope", ["new", "x", "--concern", "c"], USAGE, "scope"),
    ("edit-unknown", ["edit", "nope"], USAGE, "nope"),
    ("edit-option-like", ["edit", "--", "--help"], USAGE, ""),
    ("edit-number-out-of-range", ["edit", "99"], USAGE, ""),
    # a number is a file's number, `@N` a position; nothing else is guessed
    ("edit-position-out-of-range", ["edit", "@99"], USAGE, "positions 1 to 3"),
    ("edit-position-zero", ["edit", "@0"], USAGE, "positions 1 to 3"),
    ("edit-position-huge", ["edit", "@" + "9" * 5000], USAGE, "positions 1 to 3"),
    ("edit-number-huge", ["edit", "9" * 5000], USAGE, "carries the number"),
    ("edit-at-alone", ["edit", "@"], USAGE, "no patch named"),
    ("edit-position-negative", ["edit", "@-1"], USAGE, "no patch named"),
    ("delete-non-ascii-digit", ["delete", "\u0663"], USAGE, "no patch named"),
    ("delete-number-no-file-has", ["delete", "4"], USAGE, "carries the number 4"),
    ("refresh-nothing", ["refresh"], USAGE, "nothing to refresh"),
    ("export-into-stack", ["export", "--format", "quilt", "{P}/stack", "--force"], USAGE, ""),
    ("export-into-project", ["export", "--format", "quilt", "{P}", "--force"], USAGE, ""),
    ("export-to-a-file", ["export", "--format", "mbox", "{P}/stack/series"], USAGE, ""),
    ("export-bad-format", ["export", "--format", "zip", "{T}/x"], USAGE, ""),
    # the upstream form has the same DIR protections as the others
    ("export-upstream-into-stack", ["export", "--format", "upstream", "{P}/stack", "--force"],
     USAGE, ""),
    ("export-upstream-into-patches", ["export", "--format", "upstream", "{P}/stack/patches",
                                      "--force"], USAGE, ""),
    ("export-upstream-into-project", ["export", "--format", "upstream", "{P}", "--force"],
     USAGE, ""),
    ("export-upstream-to-a-file", ["export", "--format", "upstream", "{P}/stack/series"],
     USAGE, ""),
    ("apply-into-project", ["apply", "--into", "{P}", "--force"], USAGE, ""),
    ("apply-into-stack", ["apply", "--into", "{P}/stack", "--force"], USAGE, ""),
    ("apply-into-upstream", ["apply", "--into", "{U}", "--force"], USAGE, ""),
    ("apply-into-a-file", ["apply", "--into", "{P}/stack/series"], USAGE, ""),
    ("apply-into-root", ["apply", "--into", "/", "--force"], USAGE, ""),
    ("apply-exclude-touched", ["apply", "--into", "{T}/o", "--exclude", "src/*"], USAGE,
     "--exclude"),
    ("apply-exclude-reversed", ["apply", "--into", "{T}/o", "--exclude", "[z-a]"], USAGE,
     "--exclude: glob `[z-a]`: the range"),
    ("apply-exclude-unclosed", ["apply", "--into", "{T}/o", "--exclude", "models/[*.gguf"],
     USAGE, "--exclude: glob `models/[*.gguf`"),
    ("split-paths-unclosed", ["split", "1", "--paths", "src/[]"], USAGE,
     "--paths: glob `src/[]`: the `[` at character 5 is not closed"),
    ("split-paths-reversed", ["split", "1", "--paths", "src/[z-a].c"], USAGE,
     "--paths: glob `src/[z-a].c`: the range `z-a` is reversed"),
    ("split-paths-star-run", ["split", "1", "--paths", "*" * 40 + "x"], USAGE, "match no file"),
    ("new-scope-unclosed", ["new", "x", "--concern", "c", "--scope", "src/["], USAGE,
     "--scope: glob `src/[`"),
    ("reproduce-exclude-reversed", ["reproduce", "--exclude", "[z-a]"], USAGE,
     "--exclude: glob `[z-a]`"),
    ("verify-junit-into-dir", ["verify", "--junit", "{P}/stack"], (USAGE, ENVIRONMENT), ""),
    ("verify-format-bad", ["verify", "--format", "xml"], USAGE, ""),
    ("outreach-unknown-patch", ["draft-outreach", "nope"], USAGE, "nope"),
    ("outreach-out-is-stack", ["draft-outreach", "--series", "--out", "{P}/stack"], USAGE,
     "would replace the stack"),
    ("outreach-out-is-project", ["draft-outreach", "--series", "--out", "{P}"], USAGE,
     "would replace the project"),
    # --out deleted files it never wrote, --handoff overwrote stack/series
    ("outreach-out-inside-stack", ["draft-outreach", "--series", "--out", "{P}/stack/patches"],
     USAGE, "inside the stack"),
    ("outreach-out-new-inside-stack", ["draft-outreach", "--series", "--out",
                                       "{P}/stack/briefs"], USAGE, "inside the stack"),
    ("outreach-out-not-a-brief-folder", ["draft-outreach", "--series", "--out", "{U}"], USAGE,
     "draft-outreach did not write"),
    ("outreach-handoff-into-stack", ["draft-outreach", "--series", "--out", "{T}/b",
                                     "--handoff", "{P}/stack/series"], USAGE, "inside the stack"),
    ("outreach-handoff-over-a-file", ["draft-outreach", "--series", "--out", "{T}/b",
                                      "--handoff", "{U}/README.md"], USAGE,
     "draft-outreach did not write it"),
    ("outreach-onto-option", ["draft-outreach", "--series", "--onto", "--output={C}"], USAGE, ""),
    ("status-ref-option", ["upstream-status", "--ref", "--output={C}"], USAGE, ""),
    ("status-ref-unknown", ["upstream-status", "--ref", "nope"], USAGE, "nope"),
    ("record-no-command", ["record", "--name", "x"], USAGE, ""),
    ("record-name-escape", ["record", "--name", "../../escape", "--", "true"], USAGE, ""),
    ("record-missing-binary", ["record", "--name", "x", "--", "/nonexistent/bin"],
     (FINDINGS, USAGE, ENVIRONMENT), ""),
    ("init-over-existing", ["init", "--upstream", "{U}", "--pin", "master"], USAGE, ""),
    ("init-pin-option", ["init", "--upstream", "{U}", "--pin", "--output={C}"], USAGE, ""),
    ("fingerprint-both", ["fingerprint", "--json", "--cmake"], (OK, USAGE), ""),
    ("lock-extra-arg", ["lock", "extra"], USAGE, ""),
    ("series-nul-arg", ["series", "x\x00y"], USAGE, ""),
    # Values that would add a header, a trailer or a diff line
    ("header-message-diff", ["header", "1", "-m", "Why.\n\nConcern: c\nScope: **\n---\n"
                             "diff --git a/README.md b/README.md\n--- a/README.md\n"
                             "+++ b/README.md\n@@ -1 +1,2 @@\n x\n+injected"], USAGE,
     "start a diff"),
    ("header-message-escape", ["header", "1", "-m", "Why.\x1b[2J"], USAGE, "control character"),
    ("header-set-newline", ["header", "1", "--set", "Bug=1\nScope: **"], USAGE, "one line"),
    ("header-unset-newline", ["header", "1", "--unset", "Bug\nScope"], USAGE, "trailer key"),
    ("new-concern-newline", ["new", "x", "--concern", "c\nScope: **", "--scope", "x"], USAGE,
     "--concern"),
    ("new-subject-newline", ["new", "x", "--concern", "c", "--scope", "x", "--subject",
                             "s\n\nScope: **"], USAGE, "--subject"),
    ("new-assisted-newline", ["new", "x", "--concern", "c", "--scope", "x", "--assisted-by",
                              "t\nScope: **"], USAGE, "--assisted-by"),
    ("new-scope-newline", ["new", "x", "--concern", "c", "--scope", "x\nConcern: y"], USAGE,
     "--scope"),
    ("new-message-dashes", ["new", "x", "--concern", "c", "--scope", "x", "-m", "a\n---\nb"],
     USAGE, "--message"),
    ("new-trailer-cr", ["new", "x", "--concern", "c", "--scope", "x", "--trailer",
                        "Bug=1\rScope: **"], USAGE, "--trailer"),
    ("split-concern-newline", ["split", "1", "--paths", "x", "--concern", "b\nScope: **"], USAGE,
     "--concern"),
    ("split-subject-newline", ["split", "1", "--paths", "x", "--subject", "b\nScope: **"], USAGE,
     "--subject"),
    ("import-concern-newline", ["import", "{T}/absent.patch", "--concern", "c\nScope: **"],
     USAGE, "--concern"),
]]


@params(ARGS)
def test_argument_corpus(cli, case: Case, tmp_path: Path, project: Path,
                         upstream: Upstream) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    canary = tmp_path / "canary"
    argv = [a.replace("{P}", str(project)).replace("{T}", str(scratch))
            .replace("{C}", str(canary)).replace("{U}", str(upstream.path)) for a in case.data]
    if argv and argv[0] != "-C" and case.id != "no-command":
        argv = ["-C", str(project), *argv]
    before = tree_digest(project, skip=(".patchctl",))
    up_before = git(upstream.path, "for-each-ref") + git(upstream.path, "status", "--short")
    check(cli(*argv), case)
    assert not canary.exists(), "an argument reached a command as an option"
    if case.id not in ("record-missing-binary",):
        assert tree_digest(project, skip=(".patchctl", "evidence")) == \
            {k: v for k, v in before.items() if not k.startswith("evidence")}
    assert git(upstream.path, "for-each-ref") + git(upstream.path, "status", "--short") == \
        up_before, "the upstream was modified"


# -- upstream repositories ----------------------------------------------------------------


def _plain_dir(tmp: Path, up: Upstream) -> str:
    (tmp / "plain").mkdir()
    return str(tmp / "plain")


def _empty_repo(tmp: Path, up: Upstream) -> str:
    git(tmp, "init", "-q", "empty")
    return str(tmp / "empty")


def _shallow(tmp: Path, up: Upstream) -> str:
    (up.path / "later.txt").write_text("after the pin\n")
    git(up.path, "add", "later.txt")
    git(up.path, "commit", "-qm", "later")
    git(tmp, "clone", "-q", "--depth", "1", f"file://{up.path}", "shallow")
    return str(tmp / "shallow")


def _shallow_with_pin(tmp: Path, up: Upstream) -> str:
    git(tmp, "clone", "-q", "--depth", "1", "--branch", "master", f"file://{up.path}", "sh")
    return str(tmp / "sh")


def _partial(tmp: Path, up: Upstream) -> str:
    git(tmp, "clone", "-q", "--bare", "--filter=blob:none", f"file://{up.path}", "partial.git")
    return str(tmp / "partial.git")


def _partial_offline(tmp: Path, up: Upstream) -> str:
    """A blobless clone whose promisor remote has gone: blobs cannot be fetched."""
    path = _partial(tmp, up)
    git(Path(path), "remote", "set-url", "origin", str(tmp / "gone"))
    return path


def _missing_pin(tmp: Path, up: Upstream) -> str:
    git(tmp, "init", "-q", "other")
    (tmp / "other/f").write_text("x\n")
    git(tmp / "other", "add", "f")
    git(tmp / "other", "commit", "-qm", "x")
    return str(tmp / "other")


def _corrupt_object(tmp: Path, up: Upstream) -> str:
    dest = tmp / "corrupt"
    shutil.copytree(up.path, dest, symlinks=True)
    blob = git(dest, "rev-parse", f"{up.commits['base']}:src/util.c").strip()
    obj = dest / ".git/objects" / blob[:2] / blob[2:]
    obj.chmod(0o644)
    obj.write_bytes(b"garbage, not zlib")
    return str(dest)


def _missing_object(tmp: Path, up: Upstream) -> str:
    dest = tmp / "missing"
    shutil.copytree(up.path, dest, symlinks=True)
    blob = git(dest, "rev-parse", f"{up.commits['base']}:src/tiny.c").strip()
    (dest / ".git/objects" / blob[:2] / blob[2:]).unlink()
    return str(dest)


def _not_a_bundle(tmp: Path, up: Upstream) -> str:
    (tmp / "x.bundle").write_bytes(b"# v2 git bundle\ngarbage\n")
    return str(tmp / "x.bundle")


def _bundle_without_pin(tmp: Path, up: Upstream) -> str:
    git(Path(_missing_pin(tmp, up)), "bundle", "create", str(tmp / "o.bundle"), "--all")
    return str(tmp / "o.bundle")


def _closed_port(tmp: Path, up: Upstream) -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}/up.git"


def _git_closed_port(tmp: Path, up: Upstream) -> str:
    return _closed_port(tmp, up).replace("http://", "git://")


def _dev_null(tmp: Path, up: Upstream) -> str:
    return "/dev/null"


def _symlink_loop(tmp: Path, up: Upstream) -> str:
    (tmp / "loop").symlink_to(tmp / "loop")
    return str(tmp / "loop")


UPSTREAMS = [Case(i, fn, code, frag) for i, fn, code, frag in [
    ("not-a-repo", _plain_dir, USAGE, "not a git repository"),
    ("empty-repo", _empty_repo, USAGE, "not in upstream"),
    ("shallow-without-pin", _shallow, (USAGE, ENVIRONMENT), ""),
    ("shallow-at-pin", _shallow_with_pin, (OK, USAGE, ENVIRONMENT), ""),
    ("partial-blobless", _partial, OK, ""),
    # Missing or corrupt objects are reported as the patch that needed them failing, with
    # git's reason (verify: a finding; apply and edit: one line).
    ("partial-promisor-gone", _partial_offline, (FINDINGS, USAGE, ENVIRONMENT), ""),
    ("missing-pin", _missing_pin, USAGE, "not in upstream"),
    ("corrupt-object", _corrupt_object, FINDINGS, ""),
    ("missing-object", _missing_object, FINDINGS, ""),
    ("not-a-bundle", _not_a_bundle, USAGE, ""),
    ("bundle-without-pin", _bundle_without_pin, USAGE, "not in upstream"),
    ("unreachable-http", _closed_port, ENVIRONMENT, ""),
    ("unreachable-git", _git_closed_port, ENVIRONMENT, ""),
    ("dev-null", _dev_null, USAGE, ""),
    ("symlink-loop", _symlink_loop, (USAGE, ENVIRONMENT), ""),
]]


@params(UPSTREAMS)
def test_upstream_corpus(cli, case: Case, tmp_path: Path, project: Path, upstream: Upstream,
                         monkeypatch) -> None:
    """verify, apply and edit against a bad upstream: one line, fast, nothing written."""
    monkeypatch.setenv("PATCHCTL_CACHE_DIR", str(tmp_path / "cache"))
    spec = case.data(tmp_path, upstream)
    before = tree_digest(project / "stack")
    started = time.monotonic()
    check(cli("-C", str(project), "verify", "--upstream", spec), case)
    r = cli("-C", str(project), "apply", "--into", str(tmp_path / "out"), "--upstream", spec)
    check(r, case.code if case.code != FINDINGS else (USAGE, ENVIRONMENT))
    if r.code != OK:
        assert not (tmp_path / "out").exists()
    check(cli("-C", str(project), "edit", "0001", "--upstream", spec), (OK, USAGE, ENVIRONMENT))
    assert time.monotonic() - started < 60, "a bad upstream must fail fast"
    assert tree_digest(project / "stack") == before


def test_a_stalled_server_fails_fast(cli, tmp_path: Path, project: Path, monkeypatch) -> None:
    """A git:// server that accepts and never answers: the network timeout ends the fetch."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                held.append(server.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    monkeypatch.setenv("PATCHCTL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PATCHCTL_NETWORK_TIMEOUT", "3")
    try:
        started = time.monotonic()
        r = cli("-C", str(project), "verify", "--upstream",
                f"git://127.0.0.1:{server.getsockname()[1]}/up.git")
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        thread.join()
        for s in held:
            s.close()
        server.close()
    check(r, ENVIRONMENT)
    assert elapsed < 30, elapsed


# -- HTTP answers (upstream-status --online) ----------------------------------------------


TOKEN = "ghp_CORPUSSECRET0123456789abcdefABCDEF"

# path number -> (status, headers, body)
HTTP = [Case(i, answer, OK, frag) for i, answer, frag in [
    ("ok", (200, {}, {"state": "open", "title": "t"}), "open"),
    ("merged", (200, {}, {"state": "closed", "pull_request": {"merged_at": "2026-01-01"}}),
     "merged"),
    ("not-json", (200, {}, b"<html>hello</html>"), "malformed"),
    ("json-list", (200, {}, [1, 2, 3]), "malformed"),
    ("json-string", (200, {}, "open"), "malformed"),
    ("json-null", (200, {}, None), "malformed"),
    ("no-state", (200, {}, {"title": "t"}), "malformed"),
    ("state-object", (200, {}, {"state": {"a": 1}}), ""),
    ("pull-request-string", (200, {}, {"state": "open", "pull_request": "x"}), "malformed"),
    ("title-huge", (200, {}, {"state": "open", "title": "t" * 1_000_000}), ""),
    ("title-escapes", (200, {}, {"state": "open", "title": "\x1b[2J\x1b]0;pwned\x07\r\n"}), ""),
    ("empty-body", (200, {}, b""), "malformed"),
    ("truncated", (200, {"Content-Length": "100"}, b'{"state": "op'), ""),
    ("gzip-lie", (200, {"Content-Encoding": "gzip"}, b"not gzip"), ""),
    ("status-204", (204, {}, b""), ""),
    ("status-301-loop", (301, {"Location": "/repos/o/r/issues/1"}, b""), ""),
    ("status-401", (401, {}, {"message": "Bad credentials"}), "HTTP 401"),
    ("status-403", (403, {}, {"message": "Forbidden"}), "HTTP 403"),
    ("status-404", (404, {}, {"message": "Not Found"}), "not found"),
    ("status-418", (418, {}, b""), "HTTP 418"),
    ("status-500", (500, {}, b""), "HTTP 500"),
    ("status-503-retry-after-text", (503, {"Retry-After": "soon"}, b""), "HTTP 503"),
    ("rate-limit-reset-huge", (403, {"X-RateLimit-Remaining": "0",
                                     "X-RateLimit-Reset": "99999999999999999999"}, b""), ""),
    ("rate-limit-reset-text", (403, {"X-RateLimit-Remaining": "0",
                                     "X-RateLimit-Reset": "tomorrow"}, b""), ""),
    ("retry-after-huge", (429, {"Retry-After": "99999999999"}, b""), "rate limited"),
    ("retry-after-negative", (429, {"Retry-After": "-5"}, b""), ""),
    ("token-echoed", (500, {}, {"message": f"bad token {TOKEN}"}), ""),
    ("token-in-title", (200, {}, {"state": "open", "title": f"leak {TOKEN}"}), ""),
]]


def online_env(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    _online_env(monkeypatch, url)
    monkeypatch.setenv("PATCHCTL_GITHUB_TIMEOUT", "2")  # a truncated body waits this long
    monkeypatch.setenv("PATCHCTL_GITHUB_RETRIES", "1")
    monkeypatch.setenv("PATCHCTL_GITHUB_MAX_WAIT", "1")
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)


@pytest.fixture
def referencing(tmp_path: Path, upstream: Upstream, patches) -> Path:
    name, text = patches[0]
    text = text.replace("Scope: src/util.c\n", "Scope: src/util.c\nBug: o/r#1\n")
    return make_project(tmp_path / "refs", upstream, [(name, text)])


@params(HTTP)
def test_http_answer_corpus(cli, case: Case, referencing: Path, monkeypatch) -> None:
    with github_server(answer=case.data) as server:
        online_env(monkeypatch, f"http://127.0.0.1:{server.server_port}")
        started = time.monotonic()
        r = cli("-C", str(referencing), "upstream-status", "--online", "--json")
        text = cli("-C", str(referencing), "upstream-status", "--online")
    check(r, case.code)
    check(text, case.code, case.fragment)
    assert time.monotonic() - started < 30
    online = json.loads(r.out)["patches"][0]["online"]
    assert [o["ref"] for o in online] == ["o/r#1"]
    assert ("state" in online[0]) != ("error" in online[0] and "state" not in online[0])
    assert "\x1b" not in text.out, "a terminal escape from the network reached the terminal"
    assert TOKEN not in r.out + r.err + text.out + text.err
    for path in referencing.rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path


@pytest.mark.parametrize(("var", "value"), [
    ("PATCHCTL_GITHUB_TIMEOUT", "soon"), ("PATCHCTL_GITHUB_RETRIES", "-1"),
    ("PATCHCTL_GITHUB_RETRIES", "many"), ("PATCHCTL_GITHUB_BACKOFF", "x"),
    ("PATCHCTL_GITHUB_MAX_WAIT", "nan"), ("PATCHCTL_GITHUB_API", "not a url"),
    ("PATCHCTL_NETWORK_TIMEOUT", "fast"),
])
def test_bad_settings_in_the_environment(cli, referencing: Path, monkeypatch, var,
                                         value) -> None:
    online_env(monkeypatch, "http://127.0.0.1:9")
    monkeypatch.setenv("PATCHCTL_GITHUB_RETRIES", "0")
    monkeypatch.setenv(var, value)
    check(cli("-C", str(referencing), "upstream-status", "--online"), (OK, USAGE), "")


@pytest.mark.parametrize("cache", [b"{", b"[]", b'{"schema": "patchctl.github-cache/1", '
                                   b'"answers": []}', b'{"schema": "patchctl.github-cache/1", '
                                   b'"answers": {"o/r#1": 5}}', b"\xff\xfe",
                                   b'{"schema": "patchctl.github-cache/1", "answers": {"o/r#1": '
                                   b'{"state": "open", "fetched_at": "yesterday"}}}'])
def test_damaged_github_cache(cli, referencing: Path, monkeypatch, cache: bytes) -> None:
    online_env(monkeypatch, "http://127.0.0.1:9")
    path = referencing / ".patchctl/github-cache.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(cache)
    check(cli("-C", str(referencing), "upstream-status"), (OK, USAGE))


# -- the bugs this corpus found, one named test each ------------------------------------------

_HTTP = {c.id: c for c in HTTP}


def test_a_rate_limit_reset_past_time_t(cli, referencing: Path, monkeypatch) -> None:
    """Bug: X-RateLimit-Reset beyond what time_t holds ended upstream-status --online in an
    OverflowError traceback."""
    test_http_answer_corpus(cli, _HTTP["rate-limit-reset-huge"], referencing, monkeypatch)


def test_a_token_echoed_by_the_server_is_scrubbed(cli, referencing: Path, monkeypatch) -> None:
    """Bug: a server that echoed GITHUB_TOKEN in an issue title got it printed and cached."""
    test_http_answer_corpus(cli, _HTTP["token-in-title"], referencing, monkeypatch)


def test_a_setting_that_is_not_a_number(cli, referencing: Path, monkeypatch) -> None:
    """Bug: PATCHCTL_GITHUB_TIMEOUT=soon (or RETRIES/BACKOFF not numbers) ended in a
    ValueError traceback; now one line naming the variable, exit 2."""
    online_env(monkeypatch, "http://127.0.0.1:9")
    monkeypatch.setenv("PATCHCTL_GITHUB_TIMEOUT", "soon")
    check(cli("-C", str(referencing), "upstream-status", "--online"), USAGE,
          "PATCHCTL_GITHUB_TIMEOUT='soon' is not a number")


def test_a_damaged_cache_entry_is_dropped(cli, referencing: Path, monkeypatch) -> None:
    """Bug: a cache entry that is not a dict, or whose fetched_at is no ISO time, ended the
    offline report in a TypeError/ValueError traceback."""
    for entry in (b"5", b'{"state": "open", "fetched_at": "yesterday"}',
                  b'{"state": "open", "fetched_at": "2026-01-01T00:00:00"}'):
        test_damaged_github_cache(cli, referencing, monkeypatch,
                                  b'{"schema": "patchctl.github-cache/1", "answers": '
                                  b'{"o/r#1": ' + entry + b"}}")


def test_briefs_never_replace_the_stack(cli, tmp_path: Path, project: Path,
                                        upstream: Upstream) -> None:
    """Bug: `draft-outreach --out stack` (or the project) swapped a copy of that directory,
    briefs added, in place of it: the stack gained .md files and a MANIFEST.json."""
    for case in ARGS:
        if case.id.startswith("outreach-out-is-"):
            (tmp_path / case.id).mkdir()
            test_argument_corpus(cli, case, tmp_path / case.id, project, upstream)
