"""Corpus: hostile stack files (series, pin, lock), apply stamps, outreach data and
private state files. Each case: the file's bytes, the exit code verify (or the named
command) must give, and a fragment of its one-line error or report."""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path

import pytest

from tests.builders import Upstream, make_project, system_config_off
from tests.corpus import FINDINGS, OK, USAGE, Case, check, params, tree_digest

P1, P2, P3 = ("0001-util-add-tiny_square.patch", "0002-tiny-bump-op-02.patch",
              "0003-tiny-declare-square.patch")
GOOD_SERIES = f"# test series\n{P1}\n{P2}\n{P3}\n"

SERIES = [Case(i, data, code, frag) for i, data, code, frag in [
    ("empty", b"", FINDINGS, ""),  # no patches: the lock no longer matches
    ("comments-only", b"# nothing\n\n   # more\n", FINDINGS, ""),
    ("missing-file", GOOD_SERIES.encode() + b"0009-missing.patch\n", USAGE, "0009-missing"),
    ("duplicate", GOOD_SERIES.encode() + P1.encode() + b"\n", USAGE, "listed twice"),
    ("unknown-option", f"{P1} -R\n".encode(), USAGE, "unknown option '-R'"),
    ("strip-negative", f"{P1} -p-1\n".encode(), USAGE, "unknown option"),
    ("strip-letters", f"{P1} -pX\n".encode(), USAGE, "unknown option"),
    ("strip-too-deep", f"{P1} -p9\n{P2}\n{P3}\n".encode(), FINDINGS, ""),
    ("strip-huge", f"{P1} -p99999999999999999999\n".encode(), (USAGE, FINDINGS), ""),
    ("strip-p0", f"{P1} -p0\n{P2}\n{P3}\n".encode(), FINDINGS, ""),
    ("dotdot", b"../../etc/passwd\n", USAGE, "leaves patches/"),
    ("absolute", b"/etc/passwd\n", USAGE, "leaves patches/"),
    ("backslash-dotdot", b"..\\..\\x.patch\n", USAGE, ""),
    ("into-dot-git", b"../../.git/config\n", USAGE, "leaves patches/"),
    ("directory-name", b"sub\n", USAGE, ""),
    ("dot", b".\n", USAGE, ""),
    ("crlf-lines", GOOD_SERIES.replace("\n", "\r\n").encode(), OK, ""),
    ("bom", b"\xef\xbb\xbf" + GOOD_SERIES.encode(), (OK, USAGE), ""),
    ("nul-byte", f"{P1}\x00\n{P2}\n{P3}\n".encode(), USAGE, ""),
    ("not-utf8", b"\xff\xfe\xfa\n", USAGE, "series"),
    ("tabs", f"\t{P1}\t#c\n{P2}\n{P3}\n".encode(), OK, ""),
    ("hash-in-name", f"{P1}#x\n{P2}\n{P3}\n".encode(), OK, ""),
    ("form-feed-splits", f"{P1}\x0c{P2}\n{P3}\n".encode(), (OK, USAGE), ""),
    ("very-long-line", b"x" * 300_000 + b"\n", USAGE, "longer than a file name may be"),
    ("many-blank-lines", b"\n" * 50_000 + GOOD_SERIES.encode(), OK, ""),
    ("many-missing", b"".join(b"%04d-x.patch\n" % i for i in range(3000)), USAGE, ""),
    ("reordered", f"{P3}\n{P2}\n{P1}\n".encode(), FINDINGS, ""),
    ("is-a-directory", None, USAGE, "series"),
]]


def _project(tmp_path: Path, upstream: Upstream, patches) -> Path:
    return make_project(tmp_path / "p", upstream, patches)


def _verify(cli, project: Path, upstream: Upstream, *extra: str):
    before = tree_digest(project, skip=(".patchctl",))
    r = cli("-C", str(project), "verify", "--upstream", str(upstream.path), *extra)
    assert tree_digest(project, skip=(".patchctl",)) == before, "verify wrote"
    return r


def _put(path: Path, data: bytes | None) -> None:
    if data is None:
        path.unlink(missing_ok=True)
        path.mkdir()
    else:
        path.write_bytes(data)


