"""One error hierarchy; the CLI turns each into a one-line message and an exit code.

Expected outcomes (a patch that does not apply, a lint finding) are results,
never exceptions: these classes are for input and environment problems.
"""

from __future__ import annotations

import os

SECRET_ENV = ("GITHUB_TOKEN",)  # values patchctl never prints, records or caches

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_ENVIRONMENT = 3
EXIT_INTERRUPTED = 130


class PatchctlError(Exception):
    """Base class. ``str(err)`` is the whole user-facing message."""

    exit_code = EXIT_USAGE


class InputError(PatchctlError):
    """The user's files or arguments are wrong (a bad series, patch or pin)."""

    exit_code = EXIT_USAGE


class StackError(InputError):
    """The stack on disk is malformed."""


class EnvironmentFailure(PatchctlError):
    """A tool or resource outside patchctl failed: git missing, upstream unreachable."""

    exit_code = EXIT_ENVIRONMENT


class GitError(EnvironmentFailure):
    """A git command failed unexpectedly; carries the command and its stderr. ``why`` is
    the reason read from that stderr (gitrepo's ``Result.failure`` reads it with
    ``toolout.reason``: this module, at the bottom, imports nothing of patchctl)."""

    def __init__(self, argv: list[str], returncode: int, stderr: str, why: str) -> None:
        self.argv = argv
        self.returncode = returncode
        self.stderr = stderr
        # One line, whatever the arguments hold (a commit message has newlines).
        shown = " ".join(a.replace("\n", "\\n") for a in argv)
        super().__init__(f"`{shown}` failed (exit {returncode}): {why}")


class BusyError(EnvironmentFailure):
    """Another patchctl process holds the stack's lock."""


def redact(text: str) -> str:
    """``text`` with the value of every secret in SECRET_ENV replaced by ``***``: the one
    filter for what patchctl prints (errors) and records (evidence)."""
    for name in SECRET_ENV:
        value = os.environ.get(name, "")
        if len(value) >= 4:  # a one-letter "token" would garble every message
            text = text.replace(value, "***")
    return text


def redact_bytes(data: bytes) -> bytes:
    return redact(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
