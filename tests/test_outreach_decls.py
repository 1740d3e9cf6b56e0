"""draft-outreach's "relies on" links: a name resolved where the patch uses it, or no link.

A small C++ upstream in a temp git repo reproduces each kind of wrong link the briefs had
(a member of the enclosing class linked to a same-named member of another class, a local
linked to a struct field elsewhere, a field linked through the wrong type, a name linked
to a header the file does not include, a field an earlier patch adds linked to another
struct's); the real CLI drafts the brief.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from patchctl.outreach import cscope
from tests.builders import (
    Upstream,
    commit_all,
    format_patch,
    git,
    make_project,
    replace_in,
    system_config_off,
    write,
)

FILES = {
    # a class with the member the patch uses, and another class with a member of that name
    "src/cache.h": """#pragma once
#include "hparams.h"
struct tensor;
class kv_cache {
public:
    void clear();
    tensor * get_k(int il) const;
private:
    const unsigned n_stream = 1;
};
""",
    "src/cache-dsa.h": """#pragma once
struct tensor;
struct kv_cache_dsa {
    tensor * get_k(int il) const;
    const unsigned n_stream = 1;
};
""",
    "src/cache.cpp": """#include "cache.h"
#include "tool.h"

void kv_cache::clear() {
    int done = 0;
    done += 1;
}
""",
    # a struct field named as the local the model code declares
    "src/metal-impl.h": """#pragma once
struct metal_args {
    int n_embd;
};
""",
    "src/hparams.h": """#pragma once
struct hparams_t {
    unsigned n_layer;
    unsigned n_embd;
};
""",
    "src/batch.h": """#pragma once
struct ubatch_t {
    unsigned n_tokens;
};
""",
    "src/vocab.h": """#pragma once
struct vocab_t {
    unsigned n_tokens() const;
};
""",
    # a control vector with the field name the series adds to hparams_t
    "src/adapter.h": """#pragma once
struct cvec_t {
    int layer_start = -1;
};
""",
    # two declarations of reset_all: the model includes tool.h, not a-first.h
    "src/a-first.h": """#pragma once
void reset_all(int which);
""",
    "src/tool.h": """#pragma once
void reset_all(void);
""",
    "src/model.cpp": """#include "hparams.h"
#include "batch.h"
#include "tool.h"

int build(const hparams_t & hp, const ubatch_t & ubatch) {
    const int n_embd = hp.n_embd;
    int out = 0;
    return out;
}
""",
    # a test's own static function, named as a member of a loader it does not include
    "src/loader.h": """#pragma once
typedef void (*set_data_t)(void *);
struct loader_t {
    set_data_t set_tensor_data;
};
""",
    "tests/test-archs.cpp": """#include <cstdio>

static void set_tensor_data(void * userdata) {
    (void) userdata;
}

int main() {
    return 0;
}
""",
}


def _upstream(path: Path) -> Upstream:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "master")
    write(path, FILES)
    return Upstream(path, {"base": commit_all(path, "cpp : initial import (#1)")})


def _adds_layer_start(work: Path) -> None:
    replace_in(
        work / "src/hparams.h",
        "    unsigned n_embd;\n",
        "    unsigned n_embd;\n    int layer_start = 0;\n",
    )


def _uses_them(work: Path) -> None:
    replace_in(
        work / "src/cache.cpp",
        "    done += 1;\n",
        "    done += 1;\n    for (unsigned s = 0; s < n_stream; ++s) {\n"
        "        get_k(s);\n    }\n    reset_all();\n",
    )
    replace_in(
        work / "src/model.cpp",
        "    int out = 0;\n",
        "    int out = 0;\n    out += n_embd * hp.layer_start;\n"
        "    out += ubatch.n_tokens;\n    out += hp.n_layer;\n",
    )
    replace_in(
        work / "tests/test-archs.cpp",
        "    return 0;\n",
        "    set_tensor_data(nullptr);\n    return 0;\n",
    )


@pytest.fixture(scope="module")
def relied(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Upstream]:
    """A project whose series adds a field to hparams_t (0001), then uses it and the
    upstream's names (0002)."""
    root = tmp_path_factory.mktemp("decls")
    with system_config_off():
        up = _upstream(root / "up")
        first = format_patch(
            up,
            up.commits["base"],
            _adds_layer_start,
            scratch=root / "s",
            subject="hparams : a layer range",
            trailers={"Concern": "a"},
        )
        second = format_patch(
            up,
            git(root / "s", "rev-parse", "HEAD").strip(),
            _uses_them,
            scratch=root / "s",
            subject="model : use it",
            trailers={"Concern": "b"},
        )
    project = make_project(root / "proj", up, [("0001-a.patch", first), ("0002-b.patch", second)])
    return project, up


def _links(cli, project: Path, up: Upstream) -> dict[tuple[str, str], dict]:
    r = cli("-C", str(project), "draft-outreach", "--upstream", str(up.path), "--json", "0002")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    return {(h["file"], r["name"]): r for h in doc["patches"][0]["guide"] for r in h["relies_on"]}


def _line_of(path: str, text: str) -> int:
    return FILES[path].splitlines().index(text) + 1


def test_a_member_of_the_enclosing_class_links_to_that_class(cli, relied) -> None:
    """n_stream and get_k, used in a member function of kv_cache, were linked to the
    same-named members of another class in another header (kv_cache_dsa in cache-dsa.h)."""
    links = _links(cli, *relied)
    assert (
        links["src/cache.cpp", "n_stream"]["file"],
        links["src/cache.cpp", "n_stream"]["line"],
    ) == ("src/cache.h", _line_of("src/cache.h", "    const unsigned n_stream = 1;"))
    assert (links["src/cache.cpp", "get_k"]["file"], links["src/cache.cpp", "get_k"]["line"]) == (
        "src/cache.h",
        _line_of("src/cache.h", "    tensor * get_k(int il) const;"),
    )