@params(SERIES)
def test_series_corpus(cli, case: Case, tmp_path: Path, upstream: Upstream, patches) -> None:
    project = _project(tmp_path, upstream, patches)
    _put(project / "stack/series", case.data)
    check(_verify(cli, project, upstream), case)
    for cmd in (["series"], ["lock", "--check"], ["fingerprint"]):
        check(cli("-C", str(project), *cmd), (OK, FINDINGS, USAGE))
    before = tree_digest(project / "stack")
    r = cli("-C", str(project), "apply", "--into", str(tmp_path / "out"), "--upstream",
            str(upstream.path))
    check(r, (OK, FINDINGS, USAGE))
    if r.code != OK:
        assert not (tmp_path / "out").exists()
    assert tree_digest(project / "stack") == before


HEX = "df62fb481a0a91e91511ec771940d640140e0345"  # tests.builders' `base` (fixed ids)
PIN = [Case(i, data, code, frag) for i, data, code, frag in [
    ("not-toml", "name = \n", USAGE, "not valid TOML"),
    ("missing-commit", 'name = "tiny"\nurl = "u"\n', USAGE, "missing commit"),
    ("missing-all", "", USAGE, "missing name, url, commit"),
    ("commit-int", 'name = "tiny"\nurl = "u"\ncommit = 5\n', USAGE, "missing commit"),
    ("commit-short", f'name = "tiny"\nurl = "u"\ncommit = "{HEX[:12]}"\n', USAGE, "40-hex"),
    ("commit-upper", f'name = "tiny"\nurl = "u"\ncommit = "{HEX.upper()}"\n', OK, ""),
    ("commit-spaces", f'name = "tiny"\nurl = "u"\ncommit = " {HEX} "\n', OK, ""),
    ("commit-option", 'name = "tiny"\nurl = "u"\ncommit = "--output=/tmp/x"\n', USAGE, "40-hex"),
    ("commit-not-in-upstream", 'name = "tiny"\nurl = "u"\ncommit = "' + "a" * 40 + '"\n', USAGE,
     "not in upstream"),
    ("commit-is-a-tree", 'name = "tiny"\nurl = "u"\ncommit = "08950f974f09e0f517c628fe5f32454294dc'
     '821e"\n', USAGE, ""),
    ("duplicate-key", f'name = "tiny"\nname = "v"\nurl = "u"\ncommit = "{HEX}"\n', USAGE, "TOML"),
    ("tag-table", f'name = "tiny"\nurl = "u"\ncommit = "{HEX}"\n[tag]\nx = 1\n', (OK, USAGE), ""),
    ("not-utf8", b"\xff\xfe", USAGE, "upstream.toml"),
    ("bom", b"\xef\xbb\xbf" + f'name = "tiny"\nurl = "u"\ncommit = "{HEX}"\n'.encode(),
     (OK, USAGE), ""),
    ("nul", f'name = "tiny\x00"\nurl = "u"\ncommit = "{HEX}"\n', USAGE, ""),
    ("huge-name", f'name = "{"n" * 100_000}"\nurl = "u"\ncommit = "{HEX}"\n', (OK, FINDINGS), ""),
    ("is-a-directory", None, USAGE, "upstream.toml"),
]]


@params(PIN)
def test_pin_corpus(cli, case: Case, tmp_path: Path, upstream: Upstream, patches) -> None:
    project = _project(tmp_path, upstream, patches)
    data = case.data.encode() if isinstance(case.data, str) else case.data
    _put(project / "stack/upstream.toml", data)
    check(_verify(cli, project, upstream), case)
    check(cli("-C", str(project), "series"), (OK, USAGE))


LOCK = [Case(i, data, code, frag) for i, data, code, frag in [
    ("missing", b"", FINDINGS, ""),
    ("not-toml", b"format = \n", USAGE, "not valid TOML"),
    ("format-99", "format-99", FINDINGS, "format 99"),
    ("algorithm-pcfp1", "pcfp1", FINDINGS, "pcfp1"),
    ("algorithm-unknown", "zzz", FINDINGS, "does not know"),
    ("fingerprint-wrong", "fp", FINDINGS, ""),
    ("digest-wrong", "digest", FINDINGS, "changed"),
    ("strip-not-int", "strip", USAGE, "malformed lock"),
    ("patch-not-table", b'format = 1\nalgorithm = "pcfp2"\nname = "t"\npin = "x"\n'
     b'fingerprint = "x"\npatch = [1, 2]\n', USAGE, "malformed lock"),
    ("missing-keys", b"format = 1\n", USAGE, "malformed lock"),
    ("format-string", b'format = "one"\nalgorithm = "a"\nname = "t"\npin = "x"\n'
     b'fingerprint = "x"\n', USAGE, "malformed lock"),
    ("extra-patch", "extra", FINDINGS, ""),
    ("not-utf8", b"\xff\xfe", USAGE, "stack.lock"),
    ("is-a-directory", None, USAGE, "stack.lock"),
]]


