"""Which declaration a name in C or C++ code means, from where it is used: tree-sitter's C++
grammar parses each file, and a name is looked up as a compiler would, in a small way.

A bare name is first a local (a declaration before it in an enclosing block, a parameter, a
loop variable), then a member of the enclosing class and its bases, then a name declared at
file scope in the file or a header it includes (transitively, ``#include`` by path). ``a.b``
and ``a->b`` look ``b`` up in the class of ``a``'s declared type (``auto`` from its
initializer; ``std::vector<T>[i]`` and ``std::unique_ptr<T>->`` as ``T``); ``A::b`` in class
or enum ``A``. Whatever this cannot follow (overloads, templates' dependent names, a call's
result, macros' expansions) is unresolved (None) and a local is ``LOCAL``: the caller links
neither. No git here: files come from a reader function (path -> bytes or None).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from tree_sitter import Node, Query, QueryCursor, Tree

from patchctl.cparse import LANGUAGE, parser
from patchctl.outreach.csyntax import (
    DECLARATORS,
    LOCAL,
    Entry,
    Found,
    TypeRef,
    call_arguments,
    class_bodies,
    declares,
    inner,
    last_name,
    line_of,
    local_decl,
    name_of,
    pick,
    scope_entries,
    type_ref,
)

__all__ = ["LOCAL", "Found", "Resolver"]

_NAMES = Query(
    LANGUAGE, "[(identifier) (field_identifier) (type_identifier) (namespace_identifier)] @name"
)
_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"\n]+)[>"]', re.M)
# declaration-like kinds first: a prototype or a definition beats a forward declaration
_WRAPPERS = {"unique_ptr", "shared_ptr", "weak_ptr", "optional", "reference_wrapper"}
_CONTAINERS = {
    "vector",
    "array",
    "span",
    "deque",
    "list",
    "set",
    "map",
    "unordered_map",
    "unordered_set",
    "initializer_list",
}
_DEPTH = 6  # how far a type is followed through members, bases and initializers


@dataclass
class _File:
    path: str
    tree: Tree
    includes: list[str]
    names: dict[str, list[Entry]] = field(default_factory=dict)  # file scope
    classes: dict[str, list[Node]] = field(default_factory=dict)  # bodies, by class name


class Resolver:
    """Parses files on demand (``read``: path -> text, None when absent) and resolves uses
    of names in them. ``files``: every path of the tree, to find ``#include`` targets."""

    def __init__(self, read: Callable[[str], bytes | None], files: set[str]) -> None:
        self._read = read
        self._paths = files
        dirs = {posixpath.dirname(p) for p in files}
        self._roots = [
            *sorted(
                d for d in dirs if d.rsplit("/", 1)[-1] in ("include", "src") and d.count("/") <= 1
            ),
            "",
        ]
        self._parser = parser()
        self._files: dict[str, _File | None] = {}
        self._closures: dict[str, list[str]] = {}

    def _file(self, path: str) -> _File | None:
        if path not in self._files:
            data = self._read(path)
            if data is None:
                self._files[path] = None
            else:
                tree = self._parser.parse(data)
                f = _File(
                    path,
                    tree,
                    [m.decode("utf-8", "replace").strip() for m in _INCLUDE.findall(data)],
                )
                for name, entry in scope_entries(path, tree.root_node, member=False):
                    f.names.setdefault(name, []).append(entry)
                for name, node in class_bodies(tree.root_node):
                    f.classes.setdefault(name, []).append(node)
                self._files[path] = f
        return self._files[path]

    def _include(self, includer: str, name: str) -> str | None:
        """The file ``#include name`` in ``includer`` reads: beside it, else in a source
        root (``include/``, ``src/``, ``ggml/include/``, ...)."""
        for root in [posixpath.dirname(includer), *self._roots]:
            candidate = posixpath.normpath(posixpath.join(root, name))
            if candidate in self._paths:
                return candidate
        return None

    def closure(self, path: str) -> list[str]:
        """``path`` and the files it includes, transitively, in include order."""
        if path not in self._closures:
            seen, queue = [path], [path]
            while queue:
                f = self._file(queue.pop(0))
                for name in f.includes if f else []:
                    target = self._include(f.path, name) if f else None
                    if target is not None and target not in seen:
                        seen.append(target)
                        queue.append(target)
            self._closures[path] = seen
        return self._closures[path]

    def _global(self, tu: str, name: str, args: int | None = None) -> Entry | None:
        found = [e for p in self.closure(tu) if (f := self._file(p)) for e in f.names.get(name, [])]
        return pick(found, args)

    def _class(self, tu: str, name: str, depth: int = 0) -> tuple[str, Node] | None:
        """The body of class ``name`` as the translation unit ``tu`` sees it (a typedef or
        alias followed)."""
        for p in self.closure(tu):
            f = self._file(p)
            if f is not None and name in f.classes:
                return p, f.classes[name][0]
        entry = self._global(tu, name)
        if entry is not None and entry.found.kind == "typedef" and depth < _DEPTH:
            spec = entry.node.child_by_field_name("type")
            ref = type_ref(spec) if spec is not None else None
            if ref and ref[0] != name:
                return self._class(tu, ref[0], depth + 1)
        return None

    def _member(
        self, tu: str, cls: tuple[str, Node], name: str, depth: int = 0, args: int | None = None
    ) -> Entry | None:
        path, spec = cls
        body = spec.child_by_field_name("body")
        if body is None or name == last_name(spec.child_by_field_name("name") or spec):
            return None  # a class's own name (its constructors) is the class, not a member
        found = [
            e
            for child in body.named_children
            for n, e in scope_entries(path, child, member=True)
            if n == name
        ]
        if found:
            return pick(found, args)
        if depth >= _DEPTH:
            return None
        for clause in (c for c in spec.children if c.type == "base_class_clause"):
            for base in clause.named_children:
                if base.type in ("type_identifier", "qualified_identifier", "template_type"):
                    parent = self._class(tu, last_name(base))
                    if parent is not None and (
                        hit := self._member(tu, parent, name, depth + 1, args)
                    ):
                        return hit
        return None

    def uses(self, path: str, name: str, rows: set[int]) -> list[Node]:
        """The nodes naming ``name`` on lines ``rows`` (1-based) of ``path``."""
        f = self._file(path)
        if f is None or not rows:
            return []
        cursor = QueryCursor(_NAMES)
        cursor.set_point_range((min(rows) - 1, 0), (max(rows), 0))
        nodes = cursor.captures(f.tree.root_node).get("name", [])
        return sorted(
            (n for n in nodes if line_of(n) in rows and name_of(n) == name),
            key=lambda n: n.start_byte,
        )

    def resolve(self, tu: str, node: Node) -> Found | str | None:
        """The declaration ``node`` (a name in file ``tu``) means: a ``Found``, ``LOCAL``
        for a local or parameter, or None when this cannot tell."""
        entry = self._resolve(tu, node, 0)
        return entry if isinstance(entry, str) or entry is None else entry.found

    def _resolve(self, tu: str, node: Node, depth: int) -> Entry | str | None:
        parent = node.parent
        if parent is None or declares(node):
            return None  # the code declares this name itself
        if parent.type == "field_expression" and parent.child_by_field_name("field") == node:
            cls = self._object_class(tu, parent, depth)
            return self._member(tu, cls, name_of(node), args=call_arguments(node)) if cls else None
        if parent.type == "qualified_identifier" and parent.child_by_field_name("name") == node:
            return self._qualified(tu, parent, call_arguments(node))
        if (
            parent.type in ("field_designator", "template_method", "destructor_name")
            or node.type == "namespace_identifier"
        ):
            return None
        if node.type == "field_identifier":
            return None  # a member named where no object says whose
        return self._bare(tu, node, name_of(node))

    def _qualified(self, tu: str, q: Node, args: int | None) -> Entry | None:
        scope = q.child_by_field_name("scope")
        name = name_of(q.child_by_field_name("name"))
        if scope is None:
            return self._global(tu, name, args)
        outer = last_name(scope)
        if outer == "std":
            return None
        cls = self._class(tu, outer)
        if cls is not None:
            return self._member(tu, cls, name, args=args)
        enum = self._global(tu, outer)
        if enum is None or enum.node.type != "enum_specifier":
            return None  # nor is a namespace's member followed
        body = enum.node.child_by_field_name("body")
        for e in body.named_children if body is not None else []:
            if e.type == "enumerator" and name_of(n := e.child_by_field_name("name")) == name:
                return Entry(Found(enum.found.file, line_of(n or e), "enumerator"), e)
        return None

    def _bare(self, tu: str, node: Node, name: str) -> Entry | str | None:
        local = local_decl(node, name)
        if local is not None:
            return LOCAL
        cls = self._enclosing_class(tu, node)
        args = call_arguments(node)
        if cls is not None and (hit := self._member(tu, cls, name, args=args)):
            return hit
        return self._global(tu, name, args)

    def _enclosing_class(self, tu: str, node: Node) -> tuple[str, Node] | None:
        """The class whose scope ``node`` is in: a member function's (defined in the class
        or as ``C::f``), or the class body it is written in."""
        n: Node | None = node
        while n is not None:
            if (
                n.type in ("struct_specifier", "class_specifier", "union_specifier")
                and n.child_by_field_name("body") is not None
            ):
                name = n.child_by_field_name("name")
                return self._class(tu, last_name(name)) if name is not None else None
            if n.type == "function_definition":
                d = n.child_by_field_name("declarator")
                while d is not None and d.type in DECLARATORS:
                    d = inner(d)
                if d is not None and d.type == "qualified_identifier":
                    scope = d.child_by_field_name("scope")
                    return self._class(tu, last_name(scope)) if scope is not None else None
            n = n.parent
        return None

    def _object_class(self, tu: str, access: Node, depth: int) -> tuple[str, Node] | None:
        """The class of the object in ``obj.field`` or ``obj->field``."""
        ref = self._expr_type(tu, access.child_by_field_name("argument"), depth + 1)
        if not ref:
            return None
        arrow = name_of(access.child_by_field_name("operator")) == "->"
        if ref[0] in _WRAPPERS:
            if not arrow or len(ref) < 2:
                return None
            ref = ref[1:]
        if ref[0] in _CONTAINERS:
            return None  # the container's own members: the standard library's
        return self._class(tu, ref[0])

    def _expr_type(self, tu: str, expr: Node | None, depth: int) -> TypeRef | None:
        if expr is None or depth > _DEPTH:
            return None
        t = expr.type
        if t == "this":
            cls = self._enclosing_class(tu, expr)
            name = cls[1].child_by_field_name("name") if cls is not None else None
            return (last_name(name),) if name is not None else None
        if t in ("parenthesized_expression", "pointer_expression"):
            inner = expr.child_by_field_name("argument") or next(iter(expr.named_children), None)
            return self._expr_type(tu, inner, depth + 1)
        if t == "subscript_expression":
            ref = self._expr_type(tu, expr.child_by_field_name("argument"), depth + 1)
            return ref[1:] if ref and ref[0] in _CONTAINERS and len(ref) > 1 else ref
        if t in ("identifier", "field_expression", "qualified_identifier"):
            name = (
                expr
                if t == "identifier"
                else expr.child_by_field_name("field" if t == "field_expression" else "name")
            )
            if name is None:
                return None
            entry = (
                self._resolve(tu, name, depth + 1)
                if t != "identifier"
                else self._variable(tu, name, depth)
            )
            return self._entry_type(tu, entry, depth) if isinstance(entry, Entry) else None
        if t == "call_expression":
            fn = expr.child_by_field_name("function")
            if fn is not None and fn.type == "identifier":
                entry = self._bare(tu, fn, name_of(fn))
                return self._entry_type(tu, entry, depth) if isinstance(entry, Entry) else None
        return None

    def _variable(self, tu: str, name: Node, depth: int) -> Entry | None:
        """A bare name as a variable, a local's declaration included (for its type)."""
        found = local_decl(name, name_of(name)) or self._bare(tu, name, name_of(name))
        return found if isinstance(found, Entry) else None

    def _entry_type(self, tu: str, entry: Entry, depth: int) -> TypeRef | None:
        spec = entry.node.child_by_field_name("type")
        if spec is None:
            return None
        if spec.type == "placeholder_type_specifier" and entry.declarator is not None:
            d = entry.declarator
            value = d.child_by_field_name("value") if d.type == "init_declarator" else None
            if value is not None and value.type == "initializer_list":
                return None
            return self._expr_type(tu, value, depth + 1)
        return type_ref(spec)
