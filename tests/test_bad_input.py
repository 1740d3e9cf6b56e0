"""Each bad input: one clear line (or one finding), the right exit code, nothing written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.builders import Upstream, commit_all, git, make_project


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _verify(cli, project: Path, upstream: Upstream, *extra: str):
    before = _snapshot(project)
    r = cli("-C", str(project), "verify", "--upstream", str(upstream.path), *extra)
    assert _snapshot(project) == before, "verify wrote into the project"
    return r


def _one_line_error(r, code: int, fragment: str) -> None:
    assert r.code == code, (r.code, r.out, r.err)
    assert r.err.startswith("patchctl: error: "), r.err
    assert len(r.err.strip().splitlines()) == 1, r.err
    assert fragment in r.err, r.err
    assert "Traceback" not in r.err + r.out


# -- the series -----------------------------------------------------------------------


def test_series_names_a_missing_file(cli, project, upstream) -> None:
    with (project / "stack/series").open("a") as f:
        f.write("0009-missing.patch\n")
    r = _verify(cli, project, upstream)
    _one_line_error(r, 2, "series names '0009-missing.patch'")


def test_series_duplicate_entry(cli, project, upstream) -> None:
    with (project / "stack/series").open("a") as f:
        f.write("0002-tiny-bump-op-02.patch\n")
    r = _verify(cli, project, upstream)
    _one_line_error(r, 2, "0002-tiny-bump-op-02.patch is listed twice (first on line 3)")


def test_series_unknown_option(cli, project, upstream) -> None:
    series = project / "stack/series"
    series.write_text(series.read_text().replace("0002-tiny-bump-op-02.patch",
                                                 "0002-tiny-bump-op-02.patch -R"))
    r = _verify(cli, project, upstream)
    _one_line_error(r, 2, "unknown option '-R'")


def test_series_strip_level_is_honoured(cli, project, upstream) -> None:
    series = project / "stack/series"
    series.write_text(series.read_text().replace("0002-tiny-bump-op-02.patch",
                                                 "0002-tiny-bump-op-02.patch -p1  # the default"))
    assert _verify(cli, project, upstream).code == 0


# -- patches that cannot be parsed: graded `invalid`, the rest still reported -----------


def _replace_patch(project: Path, name: str, data: bytes) -> None:
    (project / "stack/patches" / name).write_bytes(data)


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"", "the patch is empty"),
        (b"Subject: hello\n\njust prose, no diff\n", "not a diff"),
    ],
)
def test_unparseable_patch(cli, project, upstream, data, fragment) -> None:
    _replace_patch(project, "0002-tiny-bump-op-02.patch", data)
    r = _verify(cli, project, upstream, "--json")
    assert r.code == 1
    p = json.loads(r.out)["patches"][1]
    assert p["grade"] == "invalid"
    assert fragment in p["failure"]["reason"]


def test_truncated_patch(cli, project, upstream) -> None:
    path = project / "stack/patches/0001-util-add-tiny_square.patch"
    text = path.read_text()
    path.write_text(text[: text.index("+{")])  # cut inside the hunk
    r = _verify(cli, project, upstream, "--json")
    assert r.code == 1
    p = json.loads(r.out)["patches"][0]
    assert p["grade"] == "invalid"
    assert "truncated" in p["failure"]["reason"]


def test_binary_patch_needs_declaration(cli, project, upstream) -> None:
    path = project / "stack/patches/0002-tiny-bump-op-02.patch"
    text = path.read_text()
    binary = ("diff --git a/src/logo.bin b/src/logo.bin\nnew file mode 100644\n"
              "index 0000000..1111111\nBinary files /dev/null and b/src/logo.bin differ\n")
    path.write_text(text + binary)
    r = _verify(cli, project, upstream, "--json")
    findings = json.loads(r.out)["patches"][1]["findings"]
    assert r.code == 1
    assert any(f["code"] == "binary" and "src/logo.bin" in f["message"] for f in findings)


def test_crlf_damaged_patch(cli, project, upstream) -> None:
    path = project / "stack/patches/0003-tiny-declare-square.patch"
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    r = _verify(cli, project, upstream, "--json")
    assert r.code == 1
    findings = json.loads(r.out)["patches"][2]["findings"]
    assert [f["code"] for f in findings if f["severity"] == "error"][:1] == ["crlf"]


@pytest.mark.parametrize(
    ("status", "code", "severity"),
    [
        ("Upstream-Status: pending", "upstream-status", "error"),
        ("Upstream-status: Pending", "upstream-status", "error"),
        ("Upstream-Status: Sent upstream", "upstream-status", "error"),
        ("Upstream-Status: Submitted", "upstream-status", "warning"),
        ("Upstream-Status: Submitted [https://github.com/ggml-org/llama.cpp/pull/1]", None, None),
        ("Upstream-Status: Inappropriate [downstream only]", None, None),
        ("Upstream-Status: Backport [abc123]", None, None),
        ("Upstream-Status: Denied", None, None),
    ],
)
def test_upstream_status_vocabulary(cli, project, upstream, status, code, severity) -> None:
    path = project / "stack/patches/0001-util-add-tiny_square.patch"
    path.write_text(path.read_text().replace("Upstream-Status: Pending", status))
    r = _verify(cli, project, upstream, "--json")
    findings = [(f["code"], f["severity"]) for f in json.loads(r.out)["patches"][0]["findings"]]
    if code is None:
        assert findings == [] and r.code == 0
    else:
        assert (code, severity) in findings
        assert r.code == (1 if severity == "error" else 0)


def test_missing_upstream_status(cli, project, upstream) -> None:
    path = project / "stack/patches/0001-util-add-tiny_square.patch"
    path.write_text(path.read_text().replace("Upstream-Status: Pending\n", ""))
    r = _verify(cli, project, upstream)
    assert r.code == 1
    assert "missing `Upstream-Status:` trailer" in r.out


def _raw_patch(path_a: str, path_b: str, scope: str = "**") -> str:
    return ("From: A <a@b.c>\nSubject: [PATCH] x\n\nwhy\n\nConcern: x\n"
            f"Upstream-Status: Pending\nScope: {scope}\n---\n"
            f"diff --git a/{path_a} b/{path_b}\nnew file mode 100644\n--- /dev/null\n"
            f"+++ b/{path_b}\n@@ -0,0 +1 @@\n+hello\n")


@pytest.mark.parametrize("bad", ["../escape.txt", "src/../../escape.txt"])
def test_dotdot_paths(cli, tmp_path, upstream, bad) -> None:
    project = make_project(tmp_path / "p", upstream, [("0001-x.patch", _raw_patch(bad, bad))])
    r = _verify(cli, project, upstream)
    assert r.code == 1
    assert "escapes the tree" in r.out


def test_absolute_path(cli, tmp_path, upstream) -> None:
    text = _raw_patch("x", "x").replace("+++ b/x", "+++ /etc/x").replace("a/x b/x", "/etc/x /etc/x")
    project = make_project(tmp_path / "p", upstream, [("0001-x.patch", text)],
                           series_extra={"0001-x.patch": "-p0"})
    r = _verify(cli, project, upstream)
    assert r.code == 1
    assert "absolute" in r.out


def test_write_through_symlink(cli, tmp_path, upstream) -> None:
    os.symlink("src", upstream.path / "linked")
    pin = commit_all(upstream.path, "add a symlink (#7)")
    text = _raw_patch("linked/new.c", "linked/new.c")
    project = make_project(tmp_path / "p", upstream, [("0001-x.patch", text)], pin=pin)
    for _ in range(2):  # the second run reads parsed patches and the tree's links cached
        r = _verify(cli, project, upstream)
        assert r.code == 1
        assert "writes through the symbolic link linked" in r.out


def test_patch_creating_a_symlink(cli, tmp_path, upstream) -> None:
    text = _raw_patch("evil", "evil").replace("new file mode 100644", "new file mode 120000")
    project = make_project(tmp_path / "p", upstream, [("0001-x.patch", text)])
    r = _verify(cli, project, upstream)
    assert r.code == 1
    assert "creates a symbolic link" in r.out


# -- the pin and the upstream -------------------------------------------------------------


@pytest.mark.parametrize("pin", ["b4500", "df62fb4", "master", "g" * 40])
def test_pin_not_40_hex(cli, project, upstream, pin) -> None:
    pin_file = project / "stack/upstream.toml"
    text = pin_file.read_text()
    old = text.split('commit = "', 1)[1].split('"', 1)[0]
    pin_file.write_text(text.replace(old, pin))
    _one_line_error(_verify(cli, project, upstream), 2, "is not a full 40-hex commit id")


def test_pin_not_in_upstream(cli, project, upstream) -> None:
    pin_file = project / "stack/upstream.toml"
    text = pin_file.read_text()
    old = text.split('commit = "', 1)[1].split('"', 1)[0]
    pin_file.write_text(text.replace(old, "0123456789abcdef0123456789abcdef01234567"))
    _one_line_error(_verify(cli, project, upstream), 2,
                    "pin 0123456789abcdef0123456789abcdef01234567 is not in upstream")


def test_upstream_not_a_git_repository(cli, project, tmp_path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    r = cli("-C", str(project), "verify", "--upstream", str(plain))
    _one_line_error(r, 2, "is not a git repository")
    r = cli("-C", str(project), "verify", "--upstream", str(tmp_path / "absent"))
    _one_line_error(r, 2, "does not exist")


def test_unreadable_patch_file(cli, project, upstream) -> None:
    path = project / "stack/patches/0002-tiny-bump-op-02.patch"
    path.unlink()
    path.mkdir()  # a directory where a file should be: unreadable even for root
    r = _verify(cli, project, upstream)
    _one_line_error(r, 2, "0002-tiny-bump-op-02.patch")


def test_unreadable_pin_file(cli, project, upstream) -> None:
    (project / "stack/upstream.toml").write_bytes(b"\xff\xfe not toml")
    _one_line_error(_verify(cli, project, upstream), 2, "upstream.toml")


def test_no_stack_here(cli, tmp_path) -> None:
    _one_line_error(cli("-C", str(tmp_path), "verify"), 2, "no stack found")


def test_unknown_command_is_usage_error(cli) -> None:
    r = cli("frobnicate")
    assert r.code == 2
    assert "No such command" in r.err


def test_upstream_history_untouched_by_bad_runs(cli, project, upstream, tmp_path) -> None:
    """Bad runs never write into the upstream: refs, HEAD, objects and work tree stay.

    Regression: this test ran `verify --strict` on a good stack, so it tested no bad run.
    """
    def state() -> tuple[str, ...]:
        return (git(upstream.path, "for-each-ref"), git(upstream.path, "rev-parse", "HEAD"),
                git(upstream.path, "count-objects", "-v"),
                git(upstream.path, "status", "--porcelain", "--ignored"))

    before = state()
    bad = project / "stack/patches/0002-tiny-bump-op-02.patch"
    bad.write_text(bad.read_text().replace("/* step 2: keep", "/* step 2: lost"))  # no fit
    up = ("--upstream", str(upstream.path))
    runs = [cli("-C", str(project), "verify", *up, "--strict"),
            cli("-C", str(project), "apply", "--into", str(tmp_path / "tree"), *up),
            cli("-C", str(project), "edit", "0003", *up),
            cli("-C", str(project), "rebase-pin", "--check", "no-such-ref", *up),
            cli("-C", str(project), "import", str(bad), *up)]
    # edit: a patch that does not apply is bad input (2), named in one line
    assert [r.code for r in runs] == [1, 2, 2, 2, 2], [(r.code, r.err) for r in runs]
    assert all("Traceback" not in r.err for r in runs)
    assert state() == before
