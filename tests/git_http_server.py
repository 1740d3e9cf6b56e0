"""Git HTTP servers on 127.0.0.1 for tests, each a process of its own (forking CGI children
from a threaded test process can deadlock): `python tests/git_http_server.py ROOT [MODE]`
prints its port, then serves ROOT until killed.

- ``smart`` (the default): ``git http-backend`` under /git/, run as CGI by this gateway,
  which sends the status the backend gives. (Python's CGI handler sends "200 Script output
  follows" before the script runs, so a failing backend looked to git like a plain HTTP
  server, and a partial clone of one recursed without bound.)
- ``dumb``: ROOT's files as they are, the way a static web host serves a bare repository
  after ``git update-server-info``.
- ``stall``: smart, but a pack stops after its first bytes and the server falls silent
  (ref listings are answered in full).
- ``die``: smart, but the connection closes after a pack's first bytes.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

_PACK_BYTES = 64  # what a hostile mode sends of a pack before it stalls or closes


def _backend(handler: http.server.BaseHTTPRequestHandler, root: str, body: bytes,
             ) -> tuple[int, list[tuple[str, str]], bytes]:
    path, _, query = handler.path.partition("?")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": root,
        "GIT_PROJECT_ROOT": root, "GIT_HTTP_EXPORT_ALL": "1",
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory",
        "GIT_CONFIG_VALUE_0": "*",
        "REQUEST_METHOD": handler.command, "PATH_INFO": path.removeprefix("/git"),
        "QUERY_STRING": query, "CONTENT_LENGTH": str(len(body)),
        "CONTENT_TYPE": handler.headers.get("Content-Type", ""),
        "REMOTE_ADDR": "127.0.0.1", "SERVER_PROTOCOL": "HTTP/1.1",
    }
    for name in ("Git-Protocol", "Content-Encoding"):
        if value := handler.headers.get(name):
            env["HTTP_" + name.upper().replace("-", "_")] = value
    out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True,
                         check=False).stdout
    head, _, payload = out.partition(b"\r\n\r\n")
    if not _:
        head, _, payload = out.partition(b"\n\n")
    status, headers = 200, []
    for line in head.decode("latin-1").splitlines():
        name, _, value = line.partition(":")
        if name.lower() == "status":
            status = int(value.split()[0])
        elif name:
            headers.append((name, value.strip()))
    return status, headers, payload


def _body(handler: http.server.BaseHTTPRequestHandler) -> bytes:
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        chunks = []
        while size := int(handler.rfile.readline().split(b";")[0], 16):
            chunks.append(handler.rfile.read(size))
            handler.rfile.readline()
        handler.rfile.readline()
        return b"".join(chunks)
    return handler.rfile.read(int(handler.headers.get("Content-Length") or 0))


@contextlib.contextmanager
def serving(repo: Path, mode: str = "smart") -> Iterator[str]:
    """A bare copy of ``repo`` served in ``mode``: its URL while the block runs."""
    root = Path(tempfile.mkdtemp(prefix="patchctl-www-"))
    bare = root / "up.git"
    subprocess.run(["git", "clone", "-q", "--bare", "--", str(repo), str(bare)], check=True)
    for key, value in (("uploadpack.allowFilter", "true"),
                       ("uploadpack.allowAnySHA1InWant", "true")):
        subprocess.run(["git", "-C", str(bare), "config", key, value], check=True)
    subprocess.run(["git", "-C", str(bare), "update-server-info"], check=True)
    server = subprocess.Popen([sys.executable, __file__, str(root), mode],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        yield f"http://127.0.0.1:{port}/{'' if mode == 'dumb' else 'git/'}up.git"
    finally:
        server.kill()
        server.wait()
        shutil.rmtree(root, ignore_errors=True)


def main(root: str, mode: str) -> None:
    class Handler(http.server.SimpleHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=root, **kwargs)

        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:
            if mode == "dumb":
                super().do_GET()
            else:
                self._smart(b"")

        def do_POST(self) -> None:
            self._smart(_body(self))

        def _smart(self, body: bytes) -> None:
            status, headers, payload = _backend(self, root, body)
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            if mode in ("stall", "die") and b"want " in body:  # a pack, not a ref listing
                self.wfile.write(payload[:_PACK_BYTES])
                self.wfile.flush()
                if mode == "stall":
                    time.sleep(3600)
                return
            self.wfile.write(payload)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "smart")
