"""Read-only GitHub REST lookups for upstream-status --online, with a local cache.

Only GET requests are made. The token (``GITHUB_TOKEN``, optional) goes in
the Authorization header and nowhere else: every message that could carry it
is scrubbed, and the cache stores answers, never request headers. Timeouts,
retries with backoff on 5xx, and rate limits (honoured up to a bounded wait)
keep a flaky network from hanging the report; the last good answer for each
reference is cached and shown offline with its age.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchctl import fsutil, schemas

if TYPE_CHECKING:
    import requests

DEFAULT_API = "https://api.github.com"
CACHE_FILE = "github-cache.json"
CACHE_SCHEMA = schemas.GITHUB_CACHE
_REF = re.compile(r"(?:https?://github\.com/)?([\w.-]+)/([\w.-]+?)(?:#|/(?:issues|pull)/)(\d+)")


@dataclass(frozen=True)
class Settings:
    api: str
    token: str | None
    timeout: float
    retries: int
    backoff: float
    max_wait: float

    @classmethod
    def from_env(cls) -> Settings:
        env = os.environ

        def number(name: str, default: str, kind: type[float] | type[int] = float) -> float:
            try:
                return kind(env.get(name, default))
            except ValueError as e:
                from patchctl.errors import InputError

                raise InputError(f"{name}={env[name]!r} is not a number") from e

        return cls(api=env.get("PATCHCTL_GITHUB_API", DEFAULT_API).rstrip("/"),
                   token=env.get("GITHUB_TOKEN") or None,
                   timeout=number("PATCHCTL_GITHUB_TIMEOUT", "10"),
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
    import requests

    owner, repo, number = ref
    url = f"{settings.api}/repos/{owner}/{repo}/issues/{number}"
    headers = {"Accept": "application/vnd.github+json", "User-Agent": "patchctl"}
    if settings.token:
        headers["Authorization"] = f"Bearer {settings.token}"
    http = session or requests.Session()
    error = "no answer"
    for attempt in range(settings.retries + 1):
        try:
            r = http.get(url, headers=headers, timeout=settings.timeout)
        except requests.Timeout:
            error = f"timed out after {settings.timeout:g}s"
        except requests.RequestException as e:
            error = f"request failed: {type(e).__name__}"
        else:
            if r.status_code == 200:
                try:
                    return _without_token(_state(r.json()), settings.token)
                except (ValueError, KeyError, TypeError, AttributeError):
                    return {"error": "malformed answer (not the JSON of an issue)"}
            if r.status_code == 404:
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
            if r.status_code < 500:
                return {"error": f"HTTP {r.status_code}"}
            error = f"HTTP {r.status_code}"
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


def _rate_limit_wait(r: requests.Response) -> float | None:
    """Seconds to wait when the answer is a rate limit, else None."""
    if r.status_code not in (403, 429):
        return None
    if retry := r.headers.get("Retry-After", ""):
        return float(retry) if retry.isdigit() else None
    if r.headers.get("X-RateLimit-Remaining") == "0":
        reset = r.headers.get("X-RateLimit-Reset", "")
        return max(0.0, int(reset) - time.time()) if reset.isdigit() else None
    return None if r.status_code == 403 else 1.0


def _state(data: dict[str, Any]) -> dict[str, Any]:
    pr = data.get("pull_request")
    merged = bool(pr and pr.get("merged_at"))
    return {
        "kind": "pull request" if pr else "issue",
        "state": "merged" if merged else str(data["state"]),
        "title": str(data.get("title", "")),
        "url": str(data.get("html_url", "")),
        "updated_at": data.get("updated_at"),
        "closed_at": data.get("closed_at"),
        "merged_at": pr.get("merged_at") if pr else None,
    }


# -- the cache ------------------------------------------------------------------------


def load_cache(path: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("schema") != CACHE_SCHEMA or \
            not isinstance(data.get("answers"), dict):
        return {}
    return {k: v for k, v in data["answers"].items() if _cached_answer(v)}


def _cached_answer(value: object) -> bool:
    """A cache entry this patchctl wrote: a dict with an aware ISO ``fetched_at``
    (a damaged one is dropped, as a missing cache is)."""
    if not isinstance(value, dict) or not isinstance(value.get("fetched_at"), str):
        return False
    try:
        return dt.datetime.fromisoformat(value["fetched_at"]).tzinfo is not None
    except ValueError:
        return False


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
    session = None
    if online:
        import requests

        session = requests.Session()
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
