"""C and C++ source as tree-sitter reads it: the one grammar (tree-sitter's C++ one, which
reads C too) and parser that every reader of C code uses (draft-outreach's declaration
lookup, rebase-pin's merge by declaration), and where a parse went wrong. No git here.
"""

from __future__ import annotations

from collections.abc import Iterator

import tree_sitter_cpp
from tree_sitter import Language, Node, Parser, Tree

LANGUAGE = Language(tree_sitter_cpp.language())


def parser() -> Parser:
    """A parser of the grammar (one per user: a parser keeps state between parses)."""
    return Parser(LANGUAGE)


def parse(data: bytes) -> Tree:
    return parser().parse(data)


def errors(node: Node) -> Iterator[Node]:
    """The outermost nodes under ``node`` (itself included) that tree-sitter could not
    parse, in order: an ``ERROR`` node, or a token it assumed ``MISSING``. A loop, not a
    recursion: a long ``else if`` chain nests deeper than Python's stack."""
    todo = [node]
    while todo:
        n = todo.pop()
        if n.type == "ERROR" or n.is_missing:
            yield n
        elif n.has_error:
            todo += reversed(n.children)
