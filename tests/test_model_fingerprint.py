"""The fingerprint (pcfp2) and the one test of whether a lock is current."""

from __future__ import annotations

from pathlib import Path

from patchctl.model.fingerprint import ALGORITHM, fingerprint
from patchctl.model.patchfile import parse_patch
from tests.builders import git

HEADER = ("From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
          "From: A <a@example.invalid>\nSubject: [PATCH] add blob\n\n"
          "Concern: blob\nUpstream-Status: Pending\nScope: data/*\nBinary: data/*\n---\n")


def _diff(tmp_path: Path, name: str, data: bytes, mode: str = "100644") -> str:
    repo = tmp_path / name
    git(tmp_path, "init", "-q", str(repo))
    (repo / "data").mkdir()
    (repo / "data/blob.bin").write_bytes(data)
    git(repo, "add", "data/blob.bin")
    if mode != "100644":
        git(repo, "update-index", "--chmod=+x", "data/blob.bin")
    return git(repo, "diff", "--cached", "--binary", "--full-index")


def _patch(text: str):
    return parse_patch((HEADER + text).encode(), path=Path("x.patch"), name="x.patch")


def test_binary_payloads_and_modes_change_the_digest(tmp_path: Path) -> None:
    """Bug: two different `GIT binary patch` bodies, or a `new file mode`
    100644 -> 100755, gave the same digest (pcfp1 saw only ---/+++ and hunks), so the
    lock stayed 'current' while apply --into kept the old bytes or mode."""
    a = _diff(tmp_path, "a", b"\x00\x01binary one\xff" * 8)
    b = _diff(tmp_path, "b", b"\x00\x02binary two\xfe" * 8)
    x = _diff(tmp_path, "x", b"\x00\x01binary one\xff" * 8, mode="100755")
    assert "GIT binary patch" in a and "new file mode 100755" in x
    digests = {_patch(t).digest for t in (a, b, x)}
    assert len(digests) == 3
    # Payload bytes alone, with every other line equal, still count.
    lines = a.splitlines(keepends=True)
    at = next(i for i, ln in enumerate(lines) if ln.startswith("literal ")) + 1
    flipped = ("z" if lines[at][0] != "z" else "y") + lines[at][1:]
    tampered = "".join([*lines[:at], flipped, *lines[at + 1:]])
    assert _patch(tampered).digest != _patch(a).digest


def test_header_edits_and_section_headings_do_not(tmp_path: Path, patches) -> None:
    name, text = patches[0]
    base = parse_patch(text.encode(), path=Path(name), name=name)
    edited = text.replace("Upstream-Status: Pending", "Upstream-Status: Submitted [x]")
    assert edited != text
    heading = "\n".join(ln + " some_function()" if ln.startswith("@@") and ln.endswith("@@")
                        else ln for ln in text.split("\n"))
    for other in (edited, heading):
        assert parse_patch(other.encode(), path=Path(name), name=name).digest == base.digest
    assert fingerprint("a" * 40, [base]) != fingerprint("b" * 40, [base])


def _lock_check(cli, project: Path):
    return cli("-C", str(project), "lock", "--check")


def test_an_older_algorithm_is_stale_with_its_reason(cli, project: Path) -> None:
    """A lock written with pcfp1 is stale, and says why."""
    lock = project / "stack/stack.lock"
    assert f'algorithm = "{ALGORITHM}"' in lock.read_text()
    lock.write_text(lock.read_text().replace(f'algorithm = "{ALGORITHM}"', 'algorithm = "pcfp1"'))
    r = _lock_check(cli, project)
    assert r.code == 1 and "pcfp1 ignored binary payloads and mode changes" in r.out, r.out
    v = cli("-C", str(project), "verify")
    assert v.code == 1 and "pcfp1" in v.out + v.err


