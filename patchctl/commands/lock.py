from __future__ import annotations

import click

from patchctl.commands._common import emit_json, project_dir, stack_of


@click.command()
@click.option("--check", is_flag=True,
              help="Only report whether the lock is current (exit 1 if not).")
@click.pass_context
def lock(ctx: click.Context, check: bool) -> int:
    """Rewrite stack/stack.lock from the pin and the patches' diffs."""
    from patchctl.errors import StackError
    from patchctl.model.fingerprint import lock_state, make_lock, short
    from patchctl.model.stackwrite import write_lock

    stack = stack_of(ctx)
    new = make_lock(stack.pin(), stack.patches())
    try:
        state, why = lock_state(stack, new)  # the verdict verify gives
    except StackError:
        if check:
            raise
        state, why = "stale", "unreadable"  # what `patchctl lock` is there to rewrite
    if state == "current":
        click.echo(f"{stack.lock_path}: current ({short(new.fingerprint)})")
        return 0
    if check:
        click.echo(f"{stack.lock_path}: stale: {why} (would be {short(new.fingerprint)})")
        return 1
    write_lock(project_dir(ctx), stack, new)
    click.echo(f"{stack.lock_path}: written ({short(new.fingerprint)})")
    return 0


@click.command("fingerprint")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--cmake", is_flag=True, help="Print a CMake snippet (set() calls).")
@click.pass_context
def fingerprint_cmd(ctx: click.Context, as_json: bool, cmake: bool) -> None:
    """Print the stack fingerprint computed from the stack (not read from the lock)."""
    from patchctl.model.fingerprint import make_lock, short

    stack = stack_of(ctx)
    lk = make_lock(stack.pin(), stack.patches())
    if as_json:
        emit_json({
            "algorithm": lk.algorithm, "name": lk.name, "pin": lk.pin,
            "fingerprint": lk.fingerprint, "short": short(lk.fingerprint),
            "patches": [{"file": p.file, "strip": p.strip, "digest": p.digest}
                        for p in lk.patches],
        })
    elif cmake:
        values = {"ALGORITHM": lk.algorithm, "UPSTREAM_NAME": lk.name, "PIN": lk.pin,
                  "FINGERPRINT": lk.fingerprint, "FINGERPRINT_SHORT": short(lk.fingerprint),
                  "PATCHES": ";".join(p.file for p in lk.patches)}
        click.echo("\n".join(f"set(PATCHCTL_{k} {_cmake_quoted(v)})" for k, v in values.items()))
    else:
        click.echo(lk.fingerprint)


def _cmake_quoted(value: str) -> str:
    """``value`` as a CMake quoted argument that reads back as exactly ``value``: a pin name
    such as ``x") execute_process(...`` or ``${ENV{HOME}}`` stays data."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
    return '"' + escaped.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t") + '"'
