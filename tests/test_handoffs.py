"""The evidence handoffs (evidence/*/README.md) say what is true today.

A handoff is read months after it was written, so two kinds of staleness fail here:

(a) A cited record (`evidence/...json`) made at another stack fingerprint than the lock's
    must say so where it is cited: the paragraph, list item or table row that names the
    record also names the record's stack fingerprint, at least its first 8 hex digits (the
    house wording is "at stack 723b1dea"). A record at the lock's fingerprint needs no
    marker. The generated handoff's own verdicts ("does not cover this patch as it is
    now", or a `no` in the last column of its evidence table) say so too.
(b) A name in backticks that no longer exists: `patchctl VERB ...` whose verb is not in the
    CLI or whose option is not that verb's; `worker ...` with a flag the worker's usage
    text lacks; `bench/X.py --flag` with a flag the script lacks; a C or Python identifier
    (snake_case, `a::b`, `a.b`) that appears in no code under stack/patches/, native/,
    patchctl/, bench/, scripts/ or tests/ (this file aside); a path in a "## Changed files"
    section that is not in the repository.

Prose outside backticks and fenced blocks is not parsed: a handoff marks what it names.
tests/test_evidence_docs.py checks the fenced `$ ` commands and that cited records exist.
"""

from __future__ import annotations

import functools
import json
import re
import shlex
from pathlib import Path

import click
import pytest

from patchctl.cli import cli as patchctl_cli

THIS = Path(__file__).resolve()
REPO = THIS.parents[1]
HANDOFFS = sorted((REPO / "evidence").glob("*/README.md"))
# The roots whose code a backticked identifier must still appear in (no prose: *.md skipped).
CODE_ROOTS = ("stack/patches", "native", "patchctl", "bench", "scripts", "tests")
CODE_SUFFIXES = {
    ".patch",
    ".py",
    ".c",
    ".cpp",
    ".h",
    ".hpp",
    ".in",
    ".cmake",
    ".txt",
    ".sh",
    ".json",
    ".j2",
    ".toml",
    ".cnf",
}
FILE_SUFFIXES = (
    "py",
    "cpp",
    "hpp",
    "h",
    "c",
    "cmake",
    "json",
    "md",
    "toml",
    "txt",
    "in",
    "sh",
    "log",
    "patch",
    "gz",
    "gguf",
    "j2",
)

_CITED = re.compile(r"(?<![\w/.-])evidence/[\w./-]+\.json")
_SPAN = re.compile(r"`([^`\n]+)`")
_ITEM = re.compile(r"^\s*(?:[-*]|\d+\.)\s")
_IDENT = re.compile(r"[A-Za-z_]\w*(?:(?:::|\.)[A-Za-z_]\w*)*(?:\(\))?")
_FLAG = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")
_VERDICT = re.compile(r"does not cover this patch as it is now|^\|.*\|\s*no\s*\|\s*$")


def blocks(text: str) -> list[str]:
    """Paragraphs, list items, table rows and fenced blocks: where a citation's context is."""
    out: list[str] = []
    current: list[str] = []
    fenced = False

    def flush() -> None:
        if current:
            out.append("\n".join(current))
            current.clear()

    for line in text.splitlines():
        if line.startswith("```"):
            if not fenced:
                flush()
            current.append(line)
            fenced = not fenced
            if not fenced:
                flush()
        elif fenced:
            current.append(line)
        elif not line.strip():
            flush()
        elif line.startswith("|") or _ITEM.match(line):
            flush()
            current.append(line)
            if line.startswith("|"):
                flush()
        else:
            current.append(line)
    flush()
    return out


def prose(text: str) -> str:
    """The text without its fenced blocks (their commands are checked elsewhere)."""
    return "\n\n".join(b for b in blocks(text) if not b.startswith("```"))


def lock_fingerprint(repo: Path) -> str:
    match = re.search(
        r'^fingerprint = "([0-9a-f]{64})"',
        (repo / "stack" / "stack.lock").read_text(),
        re.MULTILINE,
    )
    assert match, "stack/stack.lock has no fingerprint"
    return match.group(1)