def test_a_local_gets_no_link_to_a_field_of_the_same_name(cli, relied) -> None:
    """n_embd, a local of the function the patch edits, was linked to metal_args' field."""
    assert ("src/model.cpp", "n_embd") not in _links(cli, *relied)


def test_a_field_links_through_the_object_type(cli, relied) -> None:
    """ubatch.n_tokens was linked to vocab_t::n_tokens() (a prototype outranked a field);
    hp.n_layer to whatever declared a name n_layer first."""
    links = _links(cli, *relied)
    assert (
        links["src/model.cpp", "n_tokens"]["file"],
        links["src/model.cpp", "n_tokens"]["line"],
    ) == ("src/batch.h", _line_of("src/batch.h", "    unsigned n_tokens;"))
    assert links["src/model.cpp", "n_layer"]["file"] == "src/hparams.h"


def test_a_field_an_earlier_patch_adds_gets_no_link(cli, relied) -> None:
    """hp.layer_start (added to hparams_t by the series' first patch) was linked to the
    control vector's layer_start in adapter.h, a struct and a header the code never uses."""
    assert ("src/model.cpp", "layer_start") not in _links(cli, *relied)


def test_a_name_resolves_in_the_headers_the_file_includes(cli, relied) -> None:
    """reset_all was linked to a-first.h, which cache.cpp does not include, and the test's
    own static set_tensor_data to loader_t's member in a header the test never includes."""
    links = _links(cli, *relied)
    assert links["src/cache.cpp", "reset_all"]["file"] == "src/tool.h"
    assert links["src/cache.cpp", "reset_all"]["text"] == "void reset_all(void);"
    assert (
        links["tests/test-archs.cpp", "set_tensor_data"]["file"],
        links["tests/test-archs.cpp", "set_tensor_data"]["line"],
    ) == (
        "tests/test-archs.cpp",
        _line_of("tests/test-archs.cpp", "static void set_tensor_data(void * userdata) {"),
    )


def test_the_brief_says_how_names_were_resolved(cli, relied) -> None:
    project, up = relied
    r = cli("-C", str(project), "draft-outreach", "--upstream", str(up.path), "0002")
    assert r.code == 0, r.err
    assert (
        "- declarations found with: tree-sitter's C\\+\\+ grammar, each name looked up "
        "where the patch uses it" in r.out
    )


# -- the resolver on its own ---------------------------------------------------------------


def _resolver(files: dict[str, str]) -> cscope.Resolver:
    data = {p: t.encode() for p, t in files.items()}
    return cscope.Resolver(data.get, set(data))


def _at(r: cscope.Resolver, path: str, name: str, line: int) -> cscope.Found | str | None:
    (node, *_) = r.uses(path, name, {line})
    return r.resolve(path, node)


def test_types_are_followed_through_auto_containers_smart_pointers_and_bases() -> None:
    files = {
        "src/a.h": "struct layer { int wq; };\nstruct base { int n_tokens; };\n"
        "struct hp_t { int n_head; };\n",
        "src/b.h": '#include "a.h"\n#include <vector>\n#include <memory>\n'
        "struct model : base {\n    std::vector<layer> layers;\n"
        "    std::unique_ptr<hp_t> hp;\n    int run();\n};\n",
        "src/b.cpp": '#include "b.h"\nint model::run() {\n    const auto & ls = layers;\n'
        "    return ls[0].wq + hp->n_head + n_tokens + this->n_tokens;\n}\n",
        "src/other.h": "struct other { int wq; int n_head; int n_tokens; };\n",
    }
    r = _resolver(files)
    assert _at(r, "src/b.cpp", "wq", 4) == cscope.Found("src/a.h", 1, "variable")
    assert _at(r, "src/b.cpp", "n_head", 4) == cscope.Found("src/a.h", 3, "variable")
    assert _at(r, "src/b.cpp", "n_tokens", 4) == cscope.Found("src/a.h", 2, "variable")
    assert _at(r, "src/b.cpp", "ls", 4) == cscope.LOCAL


def test_what_cannot_be_resolved_is_none() -> None:
    """A call's result, a name declared nowhere the file sees: no guess."""
    files = {
        "src/x.cpp": "int f() {\n    return make().n_rows + nowhere_declared;\n}\n",
        "src/y.h": "struct rows { int n_rows; };\nint nowhere_declared;\n",
    }
    r = _resolver(files)
    assert _at(r, "src/x.cpp", "n_rows", 2) is None
    assert _at(r, "src/x.cpp", "nowhere_declared", 2) is None


def test_an_overload_is_chosen_by_the_number_of_arguments_or_not_at_all() -> None:
    """create_tensor(tn, ne, flags) was linked to the overload that takes a loader first
    (the first declared), not to the one the call's three arguments fit."""
    files = {
        "src/m.h": "struct base {\n    int create(int ml, int tn, int ne, int flags);\n"
        "    int create(int tn, int ne, int flags);\n    int make(int a);\n"
        "    int make(float a);\n};\nstruct bit : base {\n    void load();\n};\n",
        "src/m.cpp": '#include "m.h"\nvoid bit::load() {\n    create(1, 2, 3);\n    make(1);\n}\n',
    }
    r = _resolver(files)
    assert _at(r, "src/m.cpp", "create", 3) == cscope.Found("src/m.h", 3, "prototype")
    assert _at(r, "src/m.cpp", "make", 4) is None  # same arity: not told apart here
