"""Creating and changing the stack on disk (``init`` now; import/new/refresh later)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from patchctl import fsutil, gitrepo
from patchctl.errors import EnvironmentFailure, InputError, StackError
from patchctl.fingerprint import make_lock
from patchctl.stack import LOCK_FILE, PIN_FILE, SERIES, Pin, Stack, check_commit_id, render_lock

SERIES_HEADER = (
    "# patchctl series: one patch per line, in apply order; `-pN` sets the strip level.\n"
)


@dataclass(frozen=True)
class InitResult:
    stack: Stack
    pin: Pin
    checked: bool
    why: str = ""


def init_stack(project: Path, *, url: str, pin: str, name: str | None = None,
               record_url: str | None = None) -> InitResult:
    stack = Stack(project / "stack")
    for f in (SERIES, PIN_FILE, LOCK_FILE):
        if (stack.root / f).exists():
            raise InputError(f"{stack.root / f} already exists; this project has a stack")
    local = Path(url).expanduser()
    is_local = local.exists()
    recorded_url = record_url or (str(local.resolve()) if is_local else url)
    name = name or recorded_url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git") or "upstream"
    commit, tag, checked, why = pin.lower(), None, False, ""
    try:
        repo = gitrepo.git_dir(local) if is_local else None
        if repo is None and check_commit_id(commit, what="--pin"):
            repo = gitrepo.cached_upstream(url, commit)
        resolved = gitrepo.resolve_commit(repo, pin)
        if resolved is None:
            raise InputError(f"--pin {pin} is not a commit in upstream {url}")
        if resolved != commit:
            tag = pin  # a tag or branch: keep it as information next to the real pin
        commit, checked = resolved, True
    except EnvironmentFailure as e:
        check_commit_id(commit, what="--pin")
        why = str(e)
    check_commit_id(commit, what="--pin")
    the_pin = Pin(name=name, url=recorded_url, commit=commit, tag=tag)
    stack.patches_dir.mkdir(parents=True, exist_ok=True)
    fsutil.atomic_write(stack.series_path, SERIES_HEADER)
    fsutil.atomic_write(stack.pin_path, the_pin.to_toml())
    fsutil.atomic_write(stack.lock_path, render_lock(make_lock(the_pin, [])))
    return InitResult(stack=stack, pin=the_pin, checked=checked, why=why)


__all__ = ["InitResult", "StackError", "init_stack"]