@params(LOCK)
def test_lock_corpus(cli, case: Case, tmp_path: Path, upstream: Upstream, patches) -> None:
    project = _project(tmp_path, upstream, patches)
    lock = project / "stack/stack.lock"
    text = lock.read_text()
    edits = {
        "format-99": lambda: text.replace("format = 1", "format = 99"),
        "pcfp1": lambda: text.replace('"pcfp2"', '"pcfp1"'),
        "zzz": lambda: text.replace('"pcfp2"', '"zzz"'),
        "fp": lambda: text.replace('fingerprint = "', 'fingerprint = "0', 1),
        "digest": lambda: text.replace('digest = "', 'digest = "0', 1),
        "strip": lambda: text.replace("strip = 1", 'strip = "x"', 1),
        "extra": lambda: text + f'\n[[patch]]\nfile = "x"\nstrip = 1\ndigest = "{"0" * 64}"\n',
    }
    if case.data == b"":
        lock.unlink()
    elif isinstance(case.data, str):
        lock.write_text(edits[case.data]())
    else:
        _put(lock, case.data)
    check(_verify(cli, project, upstream), case)
    check(cli("-C", str(project), "lock", "--check"), case.code, "")
    r = cli("-C", str(project), "lock")  # rewriting the lock repairs every case
    if case.id == "is-a-directory":
        check(r, (USAGE, 3))
        return
    check(r, OK)
    check(_verify(cli, project, upstream), OK)


# Text a pin name may hold (valid TOML, so the pin file is fine): each must reach the lock
# and the stamp escaped, and read back as it was.
PIN_NAMES = [Case(i, data, OK) for i, data in [
    ("newline", "ti\nny"), ("quote", 'ti"ny'), ("backslash", "ti\\ny\\"),
    ("toml-injection", 'tiny"\nfingerprint = "0'), ("table-injection", 'x"\n[[patch]]\nfile = "y'),
    ("control", "\x01\x1b[2J\x7f"), ("c1-and-separators", "\x85\u2028\u2029"),
    ("bidi", "\u202etiny\u202c"), ("triple-quotes", "'''\"\"\"'"), ("cr", "ti\rny"),
    ("empty", ""), ("non-ascii", "caf\u00e9 \U0001f600"),
]]


@params(PIN_NAMES)
def test_pin_name_corpus(cli, case: Case, tmp_path: Path, upstream: Upstream, patches) -> None:
    """A pin name with a newline was copied into stack.lock and the stamp
    unescaped. The lock an older patchctl wrote is refused alike by verify and
    `lock --check` (one read, one parse); `lock` writes one that both call current, and
    `apply --into` reads back the stamp it wrote."""
    import tomli_w

    project = _project(tmp_path, upstream, patches)
    pin = project / "stack/upstream.toml"
    pin.write_text(tomli_w.dumps({**tomllib.loads(pin.read_text()), "name": case.data}))
    lock = project / "stack/stack.lock"
    name = case.data.replace("\\", "\\\\").replace('"', '\\"')  # the old writer's escaping
    lock.write_text(re.sub(r'(?m)^name = ".*"$', lambda _: f'name = "{name}"', lock.read_text(),
                           count=1))
    verified = _verify(cli, project, upstream)
    check(verified, (OK, FINDINGS, USAGE))
    check(cli("-C", str(project), "lock", "--check"), verified.code)  # the same verdict
    check(cli("-C", str(project), "lock"), OK)
    assert tomllib.loads(lock.read_text())["name"] == case.data
    r = _verify(cli, project, upstream, "--json")
    check(r, OK)
    assert json.loads(r.out)["lock"] == "current"
    check(cli("-C", str(project), "lock", "--check"), OK)
    into = tmp_path / "tree"
    args = ("-C", str(project), "apply", "--into", str(into), "--upstream", str(upstream.path),
            "--json")
    check(cli(*args), OK)
    assert tomllib.loads((into / ".patchctl-stamp").read_text())["name"] == case.data
    again = cli(*args)
    check(again, OK)
    assert json.loads(again.out)["unchanged"] is True


