"""bench/replay.py's two drivers: `patchctl rebase-pin` and `git am -3`, each taken through
one bump as a person would, every stop resolved with the maintainers' own version of the
stopped patch (``theirs``; None: they dropped it, and so is it here).

A resolution is what a person does in the stopped work tree: throw the conflicted apply
away (`git reset --hard HEAD`), apply the maintainers' patch there (`git apply --index
--3way`), and go on (`patchctl rebase-pin --continue` / `git am --continue`). A dropped
patch is resolved to nothing (`--continue` then drops it; `git am --skip`). A stop whose
resolution reaches files outside the patch's ``Scope:`` takes one confirmation
(`--continue --widen-scope`), counted apart; whatever else a stop needed beyond the
resolution is a hand edit, counted and named: their version not applying, or any other
refusal (the patch is then dropped, and said so).
Every process runs in a group of its own under a deadline (patchctl.procs).
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _common import BenchError
from replay_classify import classify_stop
from replay_history import QueuePatch
from replay_proc import call, err_line, out

# A stop at a move patchctl doubts (it goes on, but a merge took part of its change as
# upstream's, or it uses names upstream removed): a class of its own, not a conflict's.
DOUBTED = "doubted move"

Log = Callable[[str], None]


def patchctl_json(
    patchctl: Path, project: Path, *args: str
) -> tuple[int, dict[str, Any] | None, str]:
    done = call([patchctl, *args, "--json"], cwd=project, check=False)
    try:
        return done.returncode, json.loads(out(done)), err_line(done)
    except json.JSONDecodeError:
        return done.returncode, None, err_line(done)


def _resolve_in(work: Path, theirs: QueuePatch | None) -> str:
    """The person's resolution in ``work``: their version applied, or nothing (dropped)."""
    call(["git", "-C", work, "reset", "-q", "--hard", "HEAD"])
    if theirs is None:
        return "dropped"
    with tempfile.NamedTemporaryFile(suffix=".patch") as f:
        f.write(theirs.data)
        f.flush()
        done = call(["git", "-C", work, "apply", "--index", "--3way", f.name], check=False)
    if done.returncode != 0:
        call(["git", "-C", work, "reset", "-q", "--hard", "HEAD"])
        return "theirs-does-not-apply"
    return "theirs"


def drive_patchctl(
    patchctl: Path,
    project: Path,
    upstream: Path,
    new: str,
    theirs: dict[str, QueuePatch | None],
    origin: dict[str, str],
    log: Log,
) -> dict[str, Any]:
    """A real `rebase-pin NEW --drop-upstream` and a `--continue` per stop, to the end."""
    code, data, err = patchctl_json(
        patchctl, project, "rebase-pin", new, "--drop-upstream", "--upstream", str(upstream)
    )
    stops: list[dict[str, Any]] = []
    while data is not None and data.get("status") == "stopped":
        name = data["conflict"]
        work = Path(data["work"])
        graded = next(p for p in data["patches"] if p["name"] == name)
        stop: dict[str, Any] = {
            "patch": name,
            "conflicts": graded.get("conflicts", []),
            "tried": graded.get("tried", []),  # what each strategy said, as it stopped
            "hand_edits": [],
            "confirmations": [],
        }
        stop.update(
            {"class": DOUBTED}
            if graded.get("doubted")
            else classify_stop(
                work,
                "HEAD",
                (project / "stack" / "patches" / name).read_bytes(),
                search=(upstream, new),
            )
        )
        # The .rej files the stop leaves where it could not merge are read, never
        # deleted by hand: --continue removes them while they are as the stop wrote them.
        stop["rejects"] = data.get("rejects", [])
        stop["resolution"] = _resolve_in(work, theirs.get(origin[name]))
        if stop["resolution"] == "theirs-does-not-apply":
            stop["hand_edits"].append("their version does not apply here: dropped instead")
        log(f"    stop {len(stops) + 1}: {name} ({stop['class']}) -> {stop['resolution']}")
        args = ["rebase-pin", "--continue", "--drop-upstream"]
        code, data, err = patchctl_json(patchctl, project, *args)
        if data is None and "outside its Scope" in err:
            stop["confirmations"].append("Scope: (--widen-scope)")
            code, data, err = patchctl_json(patchctl, project, *args, "--widen-scope")
        if data is None and code == 2:
            stop["hand_edits"].append(f"refused: {err[:300]}")
            stop["resolution"] = "dropped (refused)"
            call(["git", "-C", work, "reset", "-q", "--hard", "HEAD"])
            code, data, err = patchctl_json(patchctl, project, *args)
        stops.append(stop)
        if len(stops) > len(theirs) + 2:
            raise BenchError(f"rebase-pin stopped {len(stops)} times on {len(theirs)} patches")
    if data is None or data.get("status") != "rebased":
        raise BenchError(f"rebase-pin ended {code}: {err or (data or {}).get('message')}")
    return {"stops": stops, "patches": data["patches"], "status": data["status"]}