def test_lock_check_and_verify_agree_on_a_lock_format(cli, project: Path) -> None:
    """Bug: lock `format = 99` made verify say current but
    `lock --check` stale."""
    lock = project / "stack/stack.lock"
    assert _lock_check(cli, project).code == 0
    lock.write_text(lock.read_text().replace("format = 1", "format = 99"))
    r = _lock_check(cli, project)
    assert r.code == 1 and "lock format 99" in r.out
    v = cli("-C", str(project), "verify", "--json")
    import json

    assert v.code == 1 and json.loads(v.out)["lock"] == "stale"
    assert cli("-C", str(project), "lock").code == 0
    assert _lock_check(cli, project).code == 0
    assert cli("-C", str(project), "verify").code == 0


def test_a_pin_name_with_a_newline_locks_and_verifies(cli, project: Path) -> None:
    """A pin `name` with a newline (valid TOML) was written into stack.lock
    unescaped: `lock` wrote a lock that was not TOML, verify (comparing text) said
    "lock: current" while `lock --check` (parsing it) exited 2. Both now give one
    verdict, from one read and one parse (`fingerprint.lock_state`)."""
    import json

    pin = project / "stack/upstream.toml"
    pin.write_text(pin.read_text().replace('name = "', 'name = "up\\n\\"stream\\u0007', 1))
    assert cli("-C", str(project), "lock").code == 0
    import tomllib

    assert tomllib.loads((project / "stack/stack.lock").read_text())["name"] == \
        'up\n"stream\x07tiny'
    assert _lock_check(cli, project).code == 0
    v = cli("-C", str(project), "verify", "--json")
    assert v.code == 0 and json.loads(v.out)["lock"] == "current"
    lock = project / "stack/stack.lock"
    lock.write_text(lock.read_text().replace("\\n", "\n", 1))  # the old, broken lock
    assert _lock_check(cli, project).code == 2
    assert cli("-C", str(project), "verify").code == 2  # the same verdict


def test_fingerprint_cmake_keeps_any_pin_name_as_data(cli, project: Path, tmp_path: Path
                                                      ) -> None:
    """`fingerprint --cmake` wrote
    `set(PATCHCTL_UPSTREAM_NAME "{name}")` unescaped, so a pin name holding `")` ran CMake
    code in the build that includes the snippet. Read back by real cmake, it is the name."""
    import shutil
    import subprocess

    import pytest

    cmake = shutil.which("cmake")
    if cmake is None:
        pytest.skip("cmake is not installed")
    name = 'x") file(WRITE pwned "1") set(Y "${ENV{HOME}} \\\\ \n; $'
    pin = project / "stack/upstream.toml"
    toml_name = name.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    pin.write_text(pin.read_text().replace('name = "tiny"', f'name = "{toml_name}"', 1))
    r = cli("-C", str(project), "fingerprint", "--cmake")
    assert r.code == 0, r.err
    (tmp_path / "snippet.cmake").write_text(r.out)
    (tmp_path / "show.cmake").write_text('include("${CMAKE_CURRENT_LIST_DIR}/snippet.cmake")\n'
                                         'file(WRITE name.txt "${PATCHCTL_UPSTREAM_NAME}")\n')
    subprocess.run([cmake, "-P", "show.cmake"], cwd=tmp_path, check=True, capture_output=True)
    assert not (tmp_path / "pwned").exists()
    assert (tmp_path / "name.txt").read_text() == name


def test_a_pin_name_with_escapes_is_printed_escaped(cli, project: Path) -> None:
    """Verify, series and apply printed the pin's `name` raw, so
    a name holding an OSC sequence retitled the terminal and a newline forged a line."""
    pin = project / "stack/upstream.toml"
    pin.write_text(pin.read_text().replace('name = "', 'name = "up\\u001b]0;owned\\u0007\\n', 1))
    assert cli("-C", str(project), "lock").code == 0
    for args in (("verify",), ("series",)):
        r = cli("-C", str(project), *args)
        assert r.code == 0, r.err
        assert "\x1b" not in r.out and "\x07" not in r.out, args
        assert "up\\x1b]0;owned\\x07\\n" in r.out.splitlines()[0], args
