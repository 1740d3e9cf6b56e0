"""Run the patchctl CLI and SIGKILL it just before its Nth filesystem mutation.

    python tests/killer.py N patchctl-args...
    KILLER_SIGNAL=SIGINT python tests/killer.py N patchctl-args...   # Ctrl-C instead

The mutations counted are the ones that move or remove what a reader could
see: ``os.rename``, ``os.replace``, ``shutil.rmtree`` and ``fsutil.exchange``.
With N = 0 nothing is killed and the number of mutations made is printed to
stderr as ``KILLER-COUNT n``, so a test can try every point in turn. The crash
tests use this instead of hooks in patchctl itself.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import sys
from collections.abc import Callable
from typing import Any


def main() -> None:
    target = int(sys.argv[1])
    sig = getattr(signal, os.environ.get("KILLER_SIGNAL", "SIGKILL"))
    if sig == signal.SIGINT:
        # Ctrl-C reaches a foreground process, whose Python turns it into KeyboardInterrupt;
        # a test run started in the background (`... &` in a script) passes SIGINT on ignored.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    count = 0

    def hook(fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            nonlocal count
            count += 1
            if count == target:
                os.kill(os.getpid(), sig)
            return fn(*args, **kwargs)

        return wrapped

    from patchctl import fsutil

    os.rename = hook(os.rename)  # type: ignore[assignment]
    os.replace = hook(os.replace)  # type: ignore[assignment]
    shutil.rmtree = hook(shutil.rmtree)  # type: ignore[assignment]
    fsutil.exchange = hook(fsutil.exchange)  # type: ignore[assignment]
    atexit.register(lambda: print(f"KILLER-COUNT {count}", file=sys.stderr))

    from patchctl.cli import main as cli_main

    cli_main(sys.argv[2:])


if __name__ == "__main__":
    main()
