"""One vocabulary for JSON schema ids: each defined once in patchctl/model/schemas.py, used
from there, and documented once in docs/FORMATS.md's "JSON documents" table."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from patchctl.model import schemas

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "patchctl"
ID = re.compile(r"\b(?:patchctl|worker)\.[a-z][a-z-]*/\d+\b")


def _defined() -> dict[str, str]:
    """Constant name -> id, for every id model/schemas.py defines (older ids included)."""
    out: dict[str, str] = {}
    for name, value in vars(schemas).items():
        if name.isupper():
            for i, v in enumerate(value if isinstance(value, tuple) else (value,)):
                assert isinstance(v, str) and ID.fullmatch(v), f"{name}: {v!r} is not an id"
                out[f"{name}[{i}]" if isinstance(value, tuple) else name] = v
    return out


def _docstrings(tree: ast.AST) -> set[int]:
    nodes = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, nodes) and n.body and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)
            and isinstance(n.body[0].value.value, str)}


def _literal_ids() -> list[str]:
    """Where patchctl/ (outside model/schemas.py) writes an id as a string literal (an f-string's
    text included; docstrings, which only talk about documents, are not code)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "model/schemas.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and id(node) not in docs:
                found += [f"{path.relative_to(ROOT)}:{node.lineno}: {m}"
                          for m in ID.findall(node.value)]
    return found


def _formats_table() -> list[str]:
    text = (ROOT / "docs" / "FORMATS.md").read_text(encoding="utf-8")
    section = text.split("## JSON documents", 1)[1].split("\n## ", 1)[0]
    return [ln for ln in section.splitlines() if ln.startswith("| ")][2:]  # past the header


def test_no_id_is_written_outside_schemas_py() -> None:
    assert _literal_ids() == []


def test_every_id_is_defined_once() -> None:
    defined = _defined()
    values = list(defined.values())
    assert sorted(v for v in set(values) if values.count(v) > 1) == []
    assert len(defined) >= 30  # the scan saw the module, not an empty namespace


def test_every_id_is_documented_in_exactly_one_row_of_formats_md() -> None:
    """One id names one kind of document: it has one row, and that row is the only one."""
    rows = _formats_table()
    defined = set(_defined().values())
    for schema in sorted(defined):
        hits = [r for r in rows if re.search(rf"`{re.escape(schema)}`", r)]
        assert len(hits) == 1, f"{schema}: {len(hits)} rows of the JSON documents table"
    documented = {m for r in rows for m in ID.findall(r)}
    assert documented == defined


def test_the_scan_finds_a_literal() -> None:
    """The literal scan is no test that cannot fail: it sees an id in code and in an
    f-string, and leaves a docstring alone."""
    code = ('"""About patchctl.verify/1."""\nX = "patchctl.verify/1"\n'
            'def f(x):\n    """patchctl.rebase/1"""\n    return f"{x} patchctl.canary/1"\n')
    tree = ast.parse(code)
    docs = _docstrings(tree)
    hits = [m for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and id(n) not in docs for m in ID.findall(n.value)]
    assert hits == ["patchctl.verify/1", "patchctl.canary/1"]


def test_family_names_every_version() -> None:
    assert schemas.family(schemas.REBASE) == "patchctl.rebase/"
    assert schemas.REBASE_STATE.startswith(schemas.family(schemas.OLDER_REBASE_STATE[0]))