def record_fingerprint(path: Path) -> str | None:
    """The stack fingerprint an evidence record was made at; None for files that are not
    records (a MANIFEST.json, say) or records that name none."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not str(record.get("schema", "")).startswith("patchctl.evidence/"):
        return None
    stack = record.get("stack")
    if not isinstance(stack, dict) or not stack.get("fingerprint"):
        return None
    return str(stack["fingerprint"])


def unmarked_citations(text: str, repo: Path = REPO) -> list[str]:
    """(a): each record cited where its block neither names its other fingerprint nor says
    it does not cover the patch."""
    current = lock_fingerprint(repo)
    found = []
    for block in blocks(text):
        for rel in sorted(set(_CITED.findall(block))):
            fp = record_fingerprint(repo / rel)
            if fp is None or fp == current:
                continue
            if fp[:8].lower() in block.lower() or any(map(_VERDICT.search, block.splitlines())):
                continue
            found.append(
                f"{rel} was made at stack {fp[:16]}, not the current "
                f"{current[:16]}, and the text citing it does not say so (write "
                f"'at stack {fp[:8]}' beside it): {block.splitlines()[0][:100]!r}"
            )
    return found


@functools.cache
def _code_words() -> frozenset[str]:
    words: set[str] = set()
    for root in CODE_ROOTS:
        for path in (REPO / root).rglob("*"):
            # This file quotes gone names on purpose, as the old handoffs had them.
            if path.is_file() and path.suffix in CODE_SUFFIXES and path != THIS:
                words.update(re.findall(r"\w+", path.read_text(errors="replace")))
    return frozenset(words)


@functools.cache
def _worker_usage() -> str:
    """The worker's usage text: kUsage and the stage mode's kStageUsage, as in the source."""
    text = ""
    for path in sorted((REPO / "native" / "src").rglob("*.cpp")):
        for match in re.finditer(r"\bk(?:Stage)?Usage =(.*?);\n", path.read_text(), re.DOTALL):
            text += match.group(1)
    assert "--self-test" in text and "--stage" in text, "the worker's usage text moved"
    return text


def _patchctl_findings(words: list[str], span: str) -> list[str]:
    cmd: click.Command = patchctl_cli
    ctx = click.Context(patchctl_cli)
    path = ["patchctl"]
    rest = words[1:]
    while rest and rest[0] in ("-C", "--project"):
        rest = rest[2:]
    while rest and isinstance(cmd, click.Group) and not rest[0].startswith("-"):
        sub = cmd.get_command(ctx, rest[0])
        if sub is None:
            return [f"`{span}`: `{' '.join([*path, rest[0]])}` is not a patchctl command"]
        cmd, path, rest = sub, [*path, rest[0]], rest[1:]
    opts = {"--help", "-h"} | {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
    found = []
    for word in rest:
        if word == "--":  # `record ... -- CMD`: the rest is another program's
            break
        for flag in _FLAG.findall(word.split("=", 1)[0]):
            if word.startswith(("-", "[")) and flag not in opts:
                found.append(f"`{span}`: `{' '.join(path)}` has no option {flag}")
    return found


def _flag_findings(span: str, words: list[str], source: str, what: str) -> list[str]:
    return [
        f"`{span}`: {what} has no {flag}"
        for word in words[1:]
        if word.startswith(("-", "["))
        for flag in _FLAG.findall(word)
        if flag.startswith("--") and not re.search(re.escape(flag) + r"(?![\w-])", source)
    ]


def _identifier_findings(span: str) -> list[str]:
    if not _IDENT.fullmatch(span) or span.rsplit(".", 1)[-1] in FILE_SUFFIXES:
        return []
    parts = re.split(r"::|\.", span.removesuffix("()"))
    gone = [p for p in parts if "_" in p.strip("_") and not p.isupper() and p not in _code_words()]
    return [f"`{span}`: {p} appears in no code under {', '.join(CODE_ROOTS)}" for p in gone]


def _expand(path: str) -> list[str]:
    match = re.search(r"\{([^{}]*)\}", path)
    if not match:
        return [path]
    return [
        x
        for alt in match.group(1).split(",")
        for x in _expand(path[: match.start()] + alt + path[match.end() :])
    ]


def changed_paths_missing(text: str, repo: Path = REPO) -> list[str]:
    """Paths in backticks under "## Changed files" that are not in the repository."""
    section = re.search(r"^## Changed files\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    if not section:
        return []
    found = []
    for span in _SPAN.findall(section.group(1)):
        if "/" not in span or " " in span or "<" in span or "*" in span:
            continue
        found += [
            f"`{span}`: {p} is not in the repository"
            for p in _expand(span)
            if not (repo / p).exists()
        ]
    return found


def gone_names(text: str) -> list[str]:
    """(b): commands, options, identifiers and changed paths the repository no longer has."""
    found = []
    for span in _SPAN.findall(prose(text)):
        try:
            words = shlex.split(span)
        except ValueError:
            words = span.split()
        if not words:
            continue
        prog = Path(words[0]).name
        if prog == "patchctl" and len(words) > 1:
            found += _patchctl_findings(words, span)
        elif prog == "worker" and len(words) > 1:
            found += _flag_findings(span, words, _worker_usage(), "the worker's usage")
        elif re.fullmatch(r"bench/\w+\.py", words[0]) and (REPO / words[0]).is_file():
            found += _flag_findings(span, words, (REPO / words[0]).read_text(), words[0])
        elif re.fullmatch(r"bench/\w+\.py", words[0]):
            found.append(f"`{span}`: {words[0]} is not in the repository")
        else:
            found += _identifier_findings(span)
    return found + changed_paths_missing(text)


@pytest.mark.parametrize("doc", HANDOFFS, ids=lambda d: d.parent.name)
def test_handoff_marks_records_of_another_stack(doc: Path) -> None:
    assert not unmarked_citations(doc.read_text()), "\n".join(unmarked_citations(doc.read_text()))


@pytest.mark.parametrize("doc", HANDOFFS, ids=lambda d: d.parent.name)
def test_handoff_names_only_what_exists(doc: Path) -> None:
    assert not gone_names(doc.read_text()), "\n".join(gone_names(doc.read_text()))


def test_the_handoffs_are_found() -> None:
    assert {d.parent.name for d in HANDOFFS} >= {"DGR-029", "DGR-068", "DGR-069"}


# What the DGR-029 handoff said until it was rewritten, months after the stack had moved on.
OLD_LIMITATION = """\
- The standalone build (no `WORKER_UPSTREAM_DIR`) has no stage mode:
  `--stage` and `--drive` exit 2 with the reason. The stage mode needs
  `llama_model_n_embd_boundary` (patch 0002) in the tree's `llama.h`.
