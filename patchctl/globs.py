"""Path globs: the one matcher for Scope and Binary trailers, ``split --paths``,
``apply --exclude``, ``Assisted-by`` and, through their own anchoring rules, CODEOWNERS
and .editorconfig sections.

The language is fnmatch's, made path-aware:

* ``*`` is any run of characters within one path component, ``?`` one character of a
  component, ``[...]`` one character of a component from a set (fnmatch: ``[!...]``
  negates, ``]`` first is a member, ``a-z`` is a range, ``^`` and ``\\`` are plain
  characters);
* two or more ``*`` in a row are ``**``: any run of characters, ``/`` included, and
  ``**/`` is empty or any run that ends in ``/`` (``a/**/b`` matches ``a/b``);
* ``{x,y}`` (only where ``braces=True``, for .editorconfig) is any one of the
  comma-separated alternatives, each a glob without braces;
* anything else matches itself; a pattern without these characters compares exactly.

Unlike fnmatch, which reads a broken set as literal text, a pattern with a ``[`` that is
not closed within its path component (``src/[``, ``[]``: a leading ``]`` is a member)
or with a reversed range (``[z-a]``) is an error (``GlobError``), so a typo never
silently matches nothing; so is a glob longer than ``MAX_GLOB`` characters.

Matching simulates the pattern's automaton over the path, one set of states per
character (the sets met are cached as a small DFA), so it takes at most
O(len(pattern) * len(path)) steps whatever the pattern: no backtracking.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field

from patchctl.errors import InputError
from patchctl.untrusted import printable, shorten

MAX_GLOB = 4096  # characters: PATH_MAX; a longer glob is an error, not a slow match
# The transitions met are cached per pattern (a lazily built DFA), a bounded number and only
# between small state sets, so that memory stays small whatever the patterns.
_DFA_ENTRIES = 256
_DFA_SET = 8

# automaton state kinds: the first four consume one character, SPLIT none
_LIT, _ONE, _ANY, _SET, _SPLIT = range(5)


class GlobError(InputError):
    """A pattern that is not a valid glob (unclosed ``[``, reversed range)."""


@dataclass(frozen=True)
class _CharSet:
    chars: frozenset[str]
    ranges: tuple[tuple[str, str], ...]
    negate: bool

    def __contains__(self, c: str) -> bool:
        hit = c in self.chars or any(lo <= c <= hi for lo, hi in self.ranges)
        return c != "/" and hit != self.negate


# one token of a parsed pattern: ("lit", c) ("one",) ("set", _CharSet) ("star",)
# ("globstar",) ("globstar/",) ("alt", (tokens, tokens, ...))
_Token = tuple[object, ...]


@dataclass(eq=False)
class Glob:
    """A compiled glob; ``match`` answers in O(len(pattern) * len(path)) steps."""

    pattern: str
    _kinds: list[int]
    _args: list[object]
    _outs: list[tuple[int, ...]]
    _start: frozenset[int] = frozenset()
    _dfa: dict[tuple[frozenset[int], str], frozenset[int]] = field(default_factory=dict)

    @property
    def _accept(self) -> int:
        return len(self._kinds)

    def match(self, path: str, *, or_parent: bool = False) -> bool:
        """Whether the pattern matches all of ``path``; with ``or_parent``, also whether
        it matches one of the directories above it (``a/b`` for ``a/b/c``)."""
        states = self._start
        accept = self._accept
        for c in path:
            if not states:
                return False
            if or_parent and c == "/" and accept in states:
                return True
            key = (states, c)
            nxt = self._dfa.get(key)
            if nxt is None:
                nxt = self._step(states, c)
                if len(nxt) <= _DFA_SET:
                    if len(self._dfa) >= _DFA_ENTRIES:
                        self._dfa.clear()
                    self._dfa[key] = nxt
            states = nxt
        return accept in states

    def _step(self, states: frozenset[int], c: str) -> frozenset[int]:
        """The states after reading ``c``: each state is looked at once (no backtracking)."""
        kinds, args, outs = self._kinds, self._args, self._outs
        targets = []
        for s in states:
            if s == self._accept:
                continue
            kind, arg = kinds[s], args[s]
            if (kind == _ANY or (kind == _ONE and c != "/") or (kind == _LIT and c == arg)
                    or (kind == _SET and isinstance(arg, _CharSet) and c in arg)):
                targets.append(outs[s][0])
        return self._closure(targets)

    def _closure(self, targets: list[int]) -> frozenset[int]:
        """``targets`` and what they reach without reading: the states that read a
        character next, and the accept state."""
        accept, kinds, outs = self._accept, self._kinds, self._outs
        seen: set[int] = set()
        out: list[int] = []
        while targets:
            t = targets.pop()
            if t in seen:
                continue
            seen.add(t)
            if t < accept and kinds[t] == _SPLIT:
                targets.extend(outs[t])
            else:
                out.append(t)
        return frozenset(out)


def glob_match(path: str, pattern: str) -> bool:
    """Whether ``pattern`` (see the module's doc) matches all of ``path``.
    Raises GlobError for an invalid pattern."""
    if len(pattern) <= MAX_GLOB and not any(c in pattern for c in "*?["):
        return path == pattern  # most Scope entries name files exactly
    return compile_glob(pattern).match(path)


def glob_problem(pattern: str, *, braces: bool = False) -> str | None:
    """Why ``pattern`` is not a valid glob (one line), or None."""
    try:
        compile_glob(pattern, braces=braces)
    except GlobError as e:
        return str(e)
    return None


def check_globs(globs: Iterable[str], what: str) -> None:
    """InputError naming ``what`` (``--paths``) for the first invalid glob of ``globs``."""
    for g in globs:
        problem = glob_problem(g)
        if problem:
            raise InputError(f"{what}: {problem}")


def valid_globs(globs: Iterable[str]) -> list[str]:
    """The valid ones of ``globs``: a broken glob matches nothing (verify reports it)."""
    return [g for g in globs if glob_problem(g) is None]


@functools.lru_cache(maxsize=1024)
def compile_glob(pattern: str, *, braces: bool = False) -> Glob:
    """``pattern`` compiled; GlobError (naming the pattern) when it is not a valid glob."""
    if len(pattern) > MAX_GLOB:
        raise GlobError(f"glob `{shorten(pattern, 60)}` is {len(pattern)} characters long; "
                        f"a path glob has at most {MAX_GLOB}")
    tokens = _parse(pattern, braces=braces)
    kinds: list[int] = []
    args: list[object] = []
    outs: list[tuple[int, ...]] = []

    def state(kind: int, arg: object = None, out: tuple[int, ...] = ()) -> int:
        kinds.append(kind)
        args.append(arg)
        outs.append(out)
        return len(kinds) - 1

    def loop(kind: int, nxt: int) -> int:
        # split(eat-one-and-come-back, go-on)
        split = state(_SPLIT)
        eat = state(kind, None, (split,))
        outs[split] = (eat, nxt)
        return split

    def chain(toks: list[_Token], nxt: int) -> int:
        for tok in reversed(toks):
            name = tok[0]
            if name == "lit":
                nxt = state(_LIT, tok[1], (nxt,))
            elif name == "one":
                nxt = state(_ONE, None, (nxt,))
            elif name == "set":
                nxt = state(_SET, tok[1], (nxt,))
            elif name == "star":
                nxt = loop(_ONE, nxt)
            elif name == "globstar":
                nxt = loop(_ANY, nxt)
            elif name == "globstar/":  # empty, or anything then "/"
                slash = state(_LIT, "/", (nxt,))
                nxt = state(_SPLIT, None, (loop(_ANY, slash), nxt))
            else:  # alt
                alts = tok[1]
                assert isinstance(alts, tuple)
                nxt = state(_SPLIT, None, tuple(chain(a, nxt) for a in alts))
        return nxt

    accept = -1  # patched below: the accept state is len(kinds) once all are made
    start = chain(tokens, accept)
    accept = len(kinds)
    outs = [tuple(accept if o == -1 else o for o in out) for out in outs]
    start = accept if start == -1 else start

    glob = Glob(pattern, kinds, args, outs)
    glob._start = glob._closure([start])
    return glob


def _parse(pattern: str, *, braces: bool) -> list[_Token]:
    tokens: list[_Token] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            j = i
            while j < n and pattern[j] == "*":
                j += 1
            # `**/**/` is `**/` and `**/**` is `**`: fewer states to carry
            after_globstar_dir = bool(tokens) and tokens[-1] == ("globstar/",)
            if j - i == 1:
                tokens.append(("star",))
            elif j < n and pattern[j] == "/":
                if not after_globstar_dir:
                    tokens.append(("globstar/",))
                j += 1
            elif after_globstar_dir:
                tokens[-1] = ("globstar",)
            else:
                tokens.append(("globstar",))
            i = j
        elif c == "?":
            tokens.append(("one",))
            i += 1
        elif c == "[":
            charset, i = _parse_set(pattern, i)
            tokens.append(("set", charset))
        elif braces and c == "{" and "}" in pattern[i:]:
            j = pattern.index("}", i)
            tokens.append(("alt", tuple(_parse(a, braces=False)
                                        for a in pattern[i + 1 : j].split(","))))
            i = j + 1
        else:
            tokens.append(("lit", c))
            i += 1
    return tokens


def _parse_set(pattern: str, i: int) -> tuple[_CharSet, int]:
    """The set that starts with the ``[`` at ``i``, and the index after its ``]``."""
    n = len(pattern)
    j = i + 1
    negate = j < n and pattern[j] == "!"
    if negate:
        j += 1
    first = j
    if j < n and pattern[j] == "]":
        j += 1  # a leading "]" is a member, as in fnmatch
    while j < n and pattern[j] not in "]/":
        j += 1
    if j >= n or pattern[j] == "/":
        raise GlobError(f"glob `{shorten(pattern)}`: the `[` at character {i + 1} is not "
                        "closed by a `]` in the same path component (write `[[]` for a "
                        "literal `[`)")
    body = pattern[first:j]
    chars: set[str] = set()
    ranges: list[tuple[str, str]] = []
    k = 0
    while k < len(body):
        if k + 2 < len(body) and body[k + 1] == "-":
            lo, hi = body[k], body[k + 2]
            if lo > hi:
                raise GlobError(f"glob `{shorten(pattern)}`: the range `{printable(lo)}-"
                                f"{printable(hi)}` is reversed; write `{printable(hi)}-"
                                f"{printable(lo)}`")
            ranges.append((lo, hi))
            k += 3
        else:
            chars.add(body[k])
            k += 1
    return _CharSet(frozenset(chars), tuple(ranges), negate), j + 1
