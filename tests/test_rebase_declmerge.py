"""rebase-pin merges by C/C++ declaration (``decl``) a conflict where the patch and upstream
changed different functions or statements of one region, and refuses where that is not
proven: the same item changed on both sides, an item whose identity stands twice, a
syntax error in a changed item. ``--strict`` keeps it a conflict.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from patchctl.rebase.declmerge import Refused, merge_file
from patchctl.rebase.decltree import Item, parse_file
from tests.test_rebase_resolve import _applied, _one, _rebase

OPS = """#include "ops.h"

static int op_add(int a, int b) { return a + b; }
static int op_sub(int a, int b) { return a - b; }
static int op_mul(int a, int b) { return a * b; }

int ops_run(int op, int a, int b)
{
    switch (op) {
    case 0: return op_add(a, b);
    case 1: return op_sub(a, b);
    default: return op_mul(a, b);
    }
}
"""
SUB = ("{ return a - b; }", "{ return a > b ? a - b : 0; }")  # upstream's change
ADD = ("{ return a + b; }", "{ return a + b + 1; }")  # the patch's, beside it
MUL = ("{ return a * b; }", "{ return a * b * 2; }")


def test_different_functions_of_one_region_merge_by_declaration(cli, tmp_path: Path) -> None:
    """Upstream changed op_sub, the patch op_add and op_mul around it: a line merge
    conflicts (adjacent lines), anchored cannot (op_sub stands between the patch's changes)
    and union does not apply (it removes lines). Each function is one item changed on one
    side only, so it is graded `decl` (--strict keeps it a conflict) and the rebased file
    has all three changes."""
    project, up = _one(
        tmp_path, {"a.c": OPS}, [("saturate op_sub", {"a.c": SUB})], {"a.c": [ADD, MUL]}
    )
    code, data = _rebase(cli, project, up, "--check", "--strict")
    p = data["patches"][0]
    assert code == 1 and p["grade"] == "conflict" and p["tried"] == [] and p["placed"] == []
    code, data = _rebase(cli, project, up, "--check")
    p = data["patches"][0]
    assert code == 0 and p["grade"] == "decl", p
    assert p["placed"] == [
        {
            "file": "a.c",
            "hunk": 1,
            "line": 3,
            "note": "function op_add(int a, int b), function op_mul(int a, int b), beside "
            "upstream's change to function op_sub(int a, int b)",
        }
    ]
    text = cli("-C", str(project), "rebase-pin", "P2", "--upstream", str(up.path), "--check")
    assert "decl: a.c hunk #1 -> line 3, function op_add(int a, int b)" in text.out
    code, data = _rebase(cli, project, up)
    assert code == 0 and data["status"] == "rebased", data["message"]
    assert "[decl]" in data["range_diff"].splitlines()[0]
    assert _applied(cli, project, tmp_path, "a.c") == OPS.replace(*SUB).replace(*ADD).replace(*MUL)
    assert cli("-C", str(project), "verify", "--upstream", str(up.path)).code == 0


@pytest.mark.parametrize(
    ("text", "change", "refused"),
    [
        pytest.param(
            OPS,
            [ADD, (SUB[0], "{ return b - a; }")],
            "decl: a.c: both change `static int op_sub(int a, int b) { return a - b; }`: "
            "hunk #1 removes it, and upstream changed the lines it stands in",
            id="same-function",
        ),
        pytest.param(
            OPS.replace('"ops.h"\n', '"ops.h"\n\nint ops_run(int op, int a, int b);\n' * 2),
            [ADD, MUL],
            "decl: a.c: declaration `int ops_run(int op, int a, int b);` stands twice: which "
            "is which is not proven",
            id="identity-twice",
        ),
        pytest.param(
            OPS,
            [ADD, (MUL[0], "{ return a * b }")],
            "decl: a.c: function op_mul(int a, int b) does not parse as C or C++ (a syntax "
            "error in the change)",
            id="syntax-error",
        ),
    ],
)
def test_a_merge_by_declaration_not_proven_stays_a_conflict(
    cli, tmp_path: Path, text: str, change, refused: str
) -> None:
    """The merge is refused, the patch stays a conflict and says why, when both sides
    changed the same function (only a person can tell how both go together), when an item's
    identity stands twice in the file (which copy the patch changed is not proven), or when
    a changed item does not parse (its extent is a guess)."""
    project, up = _one(
        tmp_path, {"a.c": text}, [("saturate op_sub", {"a.c": SUB})], {"a.c": change}
    )
    code, data = _rebase(cli, project, up, "--check")
    p = data["patches"][0]
    assert code == 1 and p["grade"] == "conflict", p
    assert p["tried"][-1] == refused


def _levels(item: Item) -> list[Item]:
    return [item, *(x for i in item.items or [] for x in _levels(i))]


CPP = """// a header comment
#include <vector>
#define N 4

namespace ns {
struct pt { int x; /* x */ int y; };
enum op { OP_A, OP_B, };
LLAMA_API int h(void);
} // namespace ns

extern "C" {
int c_fn(void);
}

#ifdef FAST
static int k = 1;
#else
static int k = 2;
#endif

template<typename T> T id(T t) { return t; }
class C { public: int m() const; private: int n; };
int C::m() const { return n; }
static int f(std::vector<int> & v)
{
    int s = 0; // sum
    for (int x : v) { s += x; }
    if (s > N) {
        s = N;
    }
    switch (s) { case 1: s++; break; default: break; }
    return s;
}
"""


def test_a_file_is_its_items_byte_for_byte() -> None:
    """Every container's head, items and tail join to its text, at every level, down to
    the file: the merge takes slices and must lose no byte (comments, blank lines, a `;`
    after a struct), even around a line tree-sitter cannot parse (`LLAMA_API`)."""
    tree = parse_file(CPP.encode())
    assert tree.root.text == CPP.encode() and sum(tree.root.errors.values()) == 1
    for item in _levels(tree.root):
        if item.items is not None:
            assert item.head + b"".join(i.text for i in item.items) + item.tail == item.text
    keys = [i.key for i in tree.root.items or []]
    assert keys[:4] == ["#include <vector>", "#define N", "namespace ns", 'extern "C"']
    body = next(i for i in tree.root.items or [] if i.key == "function f(std::vector<int> & v)")
    assert [i.key for i in body.items or []] == [
        "declaration s",
        "for (int x : v)",
        "if (s > N)",
        "switch (s)",
        "return",
    ]


def test_adjacent_statements_of_one_function_merge() -> None:
    """Upstream changed one statement of f and the patch the next one (and added one after
    it): adjacent lines, a conflict for a line merge; statements one item each, merged. A
    syntax error in an item neither side changed (`LLAMA_API`) does not stop it."""
    base = CPP.encode()
    ours = base.replace(b"int s = 0; // sum", b"int s = 1; // sum")
    theirs = base.replace(
        b"    for (int x : v) { s += x; }\n", b"    for (int x : v) { s += 2 * x; }\n    s -= 1;\n"
    )
    merged, _ = merge_file(base, ours, theirs, [])
    assert merged == ours.replace(
        b"    for (int x : v) { s += x; }\n", b"    for (int x : v) { s += 2 * x; }\n    s -= 1;\n"
    )
    inserted = base.replace(
        b"int C::m() const { return n; }\n",
        b"int C::m() const { return n; }\nint C::z() { return 0; }\n",
    )
    grown = base.replace(b"static int f(std::vector<int> & v)", b"int f(std::vector<int> & v)")
    assert merge_file(base, grown, inserted, [])[0] == grown.replace(
        b"int C::m() const { return n; }\n",
        b"int C::m() const { return n; }\nint C::z() { return 0; }\n",
    )


def test_an_item_one_side_moved_is_moved_and_one_both_moved_is_refused() -> None:
    """Upstream moved a macro above the include (out of order): it is removed at its old
    place and added at the new one, as diff3 takes a moved line, and the patch's change
    elsewhere is kept; both sides moving it, to two places, would keep it twice."""
    base = CPP.encode()
    theirs = base.replace(b"s = N;", b"s = N - 1;")
    swapped = base.replace(b"#define N 4\n", b"").replace(
        b"#include <vector>\n", b"#define N 4\n#include <vector>\n"
    )
    assert merge_file(base, swapped, theirs, [])[0] == swapped.replace(b"s = N;", b"s = N - 1;")
    four = b"int a;\nint b;\nint c;\nint d;\n"
    with pytest.raises(Refused, match="both sides move declaration a"):
        merge_file(
            four, b"int b;\nint c;\nint a;\nint d;\n", b"int b;\nint c;\nint d;\nint a;\n", []
        )