"""
OLD_RESULT = """\
Result: `evidence/DGR-029/DGR-029-native-tests.json` (log beside it):
exit 0 as expected in 76.9 s on a shared 2-core machine.
"""


def test_a_function_the_stack_no_longer_has_is_found() -> None:
    """The stage mode's limitation named `llama_model_n_embd_boundary`, a function of a
    boundary I/O patch the stack dropped; nothing failed while the handoff said so."""
    found = gone_names(OLD_LIMITATION)
    assert len(found) == 1 and "llama_model_n_embd_boundary appears in no code" in found[0]
    assert not gone_names(
        OLD_LIMITATION.replace("llama_model_n_embd_boundary", "llama_model_n_embd_inp")
    )


def test_a_record_of_another_stack_cited_as_if_current_is_found() -> None:
    """The DGR-029 handoff cited its native-tests record (made at stack 723b1dea, before
    the stack was restructured) as the proof of today's worker, without saying so."""
    found = unmarked_citations(OLD_RESULT)
    assert len(found) == 1 and "made at stack 723b1dea97c7fd05" in found[0]
    assert not unmarked_citations(OLD_RESULT.replace("(log beside it)", "(at stack 723b1dea)"))
    # In another paragraph the marker does not count.
    assert unmarked_citations(OLD_RESULT + "\nAt stack 723b1dea.\n")


def test_a_record_at_the_current_stack_needs_no_marker(tmp_path: Path) -> None:
    """A record made at the lock's fingerprint is cited plainly; the same citation of a
    record of another fingerprint is found. (A project of its own: the repository's records
    move to other stacks as the stack changes.)"""
    current, other = "a" * 64, "b" * 64
    (tmp_path / "stack").mkdir()
    (tmp_path / "stack" / "stack.lock").write_text(f'fingerprint = "{current}"\n')
    (tmp_path / "evidence").mkdir()
    for name, fingerprint in (("now", current), ("then", other)):
        record = {"schema": "patchctl.evidence/2", "name": name,
                  "stack": {"fingerprint": fingerprint}}
        (tmp_path / "evidence" / f"{name}.json").write_text(json.dumps(record))
    assert record_fingerprint(tmp_path / "evidence" / "now.json") == lock_fingerprint(tmp_path)
    assert not unmarked_citations("The lane: `evidence/now.json`, exit 0.\n", tmp_path)
    assert unmarked_citations("The lane: `evidence/then.json`, exit 0.\n", tmp_path)


def test_a_gone_verb_option_or_flag_is_found() -> None:
    """Inline commands are checked against the CLI and the worker's usage as they are."""
    text = (
        "Build with `patchctl release build --lane cpu --tree DIR`, then "
        "`patchctl release sign PKG`, `patchctl verify --fuzz 3`, "
        "`worker --drive --ring --telepathy`, `bench/pipeline_vs_rpc.py --flash-attn`, "
        "`bench/gone.py`, `worker::check_recipe`, `worker::check_horoscope`.\n"
    )
    found = gone_names(text)
    assert [f.split(": ", 1)[1] for f in found] == [
        "`patchctl release sign` is not a patchctl command",
        "`patchctl verify` has no option --fuzz",
        "the worker's usage has no --telepathy",
        "bench/gone.py is not in the repository",
        "check_horoscope appears in no code under " + ", ".join(CODE_ROOTS),
    ]


def test_a_changed_file_that_moved_is_found() -> None:
    """The DGR-068 handoff listed `patchctl/hostinfo.py`, which moved to
    `patchctl/records/hostinfo.py` while the handoff went on naming the old path."""
    text = (
        "## Changed files\n\n- `patchctl/hostinfo.py`, `patchctl/records/hostinfo.py`,\n"
        "  `native/src/core/{json,sha256,gone}.cpp`\n\n## Limitations\n\n"
        "- `patchctl/gone.py` outside the section is not a changed file.\n"
    )
    assert changed_paths_missing(text) == [
        "`patchctl/hostinfo.py`: patchctl/hostinfo.py is not in the repository",
        "`native/src/core/{json,sha256,gone}.cpp`: native/src/core/gone.cpp is not in the "
        "repository",
    ]