STAMP = [Case(i, data, code, frag) for i, data, code, frag in [
    ("garbage", b"\x00\xff not toml", USAGE, "stamp"),
    ("empty", b"", USAGE, "stamp"),
    ("format-99", "format = 99", USAGE, ""),
    ("fingerprint-other", "fingerprint", OK, ""),
    ("manifest-other", "manifest", USAGE, "edited"),
    ("patches-not-list", "patches", USAGE, ""),
    ("is-a-directory", None, USAGE, ""),
    ("symlink-to-canary", "link", USAGE, ""),
]]


@params(STAMP)
def test_stamp_corpus(cli, case: Case, tmp_path: Path, upstream: Upstream, patches) -> None:
    """A tree that `apply --into` wrote, its stamp then damaged: the next apply refuses
    with one line (or, for a stamp that is ours but out of date, replaces the tree)."""
    project = _project(tmp_path, upstream, patches)
    into = tmp_path / "tree"
    args = ("-C", str(project), "apply", "--into", str(into), "--upstream", str(upstream.path))
    check(cli(*args), OK)
    stamp = into / ".patchctl-stamp"
    text = stamp.read_text()
    canary = tmp_path / "canary"
    canary.write_text("canary\n")
    if case.data == "link":
        stamp.unlink()
        stamp.symlink_to(canary)
    elif isinstance(case.data, str):
        key = case.data.split(" ")[0]
        lines = [ln for ln in text.splitlines() if not ln.startswith(key + " ")]
        zeros = "0" * 64
        value = {"fingerprint": f'fingerprint = "{zeros}"', "manifest": f'manifest = "{zeros}"',
                 "patches": 'patches = "x"'}.get(case.data, case.data)
        stamp.write_text("\n".join([*lines, value]) + "\n")
    else:
        _put(stamp, case.data)
    before = tree_digest(into)
    r = cli(*args)
    check(r, case)
    if r.code != OK:
        assert tree_digest(into) == before, "a refused apply changed the tree"
        check(cli(*args, "--force"), OK)
    assert canary.read_text() == "canary\n"


OUTREACH = [Case(i, data, code, frag) for i, data, code, frag in [
    ("not-toml", "title = \n", USAGE, "outreach"),
    ("not-utf8", b"\xff\xfe", USAGE, "outreach"),
    ("empty", "", OK, ""),
    ("prior-art-string", 'prior_art = "x"\n', USAGE, "outreach"),
    ("prior-art-list-of-ints", "prior_art = [1, 2]\n", USAGE, "outreach"),
    ("prior-art-no-ref", "[[prior_art]]\nkind = \"pr\"\n", USAGE, "outreach"),
    ("question-no-text", "[[question]]\nevidence = []\n", USAGE, "outreach"),
    ("question-evidence-string", '[[question]]\nquestion = "q"\nevidence = "abc"\n', (OK, USAGE),
     ""),
    ("question-evidence-escape", '[[question]]\nquestion = "q"\nevidence = ["../../../etc/passwd",'
     ' "/etc/passwd", "evidence/../../x.json"]\n', OK, ""),
    ("check-context-string", '[[upstream_check]]\nwhat = "w"\npath = "src/util.c"\ntext = "x"\n'
     'context = "many"\n', USAGE, "outreach"),
    ("check-context-negative", '[[upstream_check]]\nwhat = "w"\npath = "src/util.c"\ntext = '
     '"tiny_abs"\ncontext = -5\n', (OK, USAGE), ""),
    ("check-context-huge", '[[upstream_check]]\nwhat = "w"\npath = "src/util.c"\ntext = '
     '"tiny_abs"\ncontext = 99999999999\n', (OK, USAGE), ""),
    ("check-path-escape", '[[upstream_check]]\nwhat = "w"\npath = "../../../../etc/passwd"\n'
     'text = "root"\n', (OK, USAGE), ""),
    ("check-path-absolute", '[[upstream_check]]\nwhat = "w"\npath = "/etc/passwd"\ntext = "root"\n',
     (OK, USAGE), ""),
    ("check-path-option", '[[upstream_check]]\nwhat = "w"\npath = "--output=CANARY"\n'
     'text = "x"\n', (OK, USAGE), ""),
    ("check-text-option", '[[upstream_check]]\nwhat = "w"\npath = "src/util.c"\n'
     'text = "--open-files-in-pager=touch CANARY"\n', (OK, USAGE), ""),
    ("check-text-empty", '[[upstream_check]]\nwhat = "w"\npath = "src/util.c"\ntext = ""\n',
     (OK, USAGE), ""),
    ("jinja-in-fields", 'title = "{{ 7*7 }}{% raw %}"\nsummary = "{{ config }}"\n', OK, ""),
    ("huge-field", 'summary = "' + "s" * 500_000 + '"\n', OK, ""),
    ("fields-wrong-types", "title = 5\nsummary = [1]\nmotivation = {a = 1}\n", (OK, USAGE), ""),
    ("is-a-directory", None, (OK, USAGE), ""),
]]


