"""A real git smart-HTTP server for tests: ``git http-backend`` behind HTTP Basic authentication,
served on loopback from a thread."""

from __future__ import annotations

import base64
import os
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, *args) -> None:  # keep the test output clean
        pass


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class GitHttpServer:
    def __init__(self, root: Path, username: str, password: str) -> None:
        self.root = root
        self.credentials = {"username": username, "password": password}
        self.requests: list[str] = []  # the Authorization header of every request, as received

    def _authorised(self, environ: dict) -> bool:
        header = environ.get("HTTP_AUTHORIZATION", "")
        self.requests.append(header)
        expected = base64.b64encode(f"{self.credentials['username']}:{self.credentials['password']}".encode())
        return header == f"Basic {expected.decode()}"

    def __call__(self, environ: dict, start_response):
        if not self._authorised(environ):
            start_response("401 Unauthorized", [("WWW-Authenticate", 'Basic realm="git"')])
            return [b"unauthorised\n"]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        cgi_env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": str(self.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "REQUEST_METHOD": environ["REQUEST_METHOD"],
            "PATH_INFO": environ.get("PATH_INFO", ""),
            "QUERY_STRING": environ.get("QUERY_STRING", ""),
            "CONTENT_TYPE": environ.get("CONTENT_TYPE", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_USER": self.credentials["username"],
            "REMOTE_ADDR": "127.0.0.1",
            "HTTP_CONTENT_ENCODING": environ.get("HTTP_CONTENT_ENCODING", ""),
            "GIT_PROTOCOL": environ.get("HTTP_GIT_PROTOCOL", ""),
        }
        result = subprocess.run(
            ["git", "http-backend"], input=body, capture_output=True, env=cgi_env, check=False
        )
        head, _, payload = result.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = result.stdout.partition(b"\n\n")
        status, headers = "200 OK", []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = value.strip()
            elif name:
                headers.append((name.strip(), value.strip()))
        start_response(status, headers)
        return [payload]

    @contextmanager
    def serving(self) -> Iterator[str]:
        server = make_server("127.0.0.1", 0, self, server_class=_ThreadingServer, handler_class=_QuietHandler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_port}"
        finally:
            server.shutdown()
            server.server_close()
