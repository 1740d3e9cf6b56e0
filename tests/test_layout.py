"""The package layout: the rooms (every module), the floors they stand on, and the rules that
hold across them. Imports only go down a floor or across one, never up and never in a
circle; each part imports only what its ``__init__`` docstring says it may; git runs only in
gitrepo/, the model never runs git or prints, only the CLI exits; no module is over 500
lines. ``python tests/test_layout.py`` prints the drawing's figures."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "patchctl"
HELPERS = {"cparse", "errors", "fsutil", "globs", "httpget", "procs", "textout", "tomlwrite",
           "toolout", "untrusted"}
PACKAGES = {"model", "gitrepo", "verify", "burden", "rebase", "authoring", "reproducers",
            "records", "release", "ci", "outreach", "commands"}
# Bottom first. A part may import from its own floor and the floors below it.
FLOORS: list[set[str]] = [
    {"__init__", "errors"},  # errors.py imports nothing of patchctl
    HELPERS - {"errors"},  # the rest of the ground floor: small helpers
    {"model", "gitrepo"},  # the two foundations: the stack's files, and git
    {"verify", "burden", "rebase", "records", "reproducers", "ci"},  # one concern each
    {"authoring", "outreach", "release"},  # built on several concerns
    {"commands"},
    {"cli"},
    {"__main__", "manpages"},
]
FLOOR = {part: i for i, parts in enumerate(FLOORS) for part in parts}
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
    "records": {"model", "gitrepo"},
    "outreach": {"model", "gitrepo", "rebase", "records", "burden"},
    "release": {"model", "gitrepo", "reproducers", "records"},
    "ci": {"model", "gitrepo", "reproducers"},
    "commands": PACKAGES - {"commands"},
}
MAX_LINES = 500
# Where the size rule looks: Python in patchctl/ and bench/, the worker's C++ in native/src.
SIZED = ("patchctl/**/*.py", "bench/*.py", "native/src/**/*.cpp", "native/src/**/*.hpp",
         "native/src/**/*.h")

# TEMPORARY, for the lead to empty when the branches below are merged: work that other
# branches are doing at the same time, which this branch must not touch. Each entry fails
# the test once it is no longer needed, so none outlives its work.
BEING_SPLIT: set[str] = set()
CIRCLES_BEING_BROKEN: list[set[str]] = []
DOCSTRINGS_BEING_WRITTEN: set[str] = set()


def _sources() -> dict[str, ast.Module]:
    return {p.relative_to(PACKAGE).as_posix(): ast.parse(p.read_text(encoding="utf-8"))
            for p in sorted(PACKAGE.rglob("*.py"))}


def _part(rel: str) -> str:
    return rel.split("/")[0] if "/" in rel else rel.removesuffix(".py")


def _module(rel: str) -> str:
    """A file's module below patchctl: ``gitrepo/core.py`` is ``gitrepo.core``, a package's
    ``__init__.py`` is the package, patchctl's own ``__init__.py`` is ``__init__``."""
    name = rel.removesuffix(".py").replace("/", ".")
    return name.removesuffix(".__init__") if "/" in rel else name


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


def _graph() -> dict[str, dict[str, int]]:
    """module -> {module it imports: the first line that does}. ``from patchctl.gitrepo import
    run_git`` imports the package ``gitrepo`` (its ``__init__`` runs), ``from patchctl.gitrepo
    import history`` the module ``gitrepo.history``."""
    sources = _sources()
    modules = {_module(rel) for rel in sources}
    graph: dict[str, dict[str, int]] = {}
    for rel, tree in sources.items():
        edges = graph.setdefault(_module(rel), {})
        for line, what in _imported(tree):
            parts = what.split(".")
            while parts and ".".join(parts) not in modules:
                parts.pop()
            target = ".".join(parts) or "__init__"
            if target != _module(rel):
                edges.setdefault(target, line)
    return graph


def _circles(graph: dict[str, dict[str, int]]) -> list[set[str]]:
    """The modules that import each other, directly or round a longer circle: each strongly
    connected set of two or more (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:  # v and what is above it on the stack reach each other
            circle = {stack.pop()}
            while v not in circle:
                circle.add(stack.pop())
            if len(circle) > 1:
                found.append(circle)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found, key=sorted)


def _upward(graph: dict[str, dict[str, int]]) -> list[str]:
    """Each import of a module on a higher floor than the importer's."""
    def floor(module: str) -> int:
        return FLOOR.get(module.split(".")[0], -1)

    return [f"patchctl.{a} (line {line}) imports patchctl.{b}: floor {floor(a)} -> {floor(b)}"
            for a, edges in sorted(graph.items()) for b, line in sorted(edges.items())
            if floor(b) > floor(a)]


def _sizes() -> dict[str, int]:
    """Lines of every module the size rule covers, by its path from the repository root."""
    return {p.relative_to(ROOT).as_posix(): len(p.read_bytes().splitlines())
            for pattern in SIZED for p in sorted(ROOT.glob(pattern))}


def _may_import_line(init: Path) -> set[str] | None:
    """The parts a package's ``__init__`` docstring says it may import (the first sentence
    of its ``May import:`` paragraph; "every package" is every one); None when it has no
    such paragraph."""
    doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
    paragraph = next((p for p in doc.split("\n\n") if p.startswith("May import:")), None)
    if paragraph is None:
        return None
    said = re.split(r"\.(?:\s|$)", paragraph)[0]  # the first sentence; the rest explains
    named = set(re.findall(r"``([\w.]+)``", said)) & (PACKAGES | set(MAY_IMPORT))
    return named | (PACKAGES if "every package" in said else set())


