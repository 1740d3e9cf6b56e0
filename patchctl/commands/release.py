from __future__ import annotations

from pathlib import Path

import click

from patchctl.commands._common import (
    emit_json,
    end_progress,
    exit_for,
    json_option,
    progress,
    quiet_option,
    stack_of,
)
from patchctl.textout import count


@click.group()
def release() -> None:
    """Reproducible worker packages: build one per lane, verify one before use."""


@release.command("build")
@click.option("--tree", type=click.Path(file_okay=False, path_type=Path),
              help="The upstream tree made by `patchctl apply --into TREE` (its stamp must "
              "match stack/stack.lock).  [default: <project>/build/<upstream name>]")
@click.option("--lane", type=click.Choice(["cpu", "cpu-avx2", "vulkan"]), default="cpu",
              show_default=True,
              help="Hardware lane: cpu is the architecture's baseline; cpu-avx2 needs an "
              "x86-64 CPU with AVX2, FMA, F16C and BMI2; vulkan is the baseline CPU with the "
              "upstream's Vulkan backend (-DGGML_VULKAN=ON), built and self-tested where "
              "ggml-vulkan has a device (the environment's Vulkan_INCLUDE_DIR names newer "
              "headers than the system's).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Directory for the archive.  [default: <project>/build/release]")
@click.option("--upstream-target",
              help="The library target of the tree the worker links.  [default: llama for "
              "llama.cpp, else the upstream's name]")
@click.option("--build-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Build in this directory (emptied first: a new or empty one, or one a "
              "release build made) instead of a temp dir, so ccache can serve the next "
              "build; the archive's bytes do not depend on it.")
@json_option
@quiet_option
@click.pass_context
def build(ctx: click.Context, tree: Path | None, lane: str, out: Path | None,
          upstream_target: str | None, build_dir: Path | None, as_json: bool) -> None:
    """Build a reproducible worker package from this commit and a stamped tree.

    The checkout must be clean; SOURCE_DATE_EPOCH is the commit's time, so the
    same commit and tree give a byte-identical archive anywhere. The package
    holds bin/worker, manifest.json, recipe.json, BUILDINFO, an SPDX 2.3 SBOM,
    the upstream's license and SHA256SUMS; its worker runs --self-test before
    the archive is kept.
    """
    from patchctl.release.build import build_release

    result = build_release(stack_of(ctx), tree, lane=lane, out=out,
                           upstream_target=upstream_target, build_dir=build_dir,
                           progress=progress)
    end_progress()
    if as_json:
        emit_json(result.to_dict())
        return
    checks = result.self_test.get("checks", [])
    passed = sum(c["status"] == "pass" for c in checks)
    skipped = sum(c["status"] == "skipped" for c in checks)
    click.echo(f"{result.archive}: {result.size} bytes, sha256 {result.sha256}")
    click.echo(f"  lane {result.lane}, stack {result.fingerprint[:16]}, commit "
               f"{result.commit[:12]}, SOURCE_DATE_EPOCH {result.source_date_epoch}")
    click.echo(f"  self-test: {passed} passed, {skipped} skipped; built in "
               f"{result.seconds:.1f} s")


@release.command("verify")
@click.argument("package", type=click.Path(path_type=Path))
@json_option
def verify(package: Path, as_json: bool) -> int:
    """Check PACKAGE (a .tar.gz or its unpacked directory) before using it.

    Every file against SHA256SUMS; manifest.json, recipe.json and the SBOM
    against their schemas, then against the identity the binary embeds
    (`worker --version --json`); the lane against this host; then the worker's
    own start-up check. Nothing from a package that fails a check before
    those is run. Exit 1 with one finding per problem.
    """
    from patchctl.release.check import verify_package

    report = verify_package(package)
    if as_json:
        emit_json(report.to_dict())
    elif report.ok:
        fp = (report.identity or {}).get("stack", {}).get("short", "?")
        click.echo(f"{package}: OK ({count(report.files, 'file')}, lane {report.lane}, stack {fp})")
    else:
        for finding in report.findings:
            click.echo(f"{package}: {finding}")
        unrun = "" if report.worker_run else "; bin/worker was not run"
        click.echo(f"{package}: {len(report.findings)} finding(s){unrun}")
    return exit_for(report.ok)
