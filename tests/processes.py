"""Real processes for tests: gunicorn serving the platform, Celery workers, Redis servers, all on the test
database (tests using them need ``django_db(transaction=True)`` so that the other processes see rows)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[1]


def database_url() -> str:
    """The URL of the test database, for processes started by a test."""
    settings = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{settings['NAME']}"
    password = f":{quote(settings['PASSWORD'])}" if settings.get("PASSWORD") else ""
    return (
        f"postgres://{quote(settings['USER'] or '')}{password}@{settings['HOST'] or 'localhost'}:"
        f"{settings['PORT'] or 5432}/{settings['NAME']}"
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def platform_environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": database_url(),
        "PLATFORM_VAR_DIR": str(tmp_path),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        **extra,
    }


def wait_until(check, timeout: float, interval: float = 0.1, what: str = "the condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(interval)
    raise AssertionError(f"{what} did not happen within {timeout:g} s")


def _answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=1)
    except urllib.error.HTTPError:
        return True  # any HTTP answer means the server is up
    except OSError:
        return False
    return True


@contextmanager
def gunicorn(tmp_path: Path, **extra_env: str) -> Iterator[str]:
    """The platform served by gunicorn (as in production); yields its base URL."""
    port = free_port()
    log = open(tmp_path / f"gunicorn-{port}.log", "w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "policy_platform.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "1",
            "--threads",
            "4",
        ],
        cwd=ROOT,
        env=platform_environment(tmp_path, **extra_env),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _answers(f"{base}/accounts/login/"), 30, what="gunicorn answering")
        yield base
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:  # a loaded machine: a graceful stop may outlast the test's patience
            process.kill()
            process.wait(10)
        log.close()


@contextmanager
def celery_worker(
    tmp_path: Path, broker_url: str, name: str = "worker", pool: str = "solo", **extra_env: str
) -> Iterator[subprocess.Popen]:
    """A Celery worker; ``pool="prefork"`` as in production where time limits matter (solo ignores them)."""
    log = open(tmp_path / f"{name}.log", "w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "policy_platform",
            "worker",
            f"--pool={pool}",
            "--concurrency=1",
            "--loglevel=INFO",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-n",
            f"{name}@%h",
        ],
        cwd=ROOT,
        env=platform_environment(tmp_path, CELERY_BROKER_URL=broker_url, **extra_env),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)
        log.close()


@contextmanager
def celery_beat(tmp_path: Path, broker_url: str, **extra_env: str) -> Iterator[subprocess.Popen]:
    log = open(tmp_path / "beat.log", "w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "policy_platform",
            "beat",
            "--loglevel=INFO",
            "--schedule",
            str(tmp_path / "beat-schedule"),
        ],
        cwd=ROOT,
        env=platform_environment(tmp_path, CELERY_BROKER_URL=broker_url, **extra_env),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield process
    finally:
        process.kill()
        process.wait(10)
        log.close()


class RedisServer:
    """A Redis server of the test's own, which the test may stop and start again (a broker fault)."""

    def __init__(self, tmp_path: Path) -> None:
        self.binary = shutil.which("redis-server")
        if self.binary is None:
            pytest.skip("needs redis-server on PATH (.ci/run installs it)")
        self.port = free_port()
        self.directory = tmp_path
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            cwd=self.directory,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

        def ready() -> bool:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as conn:
                    conn.sendall(b"PING\r\n")
                    return conn.recv(16).startswith(b"+PONG")
            except OSError:
                return False

        wait_until(ready, 10, what="redis-server starting")

    def stop(self) -> None:
        """Gone at once, with everything it held (no persistence): like a crashed broker."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