def touched_paths(patches: Sequence[bytes]) -> list[str]:
    found: set[str] = set()
    for data in patches:
        for m in re.finditer(rb"^diff --git a/(\S+) b/(\S+)$", data, re.M):
            found.update(m.group(i).decode("utf-8", "replace") for i in (1, 2))
        for m in re.finditer(rb"^(?:---|\+\+\+) [ab]/([^\t\n]+)", data, re.M):
            found.add(m.group(1).decode("utf-8", "replace"))  # a plain diff has no git line
    return sorted(found)


def drive_am(
    mirror: Path,
    root: Path,
    new: str,
    files: Sequence[Path],
    theirs: dict[str, QueuePatch | None],
    origin: dict[str, str],
    paths: Sequence[str],
    log: Log,
) -> dict[str, Any]:
    """`git am -3` of ``files`` (the stack's patches, in order) on ``new`` in a throwaway
    clone (sparse: the paths the inputs touch; a mirror may lack other blobs)."""
    repo = root / "am"
    call(["git", "clone", "-q", "--shared", "--no-checkout", mirror, repo])
    call(["git", "-C", repo, "sparse-checkout", "set", "--no-cone", *(f"/{p}" for p in paths)])
    call(["git", "-C", repo, "checkout", "-q", "--detach", new])
    stops: list[dict[str, Any]] = []
    done = call(["git", "-C", repo, "am", "-3", "-q", *files], check=False)
    apply_dir = repo / ".git" / "rebase-apply"
    while apply_dir.is_dir():
        if done.returncode == 0:
            raise BenchError("git am left .git/rebase-apply behind with exit 0")
        name = files[int((apply_dir / "next").read_text()) - 1].name
        stop: dict[str, Any] = {"patch": name}
        stop.update(classify_stop(repo, "HEAD", (apply_dir / "patch").read_bytes()))
        stop["resolution"] = _resolve_in(repo, theirs.get(origin[name]))
        log(f"    git am stop {len(stops) + 1}: {name} ({stop['class']}) -> {stop['resolution']}")
        stops.append(stop)
        staged = call(["git", "-C", repo, "diff", "--cached", "--quiet"], check=False)
        again = len(stops) > 1 and stops[-2]["patch"] == name
        if again:  # git am refused the resolution it stopped for: one stop, skipped
            stops.pop()
            stops[-1]["resolution"] = "refused by git am: skipped"
        verb = "--continue" if staged.returncode and not again else "--skip"
        done = call(["git", "-C", repo, "am", verb], check=False)
        if (
            verb == "--skip"
            and apply_dir.is_dir()
            and files[int((apply_dir / "next").read_text()) - 1].name == name
        ):
            # git am cannot even skip it: a blob the mirror lacks ("invalid object")
            return {"stops": stops, "error": err_line(done)}
        if len(stops) > len(files) + 2:
            raise BenchError(f"git am stopped {len(stops)} times on {len(files)} patches")
    return {"stops": stops}
