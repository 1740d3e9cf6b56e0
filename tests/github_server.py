"""A small GitHub-REST-shaped HTTP server on 127.0.0.1 for upstream-status --online tests.

``/repos/o/r/issues/N`` answers by N (see ``ANSWERS``); every request's path and
headers are recorded so tests can check what was sent. ``drip`` sends a fixed
answer one byte at a time: its body only ("body") or all of it, status line and
headers too ("all"), until the answer is out or the server stops.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

OPEN_ISSUE = {"number": 1, "state": "open", "title": "Feature request: layer ranges",
              "html_url": "https://github.com/o/r/issues/1", "updated_at": "2026-11-01T10:00:00Z",
              "closed_at": None}
MERGED_PR = {"number": 2, "state": "closed", "title": "llama : add ranges",
             "html_url": "https://github.com/o/r/pull/2", "updated_at": "2026-11-02T10:00:00Z",
             "closed_at": "2026-11-02T10:00:00Z",
             "pull_request": {"merged_at": "2026-11-02T10:00:00Z"}}

# N -> what the server does: 1 open issue, 2 merged PR, 3 404, 4 always 500, 5 one 500 then
# the issue, 6 rate limited until far in the future, 7 one 429 (Retry-After: 0) then the
# issue, 8 slower than the client's timeout, 9 malformed JSON.
ANSWERS = (1, 2, 3, 4, 5, 6, 7, 8, 9)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self.server.requests.append((self.path, dict(self.headers)))
        if self.server.answer is not None:  # one fixed answer for every request
            return self._raw(*self.server.answer)
        number = int(self.path.rstrip("/").rsplit("/", 1)[-1]) if \
            self.path.rsplit("/", 1)[-1].isdigit() else 0
        seen = sum(1 for p, _ in self.server.requests if p == self.path)
        if number == 1 or (number in (5, 7) and seen > 1):
            return self._json(200, {**OPEN_ISSUE, "number": number})
        if number == 2:
            return self._json(200, MERGED_PR)
        if number == 4 or number == 5:
            return self._json(500, {"message": "Server Error"})
        if number == 6:
            return self._json(403, {"message": "API rate limit exceeded"}, {
                "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(time.time()) + 3600)})
        if number == 7:
            return self._json(429, {"message": "slow down"}, {"Retry-After": "0"})
        if number == 8:
            time.sleep(self.server.slow)
            return self._json(200, OPEN_ISSUE)
        if number == 9:
            body = b'{"state": "open", "title": '
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return None
        return self._json(404, {"message": "Not Found"})

    def _raw(self, code: int, headers: dict[str, str], body: object) -> None:
        """Any status, headers and body: bytes as they are, anything else as JSON."""
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        if self.server.drip == "all":
            head = f"HTTP/1.1 {code} OK\r\nContent-Length: {len(data)}\r\n" + "".join(
                f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
            return self._drip(head.encode() + data)
        self.send_response(code)
        if "Content-Length" not in headers:
            self.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        if self.server.drip == "body":
            return self._drip(data)
        self.wfile.write(data)
        return None

    def _drip(self, data: bytes) -> None:
        for i in range(len(data)):
            try:
                self.wfile.write(data[i : i + 1])
                self.wfile.flush()
            except OSError:  # the client gave up
                return
            if self.server.stopping.wait(self.server.drip_every):
                return

    def _json(self, code: int, data: dict, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(data).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    requests: list[tuple[str, dict[str, str]]]
    slow: float
    answer: tuple | None
    drip: str | None
    drip_every: float
    stopping: threading.Event

    def handle_error(self, request, client_address) -> None:
        pass  # a client that timed out closed the socket: expected here


@contextlib.contextmanager
def github_server(slow: float = 2.0, answer: tuple | None = None, drip: str | None = None,
                  drip_every: float = 1.0) -> Iterator[_Server]:
    """``answer``: (status, headers, body) for every request instead of ``ANSWERS``;
    ``drip`` ("body" or "all"): send it a byte every ``drip_every`` seconds."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.requests = []
    server.slow = slow
    server.answer = answer
    server.drip, server.drip_every = drip, drip_every
    server.stopping = threading.Event()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()
