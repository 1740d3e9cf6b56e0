"""What a C or C++ file declares and where, read from tree-sitter's C++ grammar: the names
at file scope or in a class body, the locals visible at a point of a function, whether a name
is being declared, and a declared type as the names it is made of. ``cscope`` looks names up
with these. No git here.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from tree_sitter import Node

KIND_SCORE = {
    "macro": 6,
    "prototype": 6,
    "typedef": 6,
    "struct": 6,
    "class": 6,
    "union": 6,
    "enum": 6,
    "enumerator": 5,
    "function": 4,
    "variable": 3,
    "forward": 1,
}
DECLARATORS = {
    "init_declarator",
    "pointer_declarator",
    "reference_declarator",
    "array_declarator",
    "function_declarator",
    "parenthesized_declarator",
    "attributed_declarator",
}
TRANSPARENT = {
    "translation_unit",
    "declaration_list",
    "linkage_specification",
    "namespace_definition",
    "preproc_if",
    "preproc_ifdef",
    "preproc_else",
    "preproc_elif",
    "preproc_elifdef",
    "template_declaration",
}
SPECIFIERS = {
    "struct_specifier": "struct",
    "class_specifier": "class",
    "union_specifier": "union",
    "enum_specifier": "enum",
}
LOCAL = "local"


@dataclass(frozen=True)
class Found:
    """A declaration: the file it is in, the 1-based line of its name, and its kind."""

    file: str
    line: int
    kind: str


@dataclass
class Entry:
    found: Found
    node: Node  # the declaring node (a declaration, a class specifier, a define, ...)
    declarator: Node | None = None  # the declarator of a variable, field or function


def name_of(node: Node | None) -> str:
    return (node.text or b"").decode("utf-8", "replace") if node is not None else ""


def line_of(node: Node) -> int:
    return node.start_point.row + 1


def inner(declarator: Node) -> Node | None:
    """The declarator inside one (``&x`` in a reference declarator has no field name)."""
    found = declarator.child_by_field_name("declarator")
    if found is None:
        found = next((c for c in declarator.named_children if c.type != "attribute"), None)
    return found


def declared_names(declarator: Node | None) -> Iterator[Node]:
    """The name nodes a declarator declares (``*a``, ``b[3]``, ``c = 1``, ``f(int)``)."""
    while declarator is not None and declarator.type in DECLARATORS:
        declarator = inner(declarator)
    if declarator is None:
        return
    if declarator.type == "structured_binding_declarator":
        yield from (c for c in declarator.named_children if c.type == "identifier")
    elif declarator.type in (
        "identifier",
        "field_identifier",
        "type_identifier",
        "operator_name",
        "destructor_name",
    ):
        yield declarator


def is_function(declarator: Node) -> bool:
    while declarator.type in DECLARATORS:
        if declarator.type == "function_declarator":
            return True
        found = inner(declarator)
        if found is None:
            return False
        declarator = found
    return False


def scope_entries(path: str, node: Node, member: bool) -> Iterator[tuple[str, Entry]]:
    """The names one declaration-level node declares at file scope (or, ``member``, in a
    class body), with the entries that say where."""
    t = node.type
    if t in ("preproc_def", "preproc_function_def") and not member:
        if (name := node.child_by_field_name("name")) is not None:
            yield name_of(name), Entry(Found(path, line_of(name), "macro"), node)
        return
    if t in ("declaration", "field_declaration", "type_definition", "function_definition"):
        kind_of = "typedef" if t == "type_definition" else None
        spec = node.child_by_field_name("type")
        declarators = node.children_by_field_name("declarator")
        if (
            spec is not None
            and spec.type in SPECIFIERS
            and (spec.child_by_field_name("body") is not None or not declarators)
        ):
            yield from specifier_entries(path, spec, member)
        for d in declarators:
            function = is_function(d)
            f: Node | None = d
            while f is not None and f.type in DECLARATORS - {"function_declarator"}:
                f = inner(f)
            if (
                t == "function_definition"
                and not member
                and f is not None
                and (inner(f) or f).type == "qualified_identifier"
            ):
                continue  # ``C::f() {}`` defines a member, declared in C
            kind = kind_of or (
                "function"
                if t == "function_definition"
                else "prototype"
                if function
                else "variable"
            )
            for name in declared_names(d):
                yield name_of(name), Entry(Found(path, line_of(name), kind), node, d)
        return
    if t == "alias_declaration":
        if (name := node.child_by_field_name("name")) is not None:
            yield name_of(name), Entry(Found(path, line_of(name), "typedef"), node)
        return
    if t in SPECIFIERS:
        yield from specifier_entries(path, node, member)
        return
    if t in TRANSPARENT or t == "ERROR" or (member and t == "access_specifier"):
        for child in node.named_children:
            yield from scope_entries(path, child, member)


def specifier_entries(path: str, spec: Node, member: bool) -> Iterator[tuple[str, Entry]]:
    name = spec.child_by_field_name("name")
    body = spec.child_by_field_name("body")
    if name is not None and name.type in ("type_identifier", "identifier"):
        kind = SPECIFIERS[spec.type] if body is not None else "forward"
        yield name_of(name), Entry(Found(path, line_of(name), kind), spec)
    if (
        spec.type == "enum_specifier"
        and body is not None
        and not any(c.type in ("class", "struct") for c in spec.children)
    ):
        for e in body.named_children:  # an unscoped enum's enumerators are its scope's
            if e.type == "enumerator" and (n := e.child_by_field_name("name")) is not None:
                yield name_of(n), Entry(Found(path, line_of(n), "enumerator"), e)


def class_bodies(node: Node) -> Iterator[tuple[str, Node]]:
    """Every class, struct or union with a body, by its unqualified name, anywhere outside
    function bodies."""
    if node.type in ("struct_specifier", "class_specifier", "union_specifier"):
        name, body = node.child_by_field_name("name"), node.child_by_field_name("body")
        if name is not None and body is not None:
            yield last_name(name), node
    for child in node.named_children:
        if child.type != "compound_statement":
            yield from class_bodies(child)


def last_name(node: Node) -> str:
    """``a::b::C`` -> ``C``; ``C<T>`` -> ``C``."""
    while node.type in ("qualified_identifier", "template_type"):
        part = node.child_by_field_name("name")
        if part is None:
            break
        node = part
    return name_of(node)


def _parameters(declarator: Node) -> list[Node]:
    while declarator.type != "function_declarator":
        found = inner(declarator)
        if found is None:
            return []
        declarator = found
    params = declarator.child_by_field_name("parameters")
    listed = [c for c in params.named_children if c.type != "comment"] if params else []
    return [] if [name_of(c) for c in listed] == ["void"] else listed


def _fits(declarator: Node, args: int) -> bool:
    params = _parameters(declarator)
    least = sum(1 for c in params if c.type == "parameter_declaration")
    return least <= args and (
        args <= len(params)
        or any(c.type == "variadic_parameter" or c.type.startswith("variadic") for c in params)
    )


def pick(entries: list[Entry], args: int | None) -> Entry | None:
    """``best`` of ``entries``, unless they are overloads of a function: then the one whose
    parameters take ``args`` arguments (a call's), None when that is not exactly one."""
    functions = [e for e in entries if e.declarator is not None and is_function(e.declarator)]

    def signature(e: Entry) -> tuple[str, ...]:
        return (
            tuple(name_of(c.child_by_field_name("type")) for c in _parameters(e.declarator))
            if e.declarator is not None
            else ()
        )

    if len({signature(e) for e in functions}) > 1:
        entries = [
            e
            for e in functions
            if args is not None and e.declarator is not None and _fits(e.declarator, args)
        ]
        if len({signature(e) for e in entries}) != 1:
            return None  # overloads this cannot tell apart
    return best(entries) if entries else None


def call_arguments(node: Node) -> int | None:
    """How many arguments a call passes to the function ``node`` names (None: no call)."""
    callee = (
        node.parent
        if node.parent is not None
        and node.parent.type in ("field_expression", "qualified_identifier")
        else node
    )
    call = callee.parent
    if (
        call is None
        or call.type != "call_expression"
        or call.child_by_field_name("function") != callee
    ):
        return None
    arguments = call.child_by_field_name("arguments")
    return len([c for c in arguments.named_children if c.type != "comment"]) if arguments else 0


def best(entries: list[Entry]) -> Entry:
    """The most declaration-like entry; the first of equals (the caller's order)."""
    return max(enumerate(entries), key=lambda x: (KIND_SCORE.get(x[1].found.kind, 2), -x[0]))[1]


TypeRef = tuple[str, ...]  # outermost first: ``std::vector<llama_layer>`` -> (vector, llama_layer)


def type_ref(spec: Node) -> TypeRef | None:
    if spec.type == "type_descriptor":
        inner = spec.child_by_field_name("type")
        return type_ref(inner) if inner is not None else None
    if spec.type in ("type_identifier", "struct_specifier", "class_specifier", "union_specifier"):
        name = spec.child_by_field_name("name") if spec.type != "type_identifier" else spec
        return (last_name(name),) if name is not None else None
    if spec.type == "qualified_identifier":
        inner = spec.child_by_field_name("name")
        return type_ref(inner) if inner is not None else None
    if spec.type == "template_type":
        outer = name_of(spec.child_by_field_name("name"))
        args = spec.child_by_field_name("arguments")
        first = next((a for a in args.named_children), None) if args else None
        inner = (
            first.child_by_field_name("type")
            if first is not None and first.type == "type_descriptor"
            else None
        )
        return (outer, *(type_ref(inner) or ())) if inner is not None else (outer,)
    return None


def declares(node: Node) -> bool:
    """Whether ``node`` is the name a declaration declares (not a use of it)."""
    child, parent = node, node.parent
    while parent is not None and parent.type in DECLARATORS:
        if (
            parent.child_by_field_name("declarator") not in (child, None)
            and parent.type != "reference_declarator"
        ):
            return False
        child, parent = parent, parent.parent
    if parent is None:
        return False
    if parent.child_by_field_name("name") == child and parent.type in (
        "struct_specifier",
        "class_specifier",
        "union_specifier",
        "enum_specifier",
        "enumerator",
        "preproc_def",
        "preproc_function_def",
        "alias_declaration",
        "namespace_definition",
    ):
        return True
    return child in parent.children_by_field_name("declarator")


def local_decl(node: Node, name: str) -> Entry | None:
    """The declaration of local ``name`` visible at ``node``: before it in an enclosing
    block, in a ``for``/``if``/``while`` header, or a parameter of the enclosing function
    or lambda."""
    child, n = node, node.parent
    while n is not None:
        candidates: list[Node] = []
        if n.type == "compound_statement":
            candidates = [c for c in n.named_children if c.end_byte <= child.start_byte]
        elif n.type in (
            "for_statement",
            "if_statement",
            "while_statement",
            "switch_statement",
            "condition_clause",
        ):
            candidates = [c for c in n.named_children if c != child]
        elif n.type == "for_range_loop" and child != n.child_by_field_name("right"):
            candidates = [n]
        elif n.type in ("function_definition", "lambda_expression"):
            d = n.child_by_field_name("declarator")
            while d is not None and d.type in DECLARATORS - {"function_declarator"}:
                d = inner(d)
            params = d.child_by_field_name("parameters") if d is not None else None
            candidates = list(params.named_children) if params is not None else []
        for c in reversed(candidates):
            if c.type not in (
                "declaration",
                "parameter_declaration",
                "for_range_loop",
                "optional_parameter_declaration",
                "variadic_parameter_declaration",
            ):
                continue
            for d in c.children_by_field_name("declarator"):
                if any(name_of(x) == name for x in declared_names(d)):
                    return Entry(Found("", line_of(d), LOCAL), c, d)
        if n.type == "function_definition":
            return None
        child, n = n, n.parent
    return None
