"""The one way patchctl makes an HTTP request: ``get``, with a total deadline.

``requests`` bounds each socket read, not the request: a server that sends a
byte a second, in its headers or its body, would hold a command for ever. Here
the whole request (resolving, connecting, redirects, headers and every chunk
of the body) runs against one monotonic deadline, and the body is capped in
size. The request runs in a daemon thread that the caller stops waiting for at
the deadline; the thread itself gives up at its next chunk.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from patchctl.errors import EnvironmentFailure

if TYPE_CHECKING:
    import requests

MAX_BODY = 4 << 20  # an issue's JSON is a few KiB; a body this large is not an answer


class HttpFailure(EnvironmentFailure):
    """No complete answer (one line). ``retry``: worth asking again (a timeout or a refused
    connection), not a server that held the whole deadline or sent too much."""

    def __init__(self, message: str, *, retry: bool) -> None:
        super().__init__(message)
        self.retry = retry


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Mapping[str, str]  # case-insensitive names
    body: bytes


def session() -> requests.Session:
    import requests

    return requests.Session()


def get(url: str, *, headers: Mapping[str, str], timeout: float, deadline: float,
        max_bytes: int = MAX_BODY, http: requests.Session | None = None) -> Answer:
    """``url``'s whole answer within ``deadline`` seconds (each read within ``timeout``),
    or HttpFailure."""
    stop = time.monotonic() + deadline
    box: list[Answer | BaseException] = []
    worker = threading.Thread(target=_fetch, daemon=True, name="patchctl-http",
                              args=(box, http or session(), url, headers,
                                    min(timeout, deadline), stop, max_bytes))
    worker.start()
    worker.join(deadline)
    if not box:  # still waiting on the server: it stops at its next chunk or read timeout
        raise HttpFailure(f"no complete answer within {deadline:g}s", retry=False)
    if isinstance(box[0], BaseException):
        raise box[0]
    return box[0]


def _fetch(box: list[Answer | BaseException], http: requests.Session, url: str,
           headers: Mapping[str, str], timeout: float, stop: float, max_bytes: int) -> None:
    import requests

    try:
        with http.get(url, headers=dict(headers), timeout=(timeout, timeout), stream=True) as r:
            body = bytearray()
            for chunk in r.iter_content(chunk_size=16384):
                body += chunk
                if len(body) > max_bytes:
                    raise HttpFailure(f"answer larger than {max_bytes} bytes", retry=False)
                if time.monotonic() > stop:
                    return  # the caller has given up on this request
            box.append(Answer(r.status_code, r.headers, bytes(body)))
    except requests.Timeout:
        box.append(HttpFailure(f"timed out after {timeout:g}s", retry=True))
    except requests.RequestException as e:
        box.append(HttpFailure(f"request failed: {type(e).__name__}", retry=True))
    except BaseException as e:  # handed to the caller, which raises it as its own
        box.append(e)
