"""What a brief shows first: results in one line each, where to post, PR order, gaps.

Everything here is derived from data the brief already holds (evidence records,
the concern's outreach data, the upstream's rules and PR template at the base,
the patches' diffs) and carries its source. No git here, no clocks: the same
inputs give the same answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from patchctl.model.patchfile import Hunk, Patch
from patchctl.outreach import decls, facts, policy, recorded, rerun

# -- one line per test result -------------------------------------------------------------


@dataclass
class ResultLine:
    text: str  # the log's own totals line, a reproduce outcome, or "no totals recorded"
    backend: str | None  # as the records name it; None: not recorded
    records: list[str]  # the evidence records that state it, relative to the project
    other_stack: list[str] = field(default_factory=list)  # of those, for another fingerprint
    not_as_expected: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)  # a ctest comparison's tests by name
    alarm: bool = False  # a test fails after the pin that passed there: shown first


NO_TOTALS = "no totals recorded"
OTHER_STACKS = "totals of other stacks"


def results(evidence: Sequence[recorded.EvidenceRun]) -> list[ResultLine]:
    """Each record's totals, one line each (for upstream's ctest at the pin and at each
    prefix, the comparison, ``ctest.compare``, in place of the totals line); records
    stating the same line on the same backend share it, and the records without any totals
    share one line. Once a record of the patch as it is states totals, the lines only
    records of other stacks state are folded into one (OTHER_STACKS: their records, listed
    under Evidence records), and so are the other stacks' records of a line that a record
    of the patch as it is states too."""
    out: dict[tuple[str, str | None], ResultLine] = {}
    for e in evidence:
        lines = [f"reproduce: {e.outcome}"] if e.outcome else \
            [e.compare.headline] if e.compare else e.totals or [NO_TOTALS]
        if e.at and lines != [NO_TOTALS] and not e.compare:
            lines = [f"{t} ({e.at})" for t in lines]
        for text in lines + e.perf:
            line = out.setdefault((text, e.backend), ResultLine(
                text, e.backend, [],
                details=list(e.compare.details) if e.compare and text in lines else [],
                alarm=bool(e.compare and e.compare.new_failures)))
            line.records.append(e.file)
            if not e.current:
                line.other_stack.append(e.file)
            if not e.as_expected:
                line.not_as_expected.append(e.file)
    totals = sorted((r for r in out.values() if r.text != NO_TOTALS), key=lambda r: not r.alarm)
    bare = [r for r in out.values() if r.text == NO_TOTALS]
    rest = [ResultLine(NO_TOTALS, None, [f for r in bare for f in r.records],
                       [f for r in bare for f in r.other_stack],
                       [f for r in bare for f in r.not_as_expected])] if bare else []
    older = [r for r in totals if len(r.other_stack) == len(r.records)]
    if len(older) == len(totals):
        return totals + rest
    current = [r for r in totals if r not in older]
    files = sorted({f for r in totals for f in r.other_stack})
    wrong = sorted({f for r in totals for f in r.not_as_expected if f in r.other_stack})
    for r in current:
        r.records = [f for f in r.records if f not in r.other_stack]
        r.not_as_expected = [f for f in r.not_as_expected if f not in r.other_stack]
        r.other_stack = []
    folded = [ResultLine(OTHER_STACKS, None, files, files, wrong)] if files else []
    return current + folded + rest


# -- where to post first --------------------------------------------------------------------


@dataclass
class PostFirst:
    ref: str | None  # the issue to comment on; None: no open issue is recorded
    url: str = ""
    state: str = ""
    labels: str | None = None  # as the outreach data's checked_via records them
    source: str = ""  # the outreach file
    others: list[str] = field(default_factory=list)  # other issues recorded, with state
    forms: list[str] = field(default_factory=list)  # the upstream's issue forms at the base
    rule: str | None = None  # the cited line asking for an issue first


_LABELS = re.compile(r"\blabels? ([\w-]+(?:\+[\w-]+)*)")


def post_first(outreach: facts.OutreachData | None, forms: list[str],
               rules: Sequence[policy.Rule]) -> PostFirst:
    """The first open, verified issue the outreach data records (its own order), else the
    upstream's issue forms."""
    issues = [p for p in (outreach.prior_art if outreach else [])
              if p.kind == "issue" and p.verified]
    rule = next((f"{r.citations[0].file}:{r.citations[0].line}" for r in rules
                 if r.id == "issue-first" and r.citations), None)
    first = next((p for p in issues if p.state == "open"), None)
    others = [f"{p.ref} ({p.state})" for p in issues if p is not first]
    if first is None:
        return PostFirst(None, others=others, forms=forms, rule=rule,
                         source=outreach.file if outreach else "")
    m = _LABELS.search(first.checked_via)
    return PostFirst(first.ref, first.url, first.state, m.group(1) if m else None,
                     outreach.file if outreach else "", others, [], rule)