@params(OUTREACH)
def test_outreach_data_corpus(cli, case: Case, tmp_path: Path, upstream: Upstream,
                              patches) -> None:
    project = _project(tmp_path, upstream, patches)
    path = project / "stack/outreach/square.toml"
    path.parent.mkdir(parents=True)
    canary = tmp_path / "canary"
    data = case.data.replace("CANARY", str(canary)) if isinstance(case.data, str) else case.data
    _put(path, data.encode() if isinstance(data, str) else data)
    out = tmp_path / "briefs"
    r = cli("-C", str(project), "draft-outreach", "--upstream", str(upstream.path), "--out",
            str(out), "--series")
    check(r, case)
    if r.code == OK:
        text = "".join(p.read_text() for p in out.glob("*.md"))
        assert "root:x:" not in text, "a brief quoted a file outside the upstream"
        if case.id == "jinja-in-fields":
            assert "{{ config }}" in text.replace("\\", "")  # data is never a template
    else:
        assert not out.exists()
    assert not canary.exists(), "an outreach value reached git as an option"


def test_concern_naming_a_path_outside_the_stack(cli, tmp_path: Path, upstream: Upstream,
                                                 patches) -> None:
    """Bug: a `Concern:` of `../../../outside` made draft-outreach read `<dir>/outside.toml`,
    beside the project, as the patch's outreach data."""
    name, text = patches[0]
    text = text.replace("Concern: square", "Concern: ../../../outside")
    project = _project(tmp_path, upstream, [(name, text)])
    (tmp_path / "outside.toml").write_text('title = "READ FROM OUTSIDE"\n')
    (project / "stack/outreach").mkdir()  # as in the real stack
    out = tmp_path / "briefs"
    r = cli("-C", str(project), "draft-outreach", "--upstream", str(upstream.path), "--out",
            str(out), "--series")
    check(r, OK)
    briefs = "".join(p.read_text() for p in out.glob("*"))
    assert "READ FROM OUTSIDE" not in r.out + r.err + briefs


STATE = [Case(i, data, code, frag) for i, data, code, frag in [
    ("not-json", b"{", USAGE, "state"),
    ("empty", b"", USAGE, "state"),
    ("not-utf8", b"\xff\xfe", USAGE, "state"),
    ("list", b"[]", USAGE, "state"),
    ("wrong-schema", b'{"schema": "patchctl.other/9"}', USAGE, "state"),
    ("missing-fields", "fields", USAGE, "state"),
    ("wrong-types", "types", USAGE, "state"),
    ("target-escape", "target", USAGE, ""),
    ("huge-number", b'{"schema": 1e999999}', USAGE, "state"),
    ("deep-nesting", b"[" * 100_000 + b"]" * 100_000, USAGE, "state"),
    ("is-a-directory", None, USAGE, ""),
]]


def _damage_state(path: Path, case: Case) -> None:
    if isinstance(case.data, str):
        state = json.loads(path.read_text())
        if case.data == "fields":
            state = {"schema": state["schema"]}
        elif case.data == "types":
            state = {k: ([v] if k != "schema" else v) for k, v in state.items()}
        else:
            for key in ("target", "stack"):
                if key in state:
                    state[key] = "../../../../etc/passwd"
        path.write_text(json.dumps(state))
    else:
        _put(path, case.data)


