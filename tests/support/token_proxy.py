"""A token-checking HTTP proxy on loopback in front of a `chroma run` server (whose 1.x
versions have no auth of their own): a request without the right token gets 401, as a
secured deployment answers; any other is passed on."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx


class TokenProxy:
    """Serve on ``127.0.0.1:<free port>``; ``header`` is ``X-Chroma-Token`` or
    ``Authorization`` (then ``Bearer <token>``). ``seen`` counts requests refused and passed."""

    def __init__(self, upstream: str, token: str, header: str = "X-Chroma-Token") -> None:
        self.upstream, self.token, self.header = upstream.rstrip("/"), token, header
        self.seen = {"refused": 0, "passed": 0}
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                wanted = proxy.token if proxy.header != "Authorization" else f"Bearer {proxy.token}"
                if self.headers.get(proxy.header) != wanted:
                    proxy.seen["refused"] += 1
                    body = b'{"error": "Unauthorized", "message": "missing or wrong token"}'
                    self.send_response(401)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                proxy.seen["passed"] += 1
                length = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(length) if length else None
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() not in ("host", "content-length", proxy.header.lower())
                }
                answer = httpx.request(
                    self.command,
                    proxy.upstream + self.path,
                    content=data,
                    headers=headers,
                    timeout=60.0,
                )
                self.send_response(answer.status_code)
                for key, value in answer.headers.items():
                    if key.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _forward  # noqa: N815

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> TokenProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
