"""Read-only GitHub REST lookups for upstream-status --online, with a local cache.

Only GET requests are made, through ``httpget`` (each within a total deadline,
``PATCHCTL_GITHUB_DEADLINE``). The token (``GITHUB_TOKEN``, optional) goes in
the Authorization header and nowhere else: every message that could carry it
is scrubbed, and the cache stores answers, never request headers. Timeouts,
retries with backoff on 5xx, and rate limits (honoured up to a bounded wait)
keep a flaky network from hanging the report; the last good answer for each
reference is cached and shown offline with its age. Answers and cache entries
are untrusted JSON: each is checked against its schema before use, and a cache
entry that is not of it is a miss. Their text is kept exact (``--json`` shows
it as it came); text renderers escape it.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from patchctl import fsutil, httpget
from patchctl.model import schemas
from patchctl.untrusted import BadDocument, parse_json, read_json, validate

if TYPE_CHECKING:
    import requests

DEFAULT_API = "https://api.github.com"
CACHE_FILE = "github-cache.json"
CACHE_SCHEMA = schemas.GITHUB_CACHE
_REF = re.compile(r"(?:https?://github\.com/)?([\w.-]+)/([\w.-]+?)(?:#|/(?:issues|pull)/)(\d+)")
# Of an issue's text only the discussion URLs it names are kept (draft-outreach lists them).
_DISCUSSION_URL = r"^https://github\.com/[\w.-]+/[\w.-]+/discussions/\d+$"
MAX_DISCUSSIONS = 20
_TEXT = {"type": "string"}
_TEXT_OR_NULL = {"type": ["string", "null"]}
# What of an issue's JSON (GET /repos/O/R/issues/N) is used; anything else is ignored.
ISSUE_ANSWER = {
    "type": "object", "required": ["state"],
    "properties": {"state": _TEXT, "title": _TEXT_OR_NULL, "html_url": _TEXT_OR_NULL,
                   "body": _TEXT_OR_NULL,
                   "updated_at": _TEXT_OR_NULL, "closed_at": _TEXT_OR_NULL,
                   "pull_request": {"type": ["object", "null"],
                                    "properties": {"merged_at": _TEXT_OR_NULL}}},
}
_CACHE_FILE = {
    "type": "object", "required": ["schema", "answers"],
    "properties": {"schema": {"const": CACHE_SCHEMA}, "answers": {"type": "object"}},
}
# One answer as ``_state`` makes it, with when it was fetched: exactly these keys.
CACHE_ENTRY = {
    "type": "object", "additionalProperties": False,
    "required": ["kind", "state", "title", "url", "fetched_at"],
    "properties": {"kind": {"enum": ["issue", "pull request"]}, "state": _TEXT,
                   "title": _TEXT, "url": _TEXT, "updated_at": _TEXT_OR_NULL,
                   "closed_at": _TEXT_OR_NULL, "merged_at": _TEXT_OR_NULL,
                   "discussions": {"type": "array", "maxItems": MAX_DISCUSSIONS,
                                   "items": {"type": "string", "pattern": _DISCUSSION_URL}},
                   "fetched_at": _TEXT},
}


@dataclass(frozen=True)
class Settings:
    api: str
    token: str | None
    timeout: float
    deadline: float  # seconds for one request in all: connect, headers and body
    retries: int
    backoff: float
    max_wait: float

    @classmethod
    def from_env(cls) -> Settings:
        env = os.environ

        def number(name: str, default: str, kind: type[float] | type[int] = float, *,
                   positive: bool = False) -> float:
            from patchctl.errors import InputError

            try:
                value = kind(env.get(name, default))
            except ValueError as e:
                raise InputError(f"{name}={env[name]!r} is not a number") from e
            if positive and not (math.isfinite(value) and value > 0):
                raise InputError(f"{name}={env[name]!r} is not a positive number of seconds")
            return value

        return cls(api=env.get("PATCHCTL_GITHUB_API", DEFAULT_API).rstrip("/"),
                   token=env.get("GITHUB_TOKEN") or None,
                   timeout=number("PATCHCTL_GITHUB_TIMEOUT", "10", positive=True),
                   deadline=number("PATCHCTL_GITHUB_DEADLINE", "30", positive=True),
                   retries=int(number("PATCHCTL_GITHUB_RETRIES", "3", int)),
                   backoff=number("PATCHCTL_GITHUB_BACKOFF", "1"),
                   max_wait=number("PATCHCTL_GITHUB_MAX_WAIT", "60"))


def parse_ref(text: str) -> tuple[str, str, int] | None:
    """owner, repo, number from a GitHub issue/PR URL or ``owner/repo#N``."""
    m = _REF.search(text)
    return (m.group(1), m.group(2), int(m.group(3))) if m else None


def key(ref: tuple[str, str, int]) -> str:
    return f"{ref[0]}/{ref[1]}#{ref[2]}"


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(microsecond=0)


def _scrub(text: str, token: str | None) -> str:
    return text.replace(token, "***") if token else text


