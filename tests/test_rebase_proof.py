"""A patch is dropped as upstream only on proof in the new pin's tree, never on its word.

A patch that names a pull request merged between the pins (``(#N)`` in its subject) used
to be graded ``upstream`` and dropped once the merging commit touched the same file and
its changed lines were "contained" in that commit's, compared as multisets of lines that
say something. Short or punctuation-only lines, mode changes and binary files compared as
nothing, and no line's place was compared, so patches upstream never took were deleted.
Here the upstream merges PRs with the numbers the downstream's patches name; some took
the patch's change (with more beside it), some did something else to the same file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.builders import Upstream, git

TABLE = "static const int table[] = {\n    0,\n    0,\n    0,\n};\n"
F_OLD = "int f(int x) {\n    return x + 1;\n}\n"
GUARDS = (
    "void *g(void *p) {\n    use(p);\n    return p;\n}\n"
    "void *h(void *p) {\n    use(p);\n    return p;\n}\n"
)
C_LINES = [f"int c{i} = {i};\n" for i in range(30)]
KEPT = [
    "0001-table-enable-entry-2-50.patch",
    "0002-run.sh-make-executable-51.patch",
    "0003-b-guard-h-against-NULL-52.patch",
]
# upstream made its line, not its mode: it reverse-applies (git only warns of the mode)
MODE_TOO = "0008-x.sh-say-hello-and-make-it-executable-64.patch"
LANDED = [
    "0004-c-set-c5-to-50-60.patch",
    "0005-c-set-c20-to-200-61.patch",
    "0006-tool.sh-make-executable-62.patch",
    "0007-img-new-logo-63.patch",
]


def _write(repo: Path, rel: str, data: str | bytes) -> None:
    path = repo / rel
    path.write_bytes(data if isinstance(data, bytes) else data.encode())


def _edit(repo: Path, rel: str, old: str, new: str) -> None:
    text = (repo / rel).read_text()
    assert old in text, (rel, old)
    _write(repo, rel, text.replace(old, new, 1))


def _commit(repo: Path, message: str, *, executable: str | None = None) -> None:
    if executable:  # on disk too: a later `add -A` would take the mode back
        (repo / executable).chmod(0o755)
        git(repo, "update-index", "--chmod=+x", executable)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def _history(root: Path) -> tuple[Upstream, Path]:
    """The upstream (P1, then PRs #50..#63 merged up to P2) and a downstream clone whose
    commits on P1 are the stack: 1-3 name a merged PR but upstream never made their change,
    4-7 are changes upstream merged as they are, with more beside them."""
    up = root / "up"
    up.mkdir()
    git(up, "init", "-q", "-b", "master")
    _write(up, "a.c", TABLE + F_OLD)
    _write(up, "run.sh", "#!/bin/sh\necho run\n")
    _write(up, "tool.sh", "#!/bin/sh\necho tool\n")
    _write(up, "b.c", GUARDS)
    _write(up, "c.c", "".join(C_LINES))
    _write(up, "data.bin", b"\0data\x01\x02" * 64)
    _write(up, "img.bin", b"\0logo\x03" * 64)
    _write(up, "x.sh", "#!/bin/sh\necho x\n")
    _write(up, "README", "tiny\n")
    _commit(up, "root (#1)")
    p1 = git(up, "rev-parse", "HEAD").strip()
    # upstream's PRs: #50..#53 share a file and a number with a downstream patch, no more
    _edit(up, "a.c", "int f(int x) {\n    return x + 1;", "int f(int y) {\n    return y + 1;")
    _commit(up, "refactor: rename parameter of f (#50)")
    _write(up, "run.sh", "#!/bin/sh\n# docs\necho run\n")
    _commit(up, "run.sh: document (#51)")
    _edit(up, "b.c", "void *g(void *p) {\n", "void *g(void *p) {\n    if (!p) return NULL;\n")
    _commit(up, "b: guard g against NULL (#52)")
    _write(up, "data.bin", b"\0upstream\x01" * 64)
    _commit(up, "data: regenerate (#53)")
    # #60..#63 took the downstream patch's change, edited: more beside it
    _edit(up, "c.c", "int c5 = 5;", "int c5 = 50;")
    _edit(up, "c.c", "int c29 = 29;", "int c29 = 290;")  # far from c5: another hunk
    _write(up, "README", "tiny, with c5 at 50\n")
    _commit(up, "c: set c5 to 50, and c29 (#60)")
    _edit(up, "c.c", "int c17 = 17;", "int c17 = 170;")  # in the patch's context, so it
    _edit(up, "c.c", "int c20 = 20;", "int c20 = 200;")  # does not reverse-apply
    _commit(up, "c: set c20 to 200, and c17 (#61)")
    _write(up, "tool.sh", "#!/bin/sh\n# the tool\necho tool\n")
    _commit(up, "tool.sh: make executable (#62)", executable="tool.sh")
    _write(up, "img.bin", b"\0new logo\x04" * 64)
    _write(up, "README", "tiny, with a new logo\n")
    _commit(up, "img: new logo (#63)")
    _write(up, "x.sh", "#!/bin/sh\necho hello\n")
    _commit(up, "x.sh: say hello (#64)")  # the patch's line, not its mode
    git(up, "tag", "P2")

    work = root / "w"
    git(root, "clone", "-q", str(up), str(work))
    git(work, "checkout", "-q", p1)
    _edit(work, "a.c", "    0,\n    0,\n    0,", "    0,\n    1,\n    0,")
    _commit(work, "table: enable entry 2 (#50)")
    _commit(work, "run.sh: make executable (#51)", executable="run.sh")
    _edit(work, "b.c", "void *h(void *p) {\n", "void *h(void *p) {\n    if (!p) return NULL;\n")
    _commit(work, "b: guard h against NULL (#52)")
    _edit(work, "c.c", "int c5 = 5;", "int c5 = 50;")
    _commit(work, "c: set c5 to 50 (#60)")
    _edit(work, "c.c", "int c20 = 20;", "int c20 = 200;")
    _commit(work, "c: set c20 to 200 (#61)")
    _commit(work, "tool.sh: make executable (#62)", executable="tool.sh")
    _write(work, "img.bin", b"\0new logo\x04" * 64)
    _commit(work, "img: new logo (#63)")
    _write(work, "x.sh", "#!/bin/sh\necho hello\n")
    _commit(work, "x.sh: say hello, and make it executable (#64)", executable="x.sh")
    git(work, "branch", "stack")
    git(work, "checkout", "-q", "-b", "binary", p1)
    _write(work, "data.bin", b"\0downstream\x02" * 64)
    _commit(work, "data: tweak (#53)")
    return Upstream(up, {"P1": p1, "P2": git(up, "rev-parse", "P2").strip()}), work


@pytest.fixture(scope="module")
def _built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Upstream, Path]:
    from tests.builders import system_config_off

    with system_config_off():
        return _history(tmp_path_factory.mktemp("proof"))


def _project(cli, tmp_path: Path, built: tuple[Upstream, Path], commits: str) -> Path:
    up, work = built
    proj = tmp_path / "proj"
    proj.mkdir()
    git(proj, "init", "-q")
    assert (
        cli("-C", str(proj), "init", "--upstream", str(up.path), "--pin", up.commits["P1"]).code
        == 0
    )
    r = cli(
        "-C", str(proj), "import", "--upstream", str(up.path), "--from-repo", str(work), commits
    )
    assert r.code == 0, r.err
    git(proj, "add", "-A")
    git(proj, "-c", "user.name=a", "-c", "user.email=b", "commit", "-q", "-m", "stack")
    return proj


def _rebase(cli, proj: Path, up: Upstream, *args: str) -> tuple[int, dict]:
    r = cli("-C", str(proj), "rebase-pin", "P2", "--upstream", str(up.path), *args, "--json")
    assert r.out, r.err
    return r.code, json.loads(r.out)


def test_drop_upstream_keeps_what_the_tree_does_not_hold(cli, tmp_path: Path, _built) -> None:
    """A one-character table entry, a mode change and a guard added to h() where upstream
    guarded g() each name a PR merged in range that touched the same file. They were
    dropped as landed by reference though upstream made none of them; they must stay,
    marked superseded?. So must a patch whose line upstream made but not its mode change,
    though it reverse-applies (git only warns of a mode). The patches whose change upstream
    did merge (with more in the same commit, or beside the change) are still dropped, the
    commit they name named."""
    up, _ = _built
    proj = _project(cli, tmp_path, _built, f"{up.commits['P1']}..stack")
    code, data = _rebase(cli, proj, up, "--check")
    rows = {p["name"]: p for p in data["patches"]}
    for name in [*KEPT, MODE_TOO]:
        p = rows[name]
        assert p["grade"] in ("exact", "offset", "3way") and p["landed"] is None, p
        assert p["change"] != "dropped" and p["superseded"] is not None, p
    assert rows[KEPT[0]]["superseded"]["reference"] == "#50"
    assert (
        rows[KEPT[0]]["superseded"]["commit"]["subject"] == "refactor: rename parameter of f (#50)"
    )
    for name, number in zip(LANDED, ("#60", "#61", "#62"), strict=False):
        p = rows[name]
        assert p["grade"] == "upstream" and p["change"] == "dropped", p
        assert p["landed"]["how"] == "reference" and p["landed"]["reference"] == number, p
        assert p["landed"]["commit"]["subject"].endswith(f"({number})")
    logo = rows[LANDED[3]]  # a binary file's change is proven, never contained: searched
    assert logo["grade"] == "upstream" and logo["landed"]["how"] in ("patch-id", "reverse-apply")
    assert logo["landed"]["commit"]["subject"] == "img: new logo (#63)"

    code, data = _rebase(cli, proj, up, "--drop-upstream")
    # The mode patch's line upstream made: the merge leaves it the mode change alone, a
    # doubted move a person judges (and here takes as it stands).
    assert (code, data["conflict"]) == (1, MODE_TOO), data["message"]
    r = cli("-C", str(proj), "rebase-pin", "--continue", "--json")
    code, data = r.code, json.loads(r.out)
    assert code == 0 and data["status"] == "rebased", data["message"]
    series = [
        ln
        for ln in (proj / "stack/series").read_text().splitlines()
        if ln and not ln.startswith("#")
    ]
    assert series == [*KEPT, MODE_TOO]
    assert sorted(p.name for p in (proj / "stack/patches").iterdir()) == [*KEPT, MODE_TOO]
    tree = tmp_path / "tree"
    r = cli("-C", str(proj), "apply", "--into", str(tree), "--upstream", str(up.path))
    assert r.code == 0, r.err
    assert (tree / "a.c").read_text().startswith("static const int table[] = {\n    0,\n    1,")
    assert (tree / "run.sh").stat().st_mode & 0o111
    assert "void *h(void *p) {\n    if (!p) return NULL;" in (tree / "b.c").read_text()
    assert (tree / "x.sh").stat().st_mode & 0o111


def test_a_binary_change_upstream_made_otherwise_is_kept(cli, tmp_path: Path, _built) -> None:
    """A binary file has no lines, so any commit of the PR it names that touched the file
    "contained" it and it was dropped; upstream wrote other bytes there. It is a conflict
    (binary files do not merge) and superseded?, never upstream."""
    up, _ = _built
    proj = _project(cli, tmp_path, _built, f"{up.commits['P1']}..binary")
    _, data = _rebase(cli, proj, up, "--check")
    p = data["patches"][0]
    assert p["grade"] == "conflict" and p["landed"] is None and p["change"] != "dropped"
    assert p["superseded"]["reference"] == "#53"
    r = cli("-C", str(proj), "upstream-status", "--ref", "P2", "--upstream", str(up.path), "--json")
    row = json.loads(r.out)["patches"][0]["upstream"]
    assert row["verdict"] == "superseded?" and row["reference"] == "#53"


def test_upstream_status_ref_lands_only_what_the_tree_holds(cli, tmp_path: Path, _built) -> None:
    """upstream-status --ref said `landed` (by reference) for the same patches that
    rebase-pin dropped; it must say `superseded?` for those upstream never took."""
    up, _ = _built
    proj = _project(cli, tmp_path, _built, f"{up.commits['P1']}..stack")
    r = cli("-C", str(proj), "upstream-status", "--ref", "P2", "--upstream", str(up.path), "--json")
    rows = {p["file"]: p["upstream"] for p in json.loads(r.out)["patches"]}
    assert [rows[n]["verdict"] for n in [*KEPT, MODE_TOO]] == ["superseded?"] * 4
    assert [rows[n]["verdict"] for n in LANDED] == ["landed"] * 4
    guard = rows[KEPT[2]]
    assert guard["reference"] == "#52" and "interdiff" in guard