def issue_forms(paths: Sequence[str]) -> list[str]:
    """The upstream's issue forms (``.github/ISSUE_TEMPLATE``), a feature form first."""
    forms = [p for p in paths if PurePosixPath(p).suffix in (".yml", ".yaml", ".md")
             and PurePosixPath(p).stem != "config"]
    return sorted(forms, key=lambda p: not re.search(r"enhancement|feature", p, re.I))


# -- the order of pull requests ----------------------------------------------------------


@dataclass
class Dependency:
    patch: str
    needs: str  # an earlier patch it cannot go without
    files: list[str]  # where its hunks touch lines ``needs`` adds (context or removed)
    names: list[str]  # public API of ``needs`` its added lines use


def short(name: str) -> str:
    """``0002`` for ``0002-llama-...patch``; the name itself when it has no number."""
    head = name.split("-", 1)[0]
    return head if head.isdigit() else name


def dependencies(patches: Sequence[Patch], api: dict[str, list[facts.ApiItem]]
                 ) -> list[Dependency]:
    """For each patch, the earlier patches whose added lines its hunks touch (it would not
    apply without them) or whose public API its added lines use. Added lines are carried
    through every later patch's hunks, so a patch is compared with the file as it
    applies to."""
    added: dict[str, dict[str, set[int]]] = {}  # path -> patch -> its added lines, now
    out: list[Dependency] = []
    for p in patches:
        touches: dict[str, list[str]] = {}
        for f in p.files:
            lines = added.get(f.source or f.path, {})
            touched = {n for h in f.hunks for n in _pre_image(h)}
            for earlier, mine in lines.items():
                if touched & mine:
                    touches.setdefault(earlier, []).append(f.path)
            move = _line_map(f.hunks)
            moved = {earlier: {m for n in mine if (m := move(n)) is not None}
                     for earlier, mine in lines.items()}
            moved[p.name] = {n for h in f.hunks for n in decls.added_lines(h)}
            added.pop(f.source or f.path, None)
            if f.target:
                added[f.target] = moved
        code = " ".join(facts.strip_comments(a.text) for f in p.files
                        for a in facts.added_lines(f))
        for earlier in [q.name for q in patches[: patches.index(p)]]:
            names = sorted({a.name for a in api.get(earlier, [])
                            if re.search(rf"\b{re.escape(a.name)}\b", code)})
            if earlier in touches or names:
                out.append(Dependency(p.name, earlier, sorted(set(touches.get(earlier, []))),
                                      names))
    return out


def _pre_image(h: Hunk) -> list[int]:
    """The old file's lines a hunk must find (context and removed lines)."""
    out, n = [], h.source_start
    for ln in h.lines:
        if ln[:1] in (" ", "-"):
            out.append(n)
            n += 1
    return out


def _line_map(hunks: Sequence[Hunk]) -> Callable[[int], int | None]:
    """Old line number -> new line number through ``hunks`` (None: the line is removed)."""
    exact: dict[int, int | None] = {}
    spans: list[tuple[int, int]] = []  # (last old line of a hunk, shift after it)
    for h in hunks:
        o = h.source_start + (1 if h.source_length == 0 else 0)
        n = h.target_start + (1 if h.target_length == 0 else 0)
        for ln in h.lines:
            tag = ln[:1]
            if tag == " ":
                exact[o] = n
                o, n = o + 1, n + 1
            elif tag == "-":
                exact[o] = None
                o += 1
            elif tag == "+":
                n += 1
        spans.append((o - 1, n - o))

    def move(line: int) -> int | None:
        if line in exact:
            return exact[line]
        shift = 0
        for last, after in spans:
            if line > last:
                shift = after
        return line + shift

    return move


