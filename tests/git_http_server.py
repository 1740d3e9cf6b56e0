"""A smart-HTTP git server on 127.0.0.1 for tests: `git http-backend` behind CGI.

Run as a separate process (forking CGI children from a threaded test process
can deadlock): `python tests/git_http_server.py ROOT` prints the port, then
serves ROOT/cgi-bin/git until killed.
"""

from __future__ import annotations

import http.server
import sys
import warnings


def main(root: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)

        class Handler(http.server.CGIHTTPRequestHandler):
            cgi_directories = ["/cgi-bin"]  # noqa: RUF012 (the base class API)

            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=root, **kwargs)

            def log_message(self, *args) -> None:
                pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1])
