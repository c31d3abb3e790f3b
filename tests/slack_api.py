"""A real HTTP server on loopback that answers as Slack's Web API does, checking each request as Slack
documents it: ``POST /api/<method>``, ``Authorization: Bearer xoxb-...``, a JSON body for the chat
methods (``Content-Type: application/json``), form fields for ``users.info``. A request that breaks a
rule is answered ``{"ok": false, "error": ...}`` as Slack answers it, and kept for the test to see."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

JSON_METHODS = {"chat.postMessage", "chat.update", "chat.postEphemeral"}


@dataclass
class Call:
    method: str
    headers: dict[str, str]  # names in lower case
    arguments: dict[str, Any]
    answer: dict[str, Any]


@dataclass
class FakeSlack:
    token: str
    emails: dict[str, str] = field(default_factory=dict)  # Slack user id -> profile email
    calls: list[Call] = field(default_factory=list)

    def __post_init__(self) -> None:
        slack = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                method = self.path.removeprefix("/api/")
                arguments, answer = slack.answer(method, dict(self.headers), body)
                slack.calls.append(
                    Call(method, {k.lower(): v for k, v in self.headers.items()}, arguments, answer)
                )
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/api/"

    def answer(self, method: str, headers: dict[str, str], body: bytes) -> tuple[dict, dict]:
        headers = {name.lower(): value for name, value in headers.items()}
        content_type = headers.get("content-type", "")
        if method in JSON_METHODS:
            if not content_type.startswith("application/json"):
                return {}, {"ok": False, "error": "invalid_arguments"}
            try:
                arguments = json.loads(body)
            except ValueError:
                return {}, {"ok": False, "error": "invalid_json"}
        else:
            arguments = {key: values[0] for key, values in parse_qs(body.decode()).items()}
        if headers.get("authorization") != f"Bearer {self.token}":
            return arguments, {"ok": False, "error": "invalid_auth"}
        if method == "chat.postMessage":
            if not arguments.get("channel") or not (arguments.get("text") or arguments.get("blocks")):
                return arguments, {"ok": False, "error": "no_text"}
            return arguments, {
                "ok": True,
                "channel": arguments["channel"],
                "ts": "1700000000.000100",
                "message": {"text": arguments.get("text"), "blocks": arguments.get("blocks")},
            }
        if method == "chat.update":
            if not arguments.get("channel") or not arguments.get("ts"):
                return arguments, {"ok": False, "error": "message_not_found"}
            return arguments, {"ok": True, "channel": arguments["channel"], "ts": arguments["ts"]}
        if method == "chat.postEphemeral":
            if not arguments.get("channel") or not arguments.get("user"):
                return arguments, {"ok": False, "error": "user_not_in_channel"}
            return arguments, {"ok": True, "message_ts": "1700000001.000200"}
        if method == "users.info":
            user = arguments.get("user")
            if user not in self.emails:
                return arguments, {"ok": False, "error": "user_not_found"}
            return arguments, {"ok": True, "user": {"id": user, "profile": {"email": self.emails[user]}}}
        return arguments, {"ok": False, "error": "unknown_method"}

    def called(self, method: str) -> list[Call]:
        return [call for call in self.calls if call.method == method]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
