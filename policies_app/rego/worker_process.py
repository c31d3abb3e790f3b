"""One supervised engine worker process: started, asked, watched, killed.

Workers are started with ``subprocess`` (fork+exec), never by forking the caller: the caller may be a
threaded gunicorn worker or a daemonic Celery prefork child (which multiprocessing refuses to let have
children). The worker ends with the process that supervises it (worker.py asks the kernel for SIGKILL
when its parent ends, and leaves at once if that parent is already gone): without it, a supervisor
killed mid-evaluation (an OOM kill, a SIGKILLed Celery child) left its worker computing a long policy
to the end, minutes of a core, with no one to read the answer. supervisor.py pools these workers.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from policies_app.rego.contract import SUPERVISOR_PID_VARIABLE

_PROJECT_ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 60.0
_WATCH_INTERVAL_S = 0.02


# Who hears of a worker's end (the platform's metrics, policies_app/ops/metrics.py): each observer is
# called with the engine and why the worker was replaced ("timeout", "memory_limit", "crash",
# "restart_requested"). Kept framework-free: observers are plain callables, and one that fails is ignored.
_observers: list[Callable[[str, str], None]] = []


def observe_worker_ends(observer: Callable[[str, str], None]) -> None:
    if observer not in _observers:
        _observers.append(observer)


def _worker_ended(engine: str, reason: str) -> None:
    for observer in _observers:
        try:
            observer(engine, reason)
        except Exception:  # noqa: BLE001 - an observer never stops the engine's work
            pass


_spawn_thread: ThreadPoolExecutor | None = None
_spawn_lock = threading.Lock()


def _spawner() -> ThreadPoolExecutor:
    """The one thread of this process that starts workers. Linux sends the parent-death signal when the
    *thread* that forked the worker ends, and the threads that ask for workers do end (runserver's and
    the live server's thread per request): started from them, a healthy worker would be killed after
    its first request. This thread lives as long as the process."""
    global _spawn_thread
    with _spawn_lock:
        if _spawn_thread is None:
            _spawn_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="engine-worker-spawner")
        return _spawn_thread


class WorkerFailure(Exception):
    """The worker did not answer: it crashed or ran out of time. ``message`` is for users."""

    def __init__(
        self, message: str, *, limit_exceeded: bool = False, signal_number: int | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.limit_exceeded = limit_exceeded  # the time or memory limit, as opposed to a crash
        self.signal_number = signal_number


def describe_exit(returncode: int | None) -> tuple[str, int | None]:
    if returncode is not None and returncode < 0:
        number = -returncode
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = "unknown signal"
        # Native allocators abort when RLIMIT_AS refuses memory.
        hint = "; the memory limit may have been exceeded" if number == signal.SIGABRT else ""
        return f"engine crashed (signal {number}, {name}){hint}", number
    return f"engine worker exited unexpectedly (exit status {returncode})", None


def resident_mb(pid: int) -> float | None:
    """The resident memory of a process, from /proc (None where /proc is not available)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError):
        return None
    return None


class EngineWorker:
    def __init__(self, engine: str, start_timeout_s: float = START_TIMEOUT_S) -> None:
        self.engine = engine
        to_worker_read, to_worker_write = os.pipe()
        from_worker_read, from_worker_write = os.pipe()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_PROJECT_ROOT), env.get("PYTHONPATH")]))
        env[SUPERVISOR_PID_VARIABLE] = str(os.getpid())
        try:
            # Started by the spawning thread, never by this one (see _spawner).
            started = _spawner().submit(
                subprocess.Popen,
                [sys.executable, "-m", "policies_app.rego.worker", engine],
                stdin=to_worker_read,
                stdout=from_worker_write,
                env=env,
                cwd=str(_PROJECT_ROOT),
                start_new_session=True,  # a Ctrl-C or SIGTERM to the caller's group is the caller's business
            )
            self.process = started.result()
        except BaseException:
            os.close(to_worker_write)
            os.close(from_worker_read)
            raise
        finally:
            os.close(to_worker_read)
            os.close(from_worker_write)
        self._requests = Connection(to_worker_write, readable=False)
        self._replies = Connection(from_worker_read, writable=False)
        self.pid = self.process.pid
        self.broken = False
        ready = self._receive(
            time.monotonic() + start_timeout_s, "starting the engine worker", start_timeout_s
        )
        if ready.get("type") != "ready":
            self.kill()
            raise WorkerFailure(f"engine worker sent {ready!r} instead of ready")

    def alive(self) -> bool:
        return not self.broken and self.process.poll() is None

    def kill(self) -> None:
        self.broken = True
        if self.process.poll() is None:
            try:
                self.process.kill()
            except ProcessLookupError:
                pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for connection in (self._requests, self._replies):
            try:
                connection.close()
            except OSError:
                pass

    def _crashed(self) -> WorkerFailure:
        self.broken = True
        _worker_ended(self.engine, "crash")
        try:
            returncode = self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            returncode = self.process.returncode
        self.kill()
        message, number = describe_exit(returncode)
        return WorkerFailure(message, signal_number=number)

    def _receive(
        self, deadline: float, activity: str, timeout_s: float | None = None, memory_mb: int | None = None
    ) -> dict[str, Any]:
        while True:
            remaining = deadline - time.monotonic()
            try:
                # Wake up regularly to watch the worker's memory: Go's runtime (opa) reserves address
                # space as it likes, so RLIMIT_AS cannot bound it; its resident size can.
                ready = remaining > 0 and self._replies.poll(min(remaining, _WATCH_INTERVAL_S))
            except (EOFError, OSError):
                raise self._crashed() from None
            if ready:
                break
            if remaining <= _WATCH_INTERVAL_S:
                self.kill()
                _worker_ended(self.engine, "timeout")
                limit = timeout_s if timeout_s is not None else START_TIMEOUT_S
                raise WorkerFailure(f"{activity} exceeded {limit:g} s", limit_exceeded=True)
            if memory_mb is not None:
                resident = resident_mb(self.pid)
                if resident is not None and resident > memory_mb:
                    self.kill()
                    _worker_ended(self.engine, "memory_limit")
                    raise WorkerFailure(
                        f"{activity} exceeded the memory limit of {memory_mb} MB", limit_exceeded=True
                    )
        try:
            return self._replies.recv()
        except (EOFError, OSError):
            raise self._crashed() from None

    def request(
        self,
        request: dict[str, Any],
        timeout_s: float,
        activity: str,
        memory_mb: int | None = None,
        deadline: float | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Send one request and yield every message up to and including the final ``done``.

        ``deadline`` (time.monotonic()) ends it earlier than ``timeout_s`` from now, e.g. when part of
        the caller's time went into waiting for this worker; ``timeout_s`` is the limit users are told.
        """
        if deadline is None:
            deadline = time.monotonic() + timeout_s
        try:
            self._requests.send(request)
        except (BrokenPipeError, OSError):
            raise self._crashed() from None
        while True:
            message = self._receive(deadline, activity, timeout_s, memory_mb)
            if message.get("type") == "done":
                # Killed before the answer is handed over: the caller stops reading at ``done``, so code
                # after that yield would never run and a worker asking to be replaced would be reused.
                if message.get("restart"):
                    self.kill()
                    _worker_ended(self.engine, "restart_requested")
                yield message
                return
            yield message


def _forget_spawner_after_fork() -> None:
    # The spawning thread did not survive the fork: the child starts its own when it needs a worker.
    global _spawn_thread, _spawn_lock
    _spawn_thread = None
    _spawn_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_spawner_after_fork)