# -- what the upstream asks that the evidence does not cover -------------------------------


@dataclass
class Gap:
    ask: str  # what is asked, quoted
    source: str  # "CONTRIBUTING.md:47" or ".github/pull_request_template.md:14"
    status: str  # "no record runs llama-bench", "yours to confirm", ...
    covered: bool = False  # a record of the patch as it is runs what is asked
    records: list[str] = field(default_factory=list)  # those records, or of other stacks
    reruns: list[list[str]] = field(default_factory=list)  # their reruns (rerun.py)
    tools: list[str] = field(default_factory=list)  # what the covering records run
    # per record, the asked tools it runs, where that is not all of them
    partial: list[list[str]] = field(default_factory=list)
    # per record, what its rerun needs when it is not the command as recorded ("": nothing)
    needs: list[str] = field(default_factory=list)


_TOOLS = re.compile(r"\bci/|llama-[\w-]+|test-[\w-]+|\bperplexity\b|\bbench\b", re.I)
_COMPARISON = re.compile(r"\bnot (?:be )?(?:affected|impacted|degraded|changed)\b|"
                         r"\bregress", re.I)
_IF_MODIFIED = re.compile(r"^\W*if you modified (?:the |a |an )?`?([\w./-]+)`?", re.I)


def runs(command: Sequence[str], tool: str, root: Path | None = None, cwd: str = "") -> bool:
    """Whether a recorded command runs ``tool``: a word of it (``bash -c`` text split too)
    is the program (``/build/bin/llama-bench``; ``llama-perplexity`` for ``perplexity``) or,
    for a directory such as ``ci/``, a path in it. A record's name says nothing; a wrapper
    script counts when it is the program run (the command's first word, or an
    interpreter's script) and a file of the project at ``root`` (``scripts``) whose own
    lines (comments aside) run the tool, as scripts/perf-prefixes.sh runs llama-bench; a
    file it is given to read does not (the text llama-perplexity scores)."""
    words = [w for arg in command for w in arg.split()]
    if _names(_upstreams(words, tool, root, cwd), tool):
        return True
    return root is not None and any(
        _names(_upstreams(_script_words(root, path), tool, root), tool)
        for path in scripts(command, root, cwd))


def _upstreams(words: Sequence[str], tool: str, root: Path | None, cwd: str = "") -> list[str]:
    """The words that may name the upstream's ``tool``. For a directory (``ci/``), a path
    of the project's own is left out, however it starts (``native/ci/vulkan-lane.sh``,
    ``$REPO/native/ci/...``): it runs the project's lane, not the upstream's CI."""
    if root is None or not tool.endswith("/"):
        return list(words)
    folder = tool.rstrip("/")
    kept = []
    for word in words:
        parts = PurePosixPath(word).parts
        # the word's path and each of its tails that still holds the folder
        tails = [str(PurePosixPath(*parts[i:])) for i in range(1, len(parts))
                 if folder in parts[i:-1]]
        if _project_file(word, root, cwd) is None and \
                all(_project_file(t, root) is None for t in tails):
            kept.append(word)
    return kept


def scripts(command: Sequence[str], root: Path, cwd: str = "") -> list[Path]:
    """The project's files at ``root`` that a recorded command runs (its program, or an
    interpreter's script)."""
    return [path for word in _programs(command)
            if (path := _project_file(word, root, cwd)) is not None]


def _project_file(word: str, root: Path, cwd: str = "") -> Path | None:
    """The project's file at ``root`` that ``word`` names, if any. A relative name is taken
    from ``root``, and an absolute one under the record's ``cwd`` is moved there, never read
    where the record was made: the same records must give the same brief wherever the
    project is checked out."""
    top = root.resolve()
    name = PurePosixPath(word)
    if name.is_absolute():
        if name.is_relative_to(top):
            name = name.relative_to(top)
        elif cwd and name.is_relative_to(cwd):
            name = name.relative_to(cwd)
        else:
            return None
    try:
        path = (top / name).resolve()
    except (OSError, ValueError):
        return None
    # a hidden folder (.venv, .patchctl) holds what this checkout installed or made,
    # not the project's files: another checkout has other ones, or none
    if path.is_relative_to(top) and path.is_file() and \
            not any(part.startswith(".") for part in path.relative_to(top).parts):
        return path
    return None


