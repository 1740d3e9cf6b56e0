"""Corpus: text from a server or an upstream, which must reach no terminal, report or brief raw.

Each hostile string (a newline or a Unicode line break that forges a row, terminal
escapes (OSC, CSI, the one-byte C1 CSI), a bare carriage return, bidi overrides and
isolates, NUL, DEL, backspace) goes where patchctl takes text it does not control:

- every text field of a GitHub answer (upstream-status --online): the text report must
  show it escaped, on its own row; --json and the cache keep it exact (JSON escapes it);
- an upstream's commit subjects and author names, the lines of its policy files, its
  pull request template, issue forms and CODEOWNERS (upstream-status --ref, rebase-pin --check,
  draft-outreach to stdout, as JSON and into files): no output holds it raw.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import cast

import pytest

from tests.builders import (
    Upstream,
    commit_all,
    git,
    make_project,
    make_upstream,
    replace_in,
    system_config_off,
    write,
)
from tests.corpus import Case, check, params
from tests.github_server import OPEN_ISSUE, github_server
from tests.outreach_helpers import EDITORCONFIG, ENHANCEMENT_FORM, FORBIDS, TEMPLATE, api_patch
from tests.test_upstream_status import _online_env

# the test's own oracle, not untrusted.py's: any C0 but tab and newline, DEL, C1, and the
# Unicode line breaks, bidi overrides and isolates
RAW = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")

SERVER_TEXT = [Case(i, text, 0) for i, text in [
    ("newline-row", "open\n| FORGED | row |"),
    ("crlf-row", "open\r\nFORGED row"),
    ("cr-overwrite", "closed\rmerged"),
    ("osc-title", "open\x1b]0;pwned\x07"),
    ("osc-st", "open\x1b]8;;https://evil.invalid\x1b\\link\x1b]8;;\x1b\\"),
    ("csi-clear", "\x1b[2J\x1b[Hopen"),
    ("c1-csi", "open\x9b2J\x9d0;pwned\x9c"),
    ("bidi-override", "open\u202eDEGROF\u202c"),
    ("bidi-isolate", "\u2066open\u2069"),
    ("nul-del-backspace", "opem\x08n\x00\x7f"),
    ("line-separators", "open\u2028FORGED\u2029FORGED\x85FORGED"),
    ("vt-ff-fs", "open\x0bFORGED\x0cFORGED\x1cFORGED"),
]]


def _raw(text: str) -> list[str]:
    return RAW.findall(text)


def _forged(text: str) -> bool:
    """A row of its own starting with what the server sent after a line break."""
    return any(line.lstrip("| ").startswith(("FORGED", "merged")) for line in text.split("\n"))


@pytest.fixture
def referencing(tmp_path: Path, upstream: Upstream, patches) -> Path:
    name, text = patches[0]
    text = text.replace("Scope: src/util.c\n", "Scope: src/util.c\nBug: o/r#1\n")
    return make_project(tmp_path / "refs", upstream, [(name, text)])


@params(SERVER_TEXT)
def test_server_text_corpus(cli, case: Case, referencing: Path, monkeypatch) -> None:
    hostile = str(case.data)
    answer = {**OPEN_ISSUE, "state": hostile, "title": hostile, "updated_at": hostile,
              "html_url": hostile}
    with github_server(answer=(200, {}, answer)) as server:
        _online_env(monkeypatch, f"http://127.0.0.1:{server.server_port}")
        text = cli("-C", str(referencing), "upstream-status", "--online")
        data = cli("-C", str(referencing), "upstream-status", "--online", "--json")
    offline = cli("-C", str(referencing), "upstream-status")
    for r in (text, data, offline):
        check(r, case.code)
        assert _raw(r.out + r.err) == [], "a control character from the server came out raw"
    for r in (text, offline):
        assert not _forged(r.out), r.out
        assert sum(ln.lstrip().startswith("o/r#1: issue ") for ln in r.out.split("\n")) == 1
    [online] = json.loads(data.out)["patches"][0]["online"]
    assert [online[k] for k in ("state", "title", "updated_at", "url")] == [hostile] * 4
    cache = json.loads((referencing / ".patchctl/github-cache.json").read_text())
    assert cache["answers"]["o/r#1"]["state"] == hostile


# -- text from the upstream repository --------------------------------------------------------

GIT_TEXT = "\x1b]0;pwned\x07\x1b[2J\x9b2J\u202eevil\u2066x\u2069\x0cy\x1cz\x7f"
HOSTILE_AUTHOR = {"GIT_AUTHOR_NAME": f"Mallory{GIT_TEXT}Dev"}


def _hostile_upstream(path: Path) -> Upstream:
    """The tiny upstream plus policy files whose lines, a commit subject and an author name
    hold GIT_TEXT (the pin, ``commits['policy']``), then a commit (subject GIT_TEXT) that
    breaks the patch of ``api_patch``."""
    up = make_upstream(path)
    contributing = FORBIDS.replace("not a PR.", f"not a PR.{GIT_TEXT}")
    template = TEMPLATE.replace("How did you test it?", f"How did you test it?{GIT_TEXT}")
    owners = f"# tiny-org/core : alice{GIT_TEXT}\n/src/ @carol{GIT_TEXT}\n*.h @tiny-org/core\n"
    form = ENHANCEMENT_FORM.replace("Enhancement", f"Enhancement{GIT_TEXT}").replace(
        "strictly prohibited.", f"strictly prohibited.{GIT_TEXT}")  # forms are read
    write(path, {"CONTRIBUTING.md": contributing, ".editorconfig": EDITORCONFIG,
                 "CODEOWNERS": owners, ".github/pull_request_template.md": template,
                 ".github/ISSUE_TEMPLATE/020-enhancement.yml": form})
    replace_in(path / "src/util.c", "int tiny_abs(int v)", "/* abs */\nint tiny_abs(int v)")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", f"docs : policy{GIT_TEXT}", env=HOSTILE_AUTHOR)
    up.commits["policy"] = git(path, "rev-parse", "HEAD").strip()
    replace_in(path / "src/util.c", "/* abs */\nint tiny_abs(int v)",
               "int tiny_cube(int v)\n{\n    return v * v * v + 0;\n}\n\nint tiny_abs(int v)")
    commit_all(path, f"util : cube{GIT_TEXT}")
    return up


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Upstream]:
    root = tmp_path_factory.mktemp("hostile")
    with system_config_off():
        up = _hostile_upstream(root / "up")
        patch = api_patch(up, root / "scratch")
    project = make_project(root / "proj", up, [("0001-tiny-add-tiny_cube.patch", patch)],
                           pin=up.commits["policy"])
    return project, up


UPSTREAM_TEXT = [Case(i, argv, codes) for i, argv, codes in [
    ("upstream-status-ref", ["upstream-status", "--ref", "master"], 0),
    ("upstream-status-ref-json", ["upstream-status", "--ref", "master", "--json"], 0),
    ("rebase-pin-check", ["rebase-pin", "--check", "master"], 1),
    ("draft-outreach", ["draft-outreach"], 0),
    ("draft-outreach-json", ["draft-outreach", "--json"], 0),
    ("draft-outreach-out", ["draft-outreach", "--series", "--out", "{T}/briefs"], 0),
]]


@params(UPSTREAM_TEXT)
def test_upstream_text_corpus(cli, case: Case, hostile: tuple[Path, Upstream],
                              tmp_path: Path) -> None:
    project, up = hostile
    argv = [a.replace("{T}", str(tmp_path)) for a in cast(list[str], case.data)]
    r = cli("-C", str(project), *argv, "--upstream", str(up.path))
    check(r, case.code)
    written = "".join(p.read_text() for p in sorted(tmp_path.rglob("*")) if p.is_file())
    assert _raw(r.out + r.err + written) == [], "upstream text came out raw"
    assert "pwned" in r.out + written  # shown, escaped: not dropped
