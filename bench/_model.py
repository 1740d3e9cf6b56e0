"""The seeded model the stage benches run, its layer splits, and the processes around it.

bench/pipeline_vs_rpc.py, decode_cost.py and stage_tls.py run the same seeded random
llama (`worker --write-tiny-model`: the same bytes from the same seed, kept outside the
repository) split the same way: into our stages by SPLITS, and for llama.cpp's RPC
servers by a tensor split that gives server k exactly stage k's layers.
"""

from __future__ import annotations

import hashlib
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from _common import BenchError

# About 0.5 B parameters: 24 x (4 x 1024^2 / (1, 2, 2, 1) + 3 x 1024 x 4864) + 2 x 32000 x 1024.
SHAPE = {
    "n-layer": 24,
    "n-embd": 1024,
    "n-head": 16,
    "n-head-kv": 8,
    "n-ff": 4864,
    "n-vocab": 32000,
}
SEED = 26
SPLITS = {1: [(0, 24)], 2: [(0, 12), (12, 24)], 3: [(0, 8), (8, 16), (16, 24)]}


def shape(n_embd: int) -> dict[str, int]:
    """SHAPE at another width (--n-embd): heads of 64, half as many KV heads, the
    feed-forward as wide relative to it; the same layers and vocabulary. A narrower
    model computes less per token and leaves the links' share of it larger;
    1024 gives SHAPE itself."""
    return {
        **SHAPE,
        "n-embd": n_embd,
        "n-head": n_embd // 64,
        "n-head-kv": n_embd // 128,
        "n-ff": SHAPE["n-ff"] * n_embd // SHAPE["n-embd"],
    }


def model_label(n_embd: int) -> str:
    """`0.5b` for SHAPE, `e256` for --n-embd 256: the model file's name."""
    return "0.5b" if n_embd == SHAPE["n-embd"] else f"e{n_embd}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    t_end = time.monotonic() + timeout
    while time.monotonic() < t_end:
        if proc.poll() is not None:
            raise BenchError(f"`{' '.join(proc.args)}` exited {proc.returncode} before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise BenchError(f"nothing listens on {port} after {timeout} s")


def stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


@dataclass
class Tools:
    worker: Path
    llama_bench: Path
    rpc_server: Path
    threads: int
    batch: int
    reply: str
    flash_attn: str = "auto"  # llama.cpp's, for both designs


def write_model(
    tools: Tools, model_dir: Path, kind: str, n_embd: int = SHAPE["n-embd"]
) -> tuple[Path, str]:
    """The seeded model (written once; the sha256 proves a rebuild is the same bytes)."""
    model_dir.mkdir(parents=True, exist_ok=True)
    model = model_dir / f"rand-llama-{model_label(n_embd)}-{kind}-seed{SEED}.gguf"
    if not model.exists():
        tmp = model.with_suffix(".tmp")
        argv = [
            str(tools.worker),
            "--write-tiny-model",
            str(tmp),
            "--seed",
            str(SEED),
            "--type",
            kind,
        ]
        for k, v in shape(n_embd).items():
            argv += [f"--{k}", str(v)]
        print(f"[bench] writing {model.name}", file=sys.stderr, flush=True)
        subprocess.run(argv, check=True)
        tmp.rename(model)
    h = hashlib.sha256()
    with model.open("rb") as f:
        while chunk := f.read(1 << 24):
            h.update(chunk)
    return model, h.hexdigest()


def tensor_split(n: int) -> str:
    """-ts making llama.cpp give RPC server k exactly our stage k's layers: layer il goes to
    the first device whose cumulative share exceeds il / (n_layer + 1)."""
    ends = [b for _, b in SPLITS[n]]
    cum = [(e - 0.5) / (SHAPE["n-layer"] + 1) for e in ends[:-1]] + [1.0]
    shares = [cum[0]] + [cum[i] - cum[i - 1] for i in range(1, n)]
    return "/".join(f"{s * 50:g}" for s in shares)
