"""A C or C++ file as a tree of items a merge can take one by one: top-level declarations
(functions, prototypes, variables, typedefs, struct, class, union and enum bodies, macros,
includes), and inside a container (a namespace, ``extern "C"``, a struct or enum body, an
``#if`` block, a function body, a loop's or an ``if``'s block, a ``switch`` case) its own
items, read with tree-sitter's C++ grammar (patchctl/cparse.py).

Each item's text is a slice of the file, and the slices of one level follow each other
exactly: an item owns the comments and blank lines before it and the rest of its own last
line (its ``;``, ``,`` or trailing comment), so joining the items of a level, with the
container's head before them and its tail after, gives back the container's text, and the
file's top level gives back the file, byte for byte.

An item's key names it the same way in each version of the file: a function by its
declarator (name and parameters, so overloads differ), a declaration by what it declares,
a struct or enum by its name, an enumerator, a macro, an include by theirs, an ``#if`` by
its condition, a loop or ``if`` by its header, a case by its label, a statement that
assigns by what it assigns, a call by what it calls, a ``return`` as such (changed, each is
still the same item, so a change beside it is not a change of it); anything else (another
statement, an ``ERROR`` node) by its text, so changing it is removing one item and adding
another. ``keyed`` gives a level's final keys: a name that stands twice in a version falls
back to the items' texts. No git here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tree_sitter import Node

# Nodes whose items are their own named children (less a few fields, below).
SELF_LISTS = {
    "translation_unit",
    "preproc_if",
    "preproc_ifdef",
    "case_statement",
    "compound_statement",
    "declaration_list",
    "field_declaration_list",
    "enumerator_list",
}
SPECIFIERS = {"struct_specifier", "class_specifier", "union_specifier", "enum_specifier"}
LOOPS = {"for_statement", "for_range_loop", "while_statement", "do_statement", "switch_statement"}
NOT_ITEMS = {"name", "condition", "alternative", "value"}  # fields of a list node's header
WRAPPERS = {
    "init_declarator",
    "pointer_declarator",
    "reference_declarator",
    "array_declarator",
    "parenthesized_declarator",
    "attributed_declarator",
}


Mark = tuple[str, bytes]  # a node tree-sitter could not parse: ERROR or MISSING, its text


def marks(node: Node) -> Counter[Mark]:
    """The nodes under ``node`` tree-sitter could not parse, by kind and text (where they
    stand left out: the same error moved by an edit above it is the same error)."""
    from patchctl import cparse

    return Counter(
        (f"MISSING {n.type}" if n.is_missing else n.type, _text(n)) for n in cparse.errors(node)
    )


@dataclass
class Item:
    """One item of a level: its key, its whole text, and where it starts (1-based line);
    a container also has its head, its items and its tail (``text`` is their join)."""

    key: str | None  # None: known by its text (``keyed`` fills it in)
    text: bytes
    line: int  # 1-based line of its file where its node starts
    errors: Counter[Mark]  # the nodes in it tree-sitter could not parse (``marks``)
    node_text: bytes = b""  # the node's own text, without the comments before it
    head_: bytes = b""
    items_: list[Item] | None = None
    tail_: bytes = b""
    kind: str = ""
    lead: int = 0  # newlines in its text before its node (blank lines, comments)
    merged: bool = False  # made by a merge of three versions of it (rebase/declmerge.py)
    # what makes its head, items and tail, run when one is first read: most items of a file
    # are the same in the three versions and are never opened
    opener: Callable[[], tuple[bytes, list[Item], bytes] | None] | None = field(
        default=None, repr=False, compare=False
    )

    def _open(self) -> None:
        if self.opener is not None:
            got, self.opener = self.opener(), None
            if got is not None:
                self.head_, self.items_, self.tail_ = got

    @property
    def head(self) -> bytes:
        self._open()
        return self.head_

    @property
    def items(self) -> list[Item] | None:
        self._open()
        return self.items_

    @property
    def tail(self) -> bytes:
        self._open()
        return self.tail_

    @property
    def lines(self) -> int:
        """How many lines its node spans."""
        return self.node_text.count(b"\n") + 1

    @property
    def name(self) -> str:
        """The item in words, for a message: ``function f(void)``, ``statement `x++;```."""
        if self.key and not self.key.startswith("text ") and not self.kind.endswith("statement"):
            return self.key
        body = " ".join(self.node_text.decode("utf-8", "replace").split())
        return f"{self.kind.replace('_', ' ')} `{body[:48]}{'...' if len(body) > 48 else ''}`"


@dataclass
class Tree:
    """One version of a file: its top-level container, and its bytes."""

    root: Item
    data: bytes
    parsed: Any = None  # tree-sitter's tree, which the items not yet opened read


def norm(data: bytes | None) -> str:
    return " ".join((data or b"").decode("utf-8", "replace").split())


def _text(node: Node | None) -> bytes:
    return node.text or b"" if node is not None else b""


def _ident(declarator: Node) -> str:
    """What a declarator declares, as it reads: ``x`` of ``x = 1``, ``f(int)`` of a
    prototype, ``*p`` of a pointer."""
    while declarator.type == "init_declarator":
        inner = declarator.child_by_field_name("declarator")
        if inner is None:
            break
        declarator = inner
    return norm(_text(declarator))


def _specifier(node: Node) -> Node | None:
    """The struct, class, union or enum with a body that a declaration declares."""
    spec = node.child_by_field_name("type")
    if spec is not None and spec.type in SPECIFIERS and spec.child_by_field_name("body"):
        return spec
    return None


def key_of(node: Node) -> str | None:
    """The node's name (see the module's docstring); None when only its text names it."""
    t = node.type
    if t == "function_definition":
        d = node.child_by_field_name("declarator")
        return f"function {norm(_text(d))}" if d is not None else None
    if t in ("declaration", "field_declaration", "type_definition"):
        ds = node.children_by_field_name("declarator")
        spec = node.child_by_field_name("type")
        if ds:
            word = {"type_definition": "typedef", "field_declaration": "field"}.get(t, t)
            return f"{word} {', '.join(_ident(d) for d in ds)}"
        return key_of(spec) if spec is not None and spec.type in SPECIFIERS else None
    if t in SPECIFIERS:
        name = node.child_by_field_name("name")
        return f"{t.split('_')[0]} {norm(_text(name))}" if name is not None else None
    if t == "enumerator":
        return f"enumerator {norm(_text(node.child_by_field_name('name')))}"
    if t in ("preproc_def", "preproc_function_def"):
        return f"#define {norm(_text(node.child_by_field_name('name')))}"
    if t == "preproc_include":
        return f"#include {norm(_text(node.child_by_field_name('path')))}"
    if t in ("preproc_if", "preproc_ifdef"):
        cond = node.child_by_field_name("condition") or node.child_by_field_name("name")
        return f"{norm(_text(node.children[0]))} {norm(_text(cond))}"
    if t == "namespace_definition":
        return f"namespace {norm(_text(node.child_by_field_name('name')))}"
    if t == "linkage_specification":
        body = node.child_by_field_name("body")
        value = norm(_text(node.child_by_field_name("value")))
        if body is not None and body.type != "declaration_list":
            within = key_of(body)
            return f"extern {value} {within}" if within else None
        return f"extern {value}"
    if t == "template_declaration":
        last = node.named_children[-1] if node.named_children else None
        params = node.child_by_field_name("parameters")
        found = key_of(last) if last is not None else None
        return f"template{norm(_text(params))} {found}" if found else None
    if t in ("if_statement", "while_statement", "switch_statement"):
        return f"{t.split('_')[0]} {norm(_text(node.child_by_field_name('condition')))}"
    if t in ("for_statement", "for_range_loop"):
        body = node.child_by_field_name("body")
        end = body.start_byte - node.start_byte if body is not None else None
        return norm(_text(node)[:end])
    if t == "expression_statement" and node.named_children:
        e = node.named_children[0]
        if e.type == "assignment_expression":
            op = e.child_by_field_name("operator")
            return f"assign {norm(_text(e.child_by_field_name('left')))} {norm(_text(op))}"
        if e.type == "call_expression":
            return f"call {norm(_text(e.child_by_field_name('function')))}"
        return None
    if t == "return_statement":
        return "return"
    if t == "compound_statement":  # a bare block, or an if's: the block where it stands
        return "block"
    if t == "else_clause":
        return "else"
    if t == "case_statement":
        label = node.child_by_field_name("value")
        return f"case {norm(_text(label))}" if label is not None else "default"
    return None


def list_of(node: Node) -> Node | None:
    """The node whose named children are ``node``'s items; None for a leaf."""
    t = node.type
    if t in SELF_LISTS:
        return node
    if t == "function_definition":
        return node.child_by_field_name("body")
    if t in ("namespace_definition", "linkage_specification", *SPECIFIERS):
        body = node.child_by_field_name("body")
        return body if body is not None and body.type in SELF_LISTS else None
    if t in ("declaration", "field_declaration", "type_definition"):
        spec = _specifier(node)
        return list_of(spec) if spec is not None else None
    if t == "template_declaration":
        return list_of(node.named_children[-1]) if node.named_children else None
    if t in ("if_statement", "else_clause"):  # its block, and its else
        return node
    if t in LOOPS:
        body = node.child_by_field_name("body")
        return body if body is not None and body.type == "compound_statement" else None
    return None