_INTERPRETERS = frozenset({"sh", "bash", "dash", "zsh", "env", "python", "python3"})


def _programs(command: Sequence[str]) -> list[str]:
    """The programs a command runs: its first word and, after an interpreter, the script
    it is given (the first word of ``-c`` text, or the first argument not an option)."""
    out: list[str] = []
    args = list(command)
    while args:
        out.append(args[0])
        if PurePosixPath(args[0]).name not in _INTERPRETERS:
            break
        rest = args[1:]
        if "-c" in rest and rest.index("-c") + 1 < len(rest):
            args = rest[rest.index("-c") + 1].split()
        else:
            args = [a for a in rest if not a.startswith("-")][:1]
    return out


def _names(words: Sequence[str], tool: str) -> bool:
    for word in words:
        name = PurePosixPath(word).name.lower()
        if tool.endswith("/"):
            if word.lower().startswith(tool) or f"/{tool}" in word.lower():
                return True
        elif name == tool or name.endswith(f"-{tool}"):
            return True
    return False


_SCRIPT_MAX = 256 * 1024


def _script_words(root: Path, named: Path) -> list[str]:
    """The words of the script at ``named``, when it is a text file of the project at
    ``root`` (outside it, or a binary, or a large file: none)."""
    try:
        path = named.resolve()
        if not path.is_relative_to(root.resolve()) or not path.is_file() or \
                path.stat().st_size > _SCRIPT_MAX:
            return []
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError):
        return []
    lines = (ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))
    return [w for ln in lines for w in re.split(r"[\s\"'`();|&<>=]+", ln) if w]


def gaps(rules: Sequence[policy.Rule], template: Sequence[policy.TemplateSection],
         template_path: str | None, evidence: Sequence[recorded.EvidenceRun],
         assistance: Sequence[facts.Assistance], touched: Sequence[str],
         root: Path | None = None) -> list[Gap]:
    """The tests the rules ask for: covered by the records of the patch as it is that run
    them (with their commands), else not covered (and which records of other stacks run
    them); and the template's disclosure item when the patch records no Assisted-by
    trailer."""
    out: list[Gap] = []
    for rule in rules:
        if rule.id != "test-asks":
            continue
        for c in rule.citations:
            cond = _IF_MODIFIED.match(c.text)
            if cond and not any(cond.group(1).strip("/") in PurePosixPath(p).parts
                                for p in touched):
                continue  # asked only for changes to what the patch does not touch
            named = list(dict.fromkeys(t.lower() for t in _TOOLS.findall(c.text)))
            tools = [t for t in named if not any(t != u and t in u for u in named)]
            where = f"{c.file}:{c.line}"
            missing, older = [], []
            covering: list[tuple[str, list[recorded.EvidenceRun]]] = []
            # "not affected by your changes" asks for a comparison: a record that runs
            # llama-bench for another end (a baseline of another design) does not answer it
            compares = bool(_COMPARISON.search(c.text))
            for t in tools:
                ran = [e for e in evidence if runs(e.command, t, root, e.cwd)
                       and (not compares or _compares(e))]
                now = [e for e in ran if e.current]
                if now:
                    covering.append((t, now))
                else:
                    missing.append(t)
                    older += [e.file for e in ran if e.file not in older]
            if covering:
                out.append(_covered(c.text, where, covering, root))
            if missing:
                runs_it = "compares " if compares else "runs "
                what = ", ".join(missing) + (" before and after the patch" if compares else "")
                status = "no evidence record " + runs_it + what if not older else \
                    "no record of this patch as it is " + runs_it + what + \
                    " (records of other stacks do)"
                out.append(Gap(c.text, where, status, records=older))
    for s in template:  # the checklist items a fact could answer: the disclosure
        for item in s.items:
            if re.search(r"disclos", item, re.I):
                line = s.item_lines[s.items.index(item)] if s.item_lines else s.line
                recorded = "; ".join(a.trailer for a in assistance)
                out.append(Gap(item.rstrip(": "), f"{template_path}:{line}",
                               f"the patch records {recorded}: answer YES, in your own words"
                               if recorded else "the patch records no trailer (not a NO): "
                               "ask whoever wrote it; yours to answer truthfully"))
    return out


