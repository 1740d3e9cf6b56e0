"""The package layout (issue 27): what each part of patchctl/ may import, and the rules that
hold across it: git runs only in gitrepo/, the model never runs git or prints, only the CLI
exits. Each package's ``__init__`` docstring says the same in words."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "patchctl"
HELPERS = {"errors", "fsutil", "globs", "httpget", "textout", "tomlwrite", "toolout",
           "untrusted"}
PACKAGES = {"model", "gitrepo", "verify", "burden", "rebase", "authoring", "reproducers", "records",
            "release", "ci", "outreach", "commands"}
# a top-level module or package -> what else of patchctl it may import (HELPERS always)
MAY_IMPORT: dict[str, set[str]] = {
    "__init__": set(), "__main__": {"cli"}, "cli": {"commands"}, "manpages": {"cli"},
    **{helper: set() for helper in HELPERS},
    "model": set(),
    "gitrepo": set(),
    "verify": {"model", "gitrepo"},
    "burden": {"model", "gitrepo"},
    "rebase": {"model", "gitrepo"},
    "authoring": {"model", "gitrepo", "verify", "rebase"},
    "reproducers": {"model", "gitrepo", "records"},
    "records": {"model", "gitrepo", "release.documents"},
    "outreach": {"model", "gitrepo", "rebase", "records", "burden"},
    "release": {"model", "gitrepo", "reproducers", "records"},
    "ci": {"model", "gitrepo", "reproducers"},
    "commands": PACKAGES,
}


def _sources() -> dict[str, ast.Module]:
    return {p.relative_to(PACKAGE).as_posix(): ast.parse(p.read_text(encoding="utf-8"))
            for p in sorted(PACKAGE.rglob("*.py"))}


def _part(rel: str) -> str:
    return rel.split("/")[0] if "/" in rel else rel.removesuffix(".py")


def _imported(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, what) for each patchctl module a file imports, lazily or not: ``model.stack``,
    ``gitrepo``, ``release.documents``..."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name.split(".", 1)[1]) for a in node.names
                    if a.name.startswith("patchctl.")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "patchctl":
                out += [(node.lineno, a.name) for a in node.names if a.name != "__version__"]
            elif node.module.startswith("patchctl."):
                inner = node.module.split(".", 1)[1]
                out += [(node.lineno, f"{inner}.{a.name}") for a in node.names]
    return out


def test_the_top_level_holds_the_cli_and_the_helpers_and_each_package_says_what_it_owns(
) -> None:
    """Issue 27: a module added beside cli.py is placed in a package, or is a helper."""
    tops = {p.stem for p in PACKAGE.glob("*.py")}
    assert tops == set(MAY_IMPORT) - PACKAGES
    dirs = {p.parent.relative_to(PACKAGE).parts[0] for p in PACKAGE.rglob("*.py")
            if p.parent != PACKAGE}
    assert dirs == PACKAGES
    for name in dirs:
        init = ast.parse((PACKAGE / name / "__init__.py").read_text(encoding="utf-8"))
        assert ast.get_docstring(init), f"patchctl/{name}/__init__.py has no docstring"


def test_each_part_imports_only_what_it_may() -> None:
    """Issue 27: the dependencies the packages' docstrings name are the ones they have."""
    wrong = []
    for rel, tree in _sources().items():
        part = _part(rel)
        if part not in MAY_IMPORT:
            wrong.append(f"patchctl/{rel}: not placed (add it to MAY_IMPORT, or move it)")
            continue
        allowed = MAY_IMPORT[part]
        for line, what in _imported(tree):
            if what.split(".")[0] in HELPERS | {part}:
                continue
            if part in HELPERS or not any(what == a or what.startswith(a + ".")
                                          for a in allowed):
                wrong.append(f"patchctl/{rel}:{line}: imports patchctl.{what}")
    assert wrong == []


def test_only_gitrepo_runs_git() -> None:
    """Issue 27: no module outside gitrepo/ imports GitPython or builds a git argv."""
    wrong = []
    for rel, tree in _sources().items():
        if rel.startswith("gitrepo/"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) \
                    else [node.module or ""]
                if any(n == "git" or n.startswith("git.") for n in names):
                    wrong.append(f"patchctl/{rel}:{node.lineno}: imports GitPython")
            elif isinstance(node, ast.List | ast.Tuple) and node.elts \
                    and isinstance(node.elts[0], ast.Constant) and node.elts[0].value == "git":
                wrong.append(f"patchctl/{rel}:{node.lineno}: a git command line")
    assert wrong == []


def test_the_model_never_runs_git_or_prints() -> None:
    """Issue 27: model/ takes what git knows as arguments and returns results; it starts
    no process and writes nothing to a terminal."""
    wrong = []
    for rel, tree in _sources().items():
        if not rel.startswith("model/"):
            continue
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            if any(n.split(".")[0] in {"subprocess", "click", "git"} for n in names):
                wrong.append(f"patchctl/{rel}:{node.lineno}: imports {names}")
            if isinstance(node, ast.Name) and node.id == "print":
                wrong.append(f"patchctl/{rel}:{node.lineno}: print")
            if isinstance(node, ast.Attribute) and node.attr in {"stdout", "stderr", "system"} \
                    and isinstance(node.value, ast.Name) and node.value.id in {"sys", "os"}:
                wrong.append(f"patchctl/{rel}:{node.lineno}: {node.value.id}.{node.attr}")
    assert wrong == []


def test_only_the_cli_exits() -> None:
    """Issue 27: library code raises patchctl.errors; cli.py alone turns them into an exit
    (manpages' ``python -m`` entry point aside)."""
    wrong = []
    for rel, tree in _sources().items():
        if rel in {"cli.py", "manpages.py"}:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in {"exit", "_exit"} \
                    and isinstance(node.value, ast.Name) and node.value.id in {"sys", "os"}:
                wrong.append(f"patchctl/{rel}:{node.lineno}: {node.value.id}.{node.attr}")
            if isinstance(node, ast.Name) and node.id in {"SystemExit", "exit", "quit"}:
                wrong.append(f"patchctl/{rel}:{node.lineno}: {node.id}")
    assert wrong == []