def _items(lst: Node) -> list[Node]:
    fields = {lst.child_by_field_name(f) for f in NOT_ITEMS} - {None}
    return [c for c in lst.named_children if c.type != "comment" and c not in fields]


def _not_comment(node: Node | None, step: str) -> Node | None:
    while node is not None and node.type == "comment":
        node = getattr(node, step)
    return node


def _line_end(data: bytes, at: int, limit: int) -> int:
    """Just past the newline ending the line ``at`` is on, when it comes before ``limit``;
    else ``at``."""
    nl = data.find(b"\n", at, limit)
    return nl + 1 if nl >= 0 else at


def build(data: bytes, node: Node, start: int, end: int) -> Item:
    """``node`` as the item ``data[start:end]`` (its slice, with what it owns around it)."""
    item = Item(
        key_of(node),
        data[start:end],
        node.start_point.row + 1,
        marks(node) if node.has_error else Counter(),
        node_text=_text(node),
        kind=node.type,
        lead=data.count(b"\n", start, max(start, node.start_byte)),
    )
    item.opener = lambda: _open(data, node, start, end)
    return item


def _open(data: bytes, node: Node, start: int, end: int) -> tuple[bytes, list[Item], bytes] | None:
    """The head, items and tail of the item ``node`` makes of ``data[start:end]``; None for
    a leaf, or a node that is not a plain list of its items (one item whole)."""
    lst = list_of(node)
    children = _items(lst) if lst is not None else []
    if lst is None or not children:
        return None
    opener = _not_comment(children[0].prev_sibling, "prev_sibling")
    closer = _not_comment(children[-1].next_sibling, "next_sibling")
    first = (
        _line_end(data, opener.end_byte, children[0].start_byte) if opener is not None else start
    )
    limit = min(closer.start_byte if closer is not None else lst.end_byte, end)
    if not start <= first <= children[0].start_byte or children[-1].end_byte > limit:
        return None
    bounds = [first]
    for i, child in enumerate(children):
        upto = children[i + 1].start_byte if i + 1 < len(children) else limit
        bounds.append(_line_end(data, child.end_byte, upto))
    items = [build(data, c, a, b) for c, a, b in zip(children, bounds, bounds[1:], strict=False)]
    return data[start:first], items, data[bounds[-1] : end]


def parse_file(data: bytes) -> Tree:
    """The file as its top-level container (key ``file``)."""
    from patchctl import cparse

    parsed = cparse.parse(data)
    item = build(data, parsed.root_node, 0, len(data))
    item.key = "file"
    return Tree(item, data, parsed)


def keyed(levels: Sequence[Sequence[Item]]) -> str | None:
    """Give each item of the same level in several versions its final key: its name, or
    its text where the name stands twice in a version (or it has none). Returns the text
    of an item that still stands twice in a version (its identity not proven), else None."""
    twice = {
        k
        for items in levels
        for k, n in Counter(i.key for i in items).items()
        if n > 1 and k is not None and not k.startswith("text ")
    }
    for items in levels:
        for i in items:
            if i.key is None or i.key in twice:
                i.key = f"text {norm(i.node_text)}"
    for items in levels:
        counts = Counter(i.key for i in items)
        if (twin := next((i for i in items if counts[i.key] > 1), None)) is not None:
            return twin.name
    return None
