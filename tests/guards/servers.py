"""Real servers on loopback that answer as a test scripts them: plainly (a status and a body), slowly (a
byte at a time), hugely, with a redirect, or over TLS with a certificate for a name (made by openssl
with a test CA); and a resolver that answers a name the system does not know, counting the lookups."""

from __future__ import annotations

import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class ScriptedServer:
    """Accepts connections on ``address``; reads the request head (and a body by Content-Length), records
    it, then lets ``answer`` write to the socket."""

    answer: Callable[[socket.socket], None]
    address: str = "127.0.0.1"
    tls: ssl.SSLContext | None = None
    requests: list[bytes] = field(default_factory=list)
    server_names: list[str | None] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.listener = socket.socket(socket.AF_INET6 if ":" in self.address else socket.AF_INET)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((self.address, 0))
        self.listener.listen(8)
        self.port = self.listener.getsockname()[1]
        if self.tls is not None:
            self.tls.sni_callback = lambda sock, name, context: self.server_names.append(name)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(connection,), daemon=True).start()

    def _one(self, connection: socket.socket) -> None:
        try:
            if self.tls is not None:
                connection = self.tls.wrap_socket(connection, server_side=True)
            connection.settimeout(5)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = connection.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            length = next(
                (
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ),
                0,
            )
            while len(body) < length:
                body += connection.recv(65536)
            self.requests.append(head + b"\r\n\r\n" + body)
            self.answer(connection)
        except (OSError, ssl.SSLError):
            pass
        finally:
            try:
                connection.close()
            except OSError:
                pass

    def close(self) -> None:
        close_listener(self.listener)
        self.thread.join(5)


def close_listener(listener: socket.socket) -> None:
    """Shut a listening socket down, then close it. Closing alone leaves a thread blocked in its accept()
    blocked; once the descriptor's number is reused by a later test's server, that thread accepts the new
    server's connections and answers them as the old one would (seen: a forge's requests answered "ok")."""
    try:
        listener.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    listener.close()


def plain(status: int = 200, body: bytes = b"ok", headers: str = "") -> Callable[[socket.socket], None]:
    def answer(connection: socket.socket) -> None:
        connection.sendall(
            f"HTTP/1.1 {status} X\r\nContent-Length: {len(body)}\r\n{headers}Connection: close\r\n\r\n".encode()
            + body
        )

    return answer


def trickle(head_first: bool, every_s: float = 0.2, total: int = 200) -> Callable[[socket.socket], None]:
    """A byte every ``every_s``: of the body after a prompt head, or of the head itself."""

    def answer(connection: socket.socket) -> None:
        head = f"HTTP/1.1 200 OK\r\nContent-Length: {total}\r\n\r\n".encode()
        if head_first:
            connection.sendall(head)
            payload = b"x" * total
        else:
            payload = head + b"x" * total
        for index in range(len(payload)):
            connection.sendall(payload[index : index + 1])
            time.sleep(every_s)

    return answer


@dataclass(frozen=True)
class TestCertificates:
    ca: Path
    certificate: Path
    key: Path

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.certificate, self.key)
        return context


def make_certificates(folder: Path, name: str) -> TestCertificates:
    """A test CA and a certificate for ``name`` signed by it (openssl, EC keys: fast)."""

    def openssl(*arguments: str) -> None:
        subprocess.run(["openssl", *arguments], cwd=folder, check=True, capture_output=True)

    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *key, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=Test CA")
    openssl("req", *key, "-keyout", "server.key", "-out", "server.csr", "-subj", f"/CN={name}")
    (folder / "san.cnf").write_text(f"subjectAltName=DNS:{name}\n")
    openssl(
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "san.cnf",
    )
    return TestCertificates(folder / "ca.pem", folder / "server.pem", folder / "server.key")


@contextmanager
def resolving(monkeypatch, answers: dict[str, list[str]]) -> Iterator[dict[str, int]]:
    """The resolver answers these names (each lookup takes the next answer; the last one repeats) and
    counts the lookups of each; every other name goes to the system resolver."""
    real = socket.getaddrinfo
    lookups = {name: 0 for name in answers}

    def getaddrinfo(host, port, *args, **kwargs):
        if isinstance(host, bytes):
            host = host.decode()
        if host in answers:
            index = min(lookups[host], len(answers[host]) - 1)
            lookups[host] += 1
            address = answers[host][index]
            family = socket.AF_INET6 if ":" in address else socket.AF_INET
            return [(family, socket.SOCK_STREAM, 6, "", (address, int(port or 0)))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield lookups