def test_the_top_level_holds_the_cli_and_the_helpers_and_each_package_says_what_it_owns(
) -> None:
    """A module added beside cli.py is placed in a package, or is a helper, and stands on a
    floor."""
    tops = {p.stem for p in PACKAGE.glob("*.py")}
    assert tops == set(MAY_IMPORT) - PACKAGES
    dirs = {p.parent.relative_to(PACKAGE).parts[0] for p in PACKAGE.rglob("*.py")
            if p.parent != PACKAGE}
    assert dirs == PACKAGES
    assert set(FLOOR) == set(MAY_IMPORT) and sum(map(len, FLOORS)) == len(FLOOR)
    for name in dirs:
        init = ast.parse((PACKAGE / name / "__init__.py").read_text(encoding="utf-8"))
        assert ast.get_docstring(init), f"patchctl/{name}/__init__.py has no docstring"


def test_each_package_docstring_names_what_it_may_import() -> None:
    """The ``May import:`` line of each package's ``__init__`` is the rule this file holds
    it to: records' still named release.documents after the worker identity's schema moved
    below it, so the words and the imports had come apart."""
    wrong = []
    for name in sorted(PACKAGES):
        said = _may_import_line(PACKAGE / name / "__init__.py")
        if said is None:
            if name not in DOCSTRINGS_BEING_WRITTEN:
                wrong.append(f"patchctl/{name}/__init__.py: no 'May import:' paragraph")
        elif said - {name} != {a.split(".")[0] for a in MAY_IMPORT[name]}:
            wrong.append(f"patchctl/{name}/__init__.py: says {sorted(said - {name})}, "
                         f"MAY_IMPORT says {sorted(MAY_IMPORT[name])}")
    stale = sorted(n for n in DOCSTRINGS_BEING_WRITTEN
                   if _may_import_line(PACKAGE / n / "__init__.py") is not None)
    assert wrong == [] and stale == [], (wrong, f"no longer needed: {stale}")


def test_each_part_imports_only_what_it_may() -> None:
    """The dependencies the packages' docstrings name are the ones they have."""
    wrong = []
    for rel, tree in _sources().items():
        part = _part(rel)
        if part not in MAY_IMPORT:
            wrong.append(f"patchctl/{rel}: not placed (add it to MAY_IMPORT, or move it)")
            continue
        allowed = MAY_IMPORT[part]
        for line, what in _imported(tree):
            if what.split(".")[0] in HELPERS | {part}:
                continue  # helpers (their floors are held below) and the part's own modules
            if part in HELPERS or not any(what == a or what.startswith(a + ".")
                                          for a in allowed):
                wrong.append(f"patchctl/{rel}:{line}: imports patchctl.{what}")
    assert wrong == []


def test_imports_only_go_down_or_across() -> None:
    """No module imports one on a floor above its own: errors.py imported toolout.py for a
    git error's message, and records/evidence.py imported release/documents.py for the
    worker identity's schema, so the bottom of each stood on what was built on top of it."""
    assert _upward(_graph()) == []


def test_no_modules_import_each_other() -> None:
    """No circle of imports, however long: errors -> toolout -> untrusted -> fsutil -> errors
    on the ground floor, and gitrepo's history and index, each needed the other loaded
    first, so neither could be read, tested or changed on its own."""
    circles = _circles(_graph())
    assert [sorted(c) for c in circles if c not in CIRCLES_BEING_BROKEN] == []
    stale = [sorted(c) for c in CIRCLES_BEING_BROKEN if c not in circles]
    assert stale == [], f"no longer a circle, drop it from CIRCLES_BEING_BROKEN: {stale}"


def test_no_module_is_over_500_lines() -> None:
    """A module over 500 lines holds more than one thing (bench/pipeline_vs_rpc.py had grown
    to 702, native/src/stage/stage_server.cpp to 530): it is split along its seams."""
    sizes = _sizes()
    assert sizes, "the size rule found no modules"
    over = sorted(f"{path}: {n} lines" for path, n in sizes.items()
                  if n > MAX_LINES and path not in BEING_SPLIT)
    stale = sorted(path for path in BEING_SPLIT if sizes.get(path, 0) <= MAX_LINES)
    assert over == [] and stale == [], (over, f"no longer needed in BEING_SPLIT: {stale}")


def test_only_gitrepo_runs_git() -> None:
    """No module outside gitrepo/ imports GitPython or builds a git argv."""
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
    """model/ takes what git knows as arguments and returns results; it starts no process
    and writes nothing to a terminal."""
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
    """Library code raises patchctl.errors; cli.py alone turns them into an exit (manpages'
    ``python -m`` entry point aside)."""
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


def drawing() -> dict[str, object]:
    """The figures of the layout: rooms (modules under patchctl/), floors, circles, upward
    imports, and the largest modules the size rule covers."""
    graph = _graph()
    sizes = _sizes()
    largest = {}
    for where in ("patchctl/", "bench/", "native/src/"):
        path = max((p for p in sizes if p.startswith(where)), key=lambda p: sizes[p])
        largest[f"largest in {where}"] = f"{path} ({sizes[path]} lines)"
    return {"rooms": len(graph), "floors": len(FLOORS),
            "circles": [" <-> ".join(sorted(c)) for c in _circles(graph)],
            "upward": _upward(graph), **largest,
            f"over {MAX_LINES} lines": sorted(f"{p} ({n})" for p, n in sizes.items()
                                              if n > MAX_LINES)}


if __name__ == "__main__":
    for key, value in drawing().items():
        if isinstance(value, list):
            print(f"{key}: {len(value)}", *(f"  {v}" for v in value), sep="\n")
        else:
            print(f"{key}: {value}")