def _compares(e: recorded.EvidenceRun) -> bool:
    """Whether a record compares the pin with the patch: its results per prefix (a ctest
    or llama-bench log of the pin and each prefix), or a command that names the pin."""
    pin = (e.pin or "")[:7]
    return bool(e.perf or e.compare or
                (len(pin) == 7 and any(pin in w for arg in e.command for w in arg.split())))


def _covered(ask: str, where: str,
             covering: Sequence[tuple[str, Sequence[recorded.EvidenceRun]]],
             root: Path | None = None) -> Gap:
    """One entry for an ask's covered tools: every record that runs one of them, once,
    with the tools it runs when it does not run them all, and how a clone reruns it."""
    tools = [t for t, _ in covering]
    runs_of: dict[str, list[str]] = {}
    records: list[recorded.EvidenceRun] = []
    for t, now in covering:
        for e in now:
            if e.file not in runs_of:
                runs_of[e.file] = []
                records.append(e)
            runs_of[e.file].append(t)
    again = [rerun.rerun(e.command, e.cwd, root, scripts(e.command, root, e.cwd)) if root
             else rerun.Rerun(e.command, "", True) for e in records]
    return Gap(ask, where, "run by a record of this patch: " + ", ".join(tools), True,
               [e.file for e in records], [r.command for r in again], tools,
               [[] if len(runs_of[e.file]) == len(tools) else runs_of[e.file] for e in records],
               [_needs(r) for r in again])


def _needs(r: rerun.Rerun) -> str:
    """What a rerun needs, in the brief's words ("": a clone of the project and nothing more)."""
    if r.as_recorded:
        return f"needs {r.needs}" if r.needs else ""
    return "its script's usage; needs: " + (r.needs or "what the script states")


# -- the guide: one entry for the same change in many files ---------------------------------


@dataclass
class GuideGroup:
    files: list[str]  # every file that gets this change; one unless it repeats
    hunks: list[int]  # indexes into the patch's guide: the first file's hunks
    diff: list[str]  # the change's removed and added lines (a repeated change only)


def guide_groups(patch: Patch) -> list[GuideGroup]:
    """Files whose hunks remove and add the same lines (a name that is the file's own stem
    counts as the same) become one group; the rest one group each, in patch order."""
    groups: dict[tuple[tuple[str, ...], ...], GuideGroup] = {}
    index = 0
    for f in patch.files:
        stem = PurePosixPath(f.path).stem
        key = tuple(_normal(h, stem) for h in f.hunks) or (("file", f.path),)
        first = list(range(index, index + len(f.hunks)))
        index += len(f.hunks)
        if key in groups:
            groups[key].files.append(f.path)
        else:
            groups[key] = GuideGroup([f.path], first,
                                     [ln for h in f.hunks for ln in h.lines if ln[:1] in "+-"])
    out = list(groups.values())
    for g in out:
        if len(g.files) == 1 or len(g.diff) > 30:
            g.diff = []
    return out


def _normal(h: Hunk, stem: str) -> tuple[str, ...]:
    word = re.compile(rf"(?<![A-Za-z0-9]){re.escape(stem)}(?![A-Za-z0-9])") if stem else None
    return tuple(word.sub("\0", ln.rstrip()) if word else ln.rstrip()
                 for ln in h.lines if ln[:1] in "+-")


# -- terse facts from the outreach data's text -------------------------------------------

_SENTENCE_END = re.compile(r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\betc\.)(?<!\bvs\.)(?<!\bcf\.)"
                           r"(?<=\.)\s+(?=[\w(`'\"])")
_LONG = 50  # words: a longer sentence is split at its semicolons too


def sentences(text: str) -> list[str]:
    """A field's text as one fact per sentence (the words as written, split only; a long
    sentence also at its semicolons)."""
    out: list[str] = []
    for s in _SENTENCE_END.split(text.strip()):
        parts = re.split(r"(?<=;)\s+", s) if len(s.split()) > _LONG else [s]
        out += [p.strip() for p in parts if p.strip()]
    return out