@params(STATE)
def test_edit_state_corpus(cli, case: Case, tmp_path: Path, upstream: Upstream,
                           patches) -> None:
    project = _project(tmp_path, upstream, patches)
    check(cli("-C", str(project), "edit", "0002", "--upstream", str(upstream.path)), OK)
    state = project / ".patchctl/edit/state.json"
    _damage_state(state, case)
    before = tree_digest(project / "stack")
    check(cli("-C", str(project), "refresh"), case)
    check(cli("-C", str(project), "refresh", "--all"), case)
    assert tree_digest(project / "stack") == before
    # the way out the message names works
    r = cli("-C", str(project), "edit", "0002", "--reset", "--upstream", str(upstream.path))
    check(r, OK)
    check(cli("-C", str(project), "refresh"), OK)


# `refresh --all` reads the edit work tree's commit messages: values that would add a
# header, a trailer or a diff line, or hide text, are refused there as everywhere else.
BUMP = "tiny : bump op 02"
TRAILERS = "Concern: bump\nUpstream-Status: Pending\nScope: src/*.c\n"
MESSAGES = [Case(i, data, USAGE, frag) for i, data, frag in [
    ("body-diff", f"{BUMP}\n\nWhy.\n---\ndiff --git a/README.md b/README.md\n\n{TRAILERS}",
     "start a diff"),
    ("body-mbox-from", f"{BUMP}\n\nFrom x Mon Sep 17 00:00:00 2001\n\n{TRAILERS}",
     "would end the message"),
    ("body-escape", f"{BUMP}\n\nWhy.\x1b[2J\n\n{TRAILERS}", "control character"),
    ("trailer-escape", f"{BUMP}\n\nConcern: b\x1b]0;x\x07ump\n", "control characters"),
    ("trailer-bidi", f"{BUMP}\n\nConcern: b\u202eump\n", "control characters"),
    ("status-malformed", f"{BUMP}\n\nUpstream-Status: upstream status unknown\n",
     "malformed Upstream-Status"),
    ("reproducer-escape", f"{BUMP}\n\nReproducer: /etc/passwd\n", "under reproducers/"),
    ("scope-bad-glob", f"{BUMP}\n\nScope: src/[z-a]\n", "reversed"),
    ("subject-escape", f"tiny : bump\x1b[2J\n\n{TRAILERS}", "control characters"),
    ("no-subject", f"\n\nWhy.\n\n{TRAILERS}", "no subject line"),
    ("new-body-diff", "docs : x\n\n--- a/README.md\n+++ b/README.md\n", "start a diff"),
]]


@params(MESSAGES)
def test_commit_message_corpus(cli, case: Case, tmp_path: Path, upstream: Upstream,
                               patches) -> None:
    from tests.builders import git

    project = _project(tmp_path, upstream, patches)
    check(cli("-C", str(project), "edit", "0002", "--upstream", str(upstream.path)), OK)
    work = project / ".patchctl/edit/work"
    git(work, "commit", "-q", "--amend", "--allow-empty-message", "--cleanup=verbatim",
        "-m", str(case.data))
    before = tree_digest(project / "stack")
    check(cli("-C", str(project), "refresh", "--all"), case)
    assert tree_digest(project / "stack") == before


@pytest.fixture(scope="module")
def _history(tmp_path_factory: pytest.TempPathFactory):
    from tests.rebase_history import make_history

    with system_config_off():
        return make_history(tmp_path_factory.mktemp("history"))


@params(STATE)
def test_rebase_state_corpus(cli, case: Case, tmp_path: Path, _history) -> None:
    import shutil

    up = Upstream(tmp_path / "up", dict(_history.upstream.commits))
    shutil.copytree(_history.upstream.path, up.path, symlinks=True)
    project = make_project(tmp_path / "p", up, _history.patches)
    r = cli("-C", str(project), "rebase-pin", "master", "--drop-upstream")
    check(r, FINDINGS, "stopped")
    _damage_state(project / ".patchctl/rebase/state.json", case)
    before = tree_digest(project / "stack")
    check(cli("-C", str(project), "rebase-pin", "--continue"), case)
    assert tree_digest(project / "stack") == before
    check(cli("-C", str(project), "rebase-pin", "--abort"), OK)
    assert tree_digest(project / "stack") == before
    assert not (project / ".patchctl/rebase").exists()


