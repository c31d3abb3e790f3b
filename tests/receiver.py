"""Real servers on loopback that record what the platform sends them: an HTTP receiver for webhooks, answering
with the statuses a test scripts (e.g. 500, 500, then 200), and a syslog collector over UDP or TCP."""

from __future__ import annotations

import json
import re
import socket
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


# RFC 5424: <PRI>VERSION TIMESTAMP HOSTNAME APP-NAME PROCID MSGID STRUCTURED-DATA MSG
SYSLOG_LINE = re.compile(
    r"^<(?P<priority>\d{1,3})>1 (?P<timestamp>\S+) (?P<hostname>\S+) (?P<app>\S+) (?P<procid>\S+) "
    r"(?P<msgid>\S+) (?P<data>-|(?:\[[^\]]*\])+) (?P<message>.*)$",
    re.DOTALL,
)
SD_PARAM = re.compile(r'(\w+)="((?:[^"\\\]]|\\.)*)"')


@dataclass
class SyslogLine:
    priority: int
    timestamp: str
    hostname: str
    app: str
    msgid: str
    data: dict[str, dict[str, str]]  # SD-ID: its parameters
    message: str

    @classmethod
    def parse(cls, raw: bytes) -> SyslogLine:
        match = SYSLOG_LINE.match(raw.decode("utf-8"))
        assert match, f"not an RFC 5424 line: {raw[:200]!r}"
        data = {}
        for element in re.findall(r"\[([^\]]*)\]", match["data"]):
            name, _, params = element.partition(" ")
            data[name] = {key: value for key, value in SD_PARAM.findall(params)}
        return cls(
            int(match["priority"]),
            match["timestamp"],
            match["hostname"],
            match["app"],
            match["msgid"],
            data,
            match["message"],
        )


@dataclass
class SyslogListener:
    """A real syslog collector on loopback: UDP (a line per datagram, RFC 5426) or TCP (octet-counted
    frames, RFC 6587), recording every line it parses."""

    protocol: str  # "udp" or "tcp"
    lines: list[SyslogLine] = field(default_factory=list)

    def __post_init__(self) -> None:
        kind = socket.SOCK_DGRAM if self.protocol == "udp" else socket.SOCK_STREAM
        self.sock = socket.socket(socket.AF_INET, kind)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        if self.protocol == "tcp":
            self.sock.listen()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"{self.protocol}://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                if self.protocol == "udp":
                    self.lines.append(SyslogLine.parse(self.sock.recv(65535)))
                else:
                    connection, _ = self.sock.accept()
                    with connection:
                        self._read_frames(connection)
            except TimeoutError:
                continue
            except OSError:
                return

    def _read_frames(self, connection: socket.socket) -> None:
        connection.settimeout(5)
        buffer = b""
        while chunk := connection.recv(65536):
            buffer += chunk
        while buffer:
            length, _, rest = buffer.partition(b" ")
            assert length.isdigit(), f"not octet-counted framing: {buffer[:50]!r}"
            self.lines.append(SyslogLine.parse(rest[: int(length)]))
            buffer = rest[int(length) :]

    def wait_for(self, count: int, seconds: float = 5) -> list[SyslogLine]:
        ends = time.monotonic() + seconds
        while len(self.lines) < count and time.monotonic() < ends:
            time.sleep(0.02)
        return self.lines

    def close(self) -> None:
        self.stopped.set()
        self.thread.join(2)
        self.sock.close()