def fetch(ref: tuple[str, str, int], settings: Settings, session: requests.Session | None = None,
          sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """The issue or pull request's state; on failure ``{"error": "..."}`` (never raises)."""
    owner, repo, number = ref
    url = f"{settings.api}/repos/{owner}/{repo}/issues/{number}"
    headers = {"Accept": "application/vnd.github+json", "User-Agent": "patchctl"}
    if settings.token:
        headers["Authorization"] = f"Bearer {settings.token}"
    error = "no answer"
    for attempt in range(settings.retries + 1):
        try:
            r = httpget.get(url, headers=headers, timeout=settings.timeout,
                            deadline=settings.deadline, http=session)
        except httpget.HttpFailure as e:
            error = str(e)
            if not e.retry:
                return {"error": _scrub(error, settings.token)}
        else:
            if r.status == 200:
                try:
                    answer = _state(parse_json(r.body, ISSUE_ANSWER, max_bytes=httpget.MAX_BODY))
                except BadDocument as e:
                    return {"error": _scrub(f"malformed answer (not the JSON of an issue): {e}",
                                            settings.token)}
                return _without_token(answer, settings.token)
            if r.status == 404:
                return {"error": "not found (404): no such issue or pull request, or private"}
            wait = _rate_limit_wait(r)
            if wait is not None:
                if wait > settings.max_wait:
                    when = _reset_time(r.headers.get("X-RateLimit-Reset", ""))
                    return {"error": f"rate limited until {when}; set GITHUB_TOKEN for a "
                            "higher limit"}
                error = "rate limited"
                sleep(max(wait, 0))
                continue
            if r.status < 500:
                return {"error": f"HTTP {r.status}"}
            error = f"HTTP {r.status}"
        if attempt < settings.retries:
            sleep(settings.backoff * (2 ** attempt))
    return {"error": _scrub(f"{error} (after {settings.retries + 1} tries)", settings.token)}


def _without_token(answer: dict[str, Any], token: str | None) -> dict[str, Any]:
    """``answer`` with the token scrubbed wherever a server echoed it (a title, a date)."""
    if not token:
        return answer
    scrubbed: dict[str, Any] = json.loads(_scrub(json.dumps(answer), json.dumps(token)[1:-1]))
    return scrubbed


def _reset_time(reset: str) -> str:
    """X-RateLimit-Reset (epoch seconds) as an ISO time; "later" when it is not one."""
    try:
        return dt.datetime.fromtimestamp(int(reset), dt.UTC).isoformat()
    except (ValueError, OverflowError, OSError):  # not digits, or past what time_t holds
        return "later"


def _rate_limit_wait(r: httpget.Answer) -> float | None:
    """Seconds to wait when the answer is a rate limit, else None."""
    if r.status not in (403, 429):
        return None
    if retry := r.headers.get("Retry-After", ""):
        return float(retry) if retry.isdigit() else None
    if r.headers.get("X-RateLimit-Remaining") == "0":
        reset = r.headers.get("X-RateLimit-Reset", "")
        return max(0.0, int(reset) - time.time()) if reset.isdigit() else None
    return None if r.status == 403 else 1.0


def _state(data: dict[str, Any]) -> dict[str, Any]:
    """The fields of an ISSUE_ANSWER that are kept (and cached): a CACHE_ENTRY's."""
    pr = data.get("pull_request")
    merged = bool(pr and pr.get("merged_at"))
    return {
        "kind": "pull request" if pr else "issue",
        "state": "merged" if merged else data["state"],
        "title": data.get("title") or "",
        "url": data.get("html_url") or "",
        "updated_at": data.get("updated_at"),
        "closed_at": data.get("closed_at"),
        "merged_at": pr.get("merged_at") if pr else None,
        "discussions": list(dict.fromkeys(re.findall(
            _DISCUSSION_URL[1:-1], data.get("body") or "")))[:MAX_DISCUSSIONS],
    }


# -- the cache ------------------------------------------------------------------------


def load_cache(path: Path) -> dict[str, dict[str, Any]]:
    """The cached answers; a missing or damaged cache is empty, and an entry that is not a
    CACHE_ENTRY (or has no aware ISO ``fetched_at``) is left out: a miss, fetched again."""
    try:
        data = read_json(path, _CACHE_FILE)
    except BadDocument:
        return {}
    return {k: v for k, v in data["answers"].items() if _cached_answer(v)}


def _cached_answer(value: object) -> bool:
    try:
        validate(value, CACHE_ENTRY)
        fetched = dt.datetime.fromisoformat(cast(dict[str, str], value)["fetched_at"])
    except (BadDocument, ValueError):
        return False
    return fetched.tzinfo is not None


def save_cache(path: Path, answers: dict[str, dict[str, Any]]) -> None:
    fsutil.atomic_write(path, json.dumps({"schema": CACHE_SCHEMA, "answers": answers},
                                         indent=2, sort_keys=True) + "\n")


def lookup(refs: list[str], cache_path: Path, *, online: bool,
           settings: Settings | None = None,
           sleep: Callable[[float], None] = time.sleep) -> dict[str, dict[str, Any]]:
    """State per reference text: fetched when ``online`` (kept in the cache when good),
    else the cached answer; each with ``fetched_at`` and ``age`` (seconds)."""
    cache = load_cache(cache_path)
    out: dict[str, dict[str, Any]] = {}
    settings = settings or Settings.from_env()
    session = httpget.session() if online else None
    now = _now()
    for text in refs:
        ref = parse_ref(text)
        if ref is None:
            continue
        k = key(ref)
        if online and k not in out:
            answer = fetch(ref, settings, session, sleep)
            if "error" not in answer:
                cache[k] = {**answer, "fetched_at": now.isoformat()}
            elif k in cache:
                answer = {**cache[k], "error": answer["error"], "stale": True}
            out[k] = answer
        elif k in cache:
            out[k] = {**cache[k], "cached": True}
        else:
            out[k] = {"error": "not fetched yet: run with --online"}
        fetched = out[k].get("fetched_at")
        if fetched:
            out[k]["age"] = int((now - dt.datetime.fromisoformat(fetched)).total_seconds())
    if online:
        save_cache(cache_path, cache)
    return out