@pytest.mark.parametrize("perm", [0o000, 0o200])
def test_unreadable_files(cli, tmp_path: Path, upstream: Upstream, patches, perm) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    project = _project(tmp_path, upstream, patches)
    (project / "stack/patches" / P2).chmod(perm)
    check(_verify(cli, project, upstream), (FINDINGS, USAGE, 3))


# -- the bugs this corpus found, one named test each ------------------------------------------

_ALL = {f"{kind}:{c.id}": c for kind, cases in (("pin", PIN), ("lock", LOCK), ("stamp", STAMP),
                                                ("outreach", OUTREACH), ("state", STATE))
        for c in cases}


def test_a_tree_id_is_no_pin(cli, tmp_path, upstream, patches) -> None:
    """Bug: a pin naming a tree (not a commit) was accepted: verify peeled it with ^{tree}
    and proved the stack against it."""
    test_pin_corpus(cli, _ALL["pin:commit-is-a-tree"], tmp_path, upstream, patches)


def test_lock_rewrites_a_damaged_lock(cli, tmp_path, upstream, patches) -> None:
    """Bug: verify said "malformed lock ...; rewrite it with `patchctl lock`", and
    `patchctl lock` then failed on the same damaged lock."""
    test_lock_corpus(cli, _ALL["lock:not-toml"], tmp_path, upstream, patches)


def test_apply_force_replaces_a_tree_with_a_damaged_stamp(cli, tmp_path, upstream,
                                                          patches) -> None:
    """Bug: apply said "unreadable stamp ...; re-run with --force", and --force failed on
    the same stamp; a stamp of an unknown format was taken as current ("up to date")."""
    test_stamp_corpus(cli, _ALL["stamp:garbage"], tmp_path / "a", upstream, patches)
    test_stamp_corpus(cli, _ALL["stamp:format-99"], tmp_path / "b", upstream, patches)


def test_outreach_data_of_the_wrong_type(cli, tmp_path, upstream, patches) -> None:
    """Bug: `prior_art = "x"` or `context = "many"` in stack/outreach/*.toml ended
    draft-outreach in an AttributeError or ValueError traceback."""
    for n, name in enumerate(("prior-art-string", "prior-art-list-of-ints",
                              "check-context-string")):
        test_outreach_data_corpus(cli, _ALL[f"outreach:{name}"], tmp_path / str(n), upstream,
                                  patches)


def test_edit_reset_is_the_way_out_of_a_damaged_edit_state(cli, tmp_path, upstream,
                                                           patches) -> None:
    """Bug: refresh said "...; start again with `patchctl edit NAME --reset`", and
    `edit NAME --reset` failed on the same damaged state file."""
    test_edit_state_corpus(cli, _ALL["state:not-json"], tmp_path, upstream, patches)


def test_a_deeply_nested_state_file(cli, tmp_path, upstream, patches) -> None:
    """Bug: a state file nested 100,000 deep ended in a RecursionError traceback."""
    test_edit_state_corpus(cli, _ALL["state:deep-nesting"], tmp_path, upstream, patches)


def test_briefs_are_stale_when_the_fingerprint_algorithm_moves(cli, tmp_path, upstream, patches,
                                                               monkeypatch) -> None:
    """Bug: `draft-outreach --check` said "up to date" for briefs that show a fingerprint the
    stack no longer has (the committed briefs kept pcfp1's after the pcfp2 relock): the
    stack files were unchanged, only the algorithm moved."""
    from patchctl.model import fingerprint

    project = _project(tmp_path, upstream, patches)
    out = tmp_path / "briefs"
    check(cli("-C", str(project), "draft-outreach", "--series", "--out", str(out)), OK)
    check(cli("-C", str(project), "draft-outreach", "--check", "--out", str(out)), OK)
    monkeypatch.setattr(fingerprint, "ALGORITHM", "pcfp9")
    check(cli("-C", str(project), "draft-outreach", "--check", "--out", str(out)), FINDINGS,
          "the stack fingerprint is")


def test_a_patch_name_longer_than_a_file_name(cli, tmp_path, upstream, patches) -> None:
    """Bug: a 300,000-character series entry passed the name check and reached the file
    system and git: an OSError traceback (File name too long), then, with OSErrors
    mapped, exit 3 "Argument list too long" for what is bad input."""
    case = next(c for c in SERIES if c.id == "very-long-line")
    test_series_corpus(cli, case, tmp_path, upstream, patches)
