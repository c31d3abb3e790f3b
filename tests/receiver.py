"""A real HTTP server on loopback that records what webhooks send it, answering with the statuses a test
scripts (e.g. 500, 500, then 200)."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float = field(default_factory=time.monotonic)

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    answers: list[int] = field(default_factory=list)  # consumed in order; then 200
    received: list[Received] = field(default_factory=list)

    def __post_init__(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.received.append(Received(self.path, dict(self.headers), body))
                status = receiver.answers.pop(0) if receiver.answers else 200
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            # A policy that reaches out (http.send, a JSON schema's $ref) may GET: record that as well.
            do_GET = do_POST  # noqa: N815 - http.server's name

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
