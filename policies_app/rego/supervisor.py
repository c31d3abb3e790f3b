"""Persistent, supervised engine worker processes.

Workers are started with ``subprocess`` (fork+exec), never by forking the caller: the caller may be a
threaded gunicorn worker or a daemonic Celery prefork child (which multiprocessing refuses to let have
children). A worker is reused while healthy; one that times out is killed, one that crashes is reaped,
and both are replaced on the next request. A lock makes the pool safe to share between threads, and a
fork of the calling process gets a fresh pool instead of sharing pipes with its parent.
"""

from __future__ import annotations

import atexit
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

from policies_app.rego.contract import SUPERVISOR_PID_VARIABLE, EngineBusyError, EngineUnavailableError

_PROJECT_ROOT = Path(__file__).resolve().parents[2]
_START_TIMEOUT_S = 60.0
_WATCH_INTERVAL_S = 0.02
# A named pool does not queue: a caller waits at most this long for a worker, then is told it is busy;
# enough for a worker to be handed back or replaced after a kill, so one request at a time is never busy.
_NAMED_POOL_WAIT_S = 2.0


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


# The worker ends with the process that supervises it (worker.py asks the kernel for SIGKILL when its
# parent ends, and leaves at once if that parent is already gone). Without it, a supervisor killed
# mid-evaluation (an OOM kill, a SIGKILLed Celery child) left its worker computing a long policy to the
# end: minutes of a core, with no one to read the answer.
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
    def __init__(self, engine: str, start_timeout_s: float = _START_TIMEOUT_S) -> None:
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
                limit = timeout_s if timeout_s is not None else _START_TIMEOUT_S
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


class WorkerPool:
    """Workers of one engine. ``busy_wait_s`` None: a caller waits (within its time limit) for a worker;
    a number: a caller waits at most that long, then gets EngineBusyError instead of queueing."""

    def __init__(self, engine: str, size: int, *, name: str = "", busy_wait_s: float | None = None) -> None:
        self.engine = engine
        self.name = name
        self.size = max(1, size)
        self.busy_wait_s = busy_wait_s
        self._condition = threading.Condition()
        self._idle: list[EngineWorker] = []
        self._busy: set[EngineWorker] = set()
        self._starting = 0

    def _acquire(
        self, deadline: float | None = None, activity: str = "", timeout_s: float = 0.0
    ) -> EngineWorker:
        """A worker for one request; waits at most until ``deadline`` for one to be free or to start."""
        wait_until = deadline
        if self.busy_wait_s is not None:
            busy_deadline = time.monotonic() + self.busy_wait_s
            wait_until = busy_deadline if deadline is None else min(deadline, busy_deadline)
        with self._condition:
            while True:
                while self._idle:
                    worker = self._idle.pop()
                    if worker.alive():
                        self._busy.add(worker)
                        return worker
                    worker.kill()
                if len(self._busy) + self._starting < self.size:
                    self._starting += 1
                    break
                remaining = None if wait_until is None else wait_until - time.monotonic()
                if remaining is not None and remaining <= 0 and self.busy_wait_s is not None:
                    raise EngineBusyError(
                        f"all {self.size} {self.engine} engine workers of the {self.name} pool are busy; "
                        "try again later"
                    )
                if remaining is not None and remaining <= 0:
                    raise WorkerFailure(
                        f"{activity} exceeded {timeout_s:g} s waiting for a free {self.engine} engine "
                        f"worker (all {self.size} busy)",
                        limit_exceeded=True,
                    )
                self._condition.wait(remaining)
        start_timeout = _START_TIMEOUT_S if deadline is None else max(deadline - time.monotonic(), 0.0)
        try:
            if start_timeout <= 0:
                raise WorkerFailure(
                    f"{activity} exceeded {timeout_s:g} s before an engine worker was free",
                    limit_exceeded=True,
                )
            worker = EngineWorker(self.engine, min(start_timeout, _START_TIMEOUT_S))
        except BaseException as error:
            with self._condition:
                self._starting -= 1
                self._condition.notify()
            if isinstance(error, WorkerFailure) and error.limit_exceeded and deadline is not None:
                # The caller's time ran out while the worker started: a timeout, as the caller set it.
                raise WorkerFailure(
                    f"{activity} exceeded {timeout_s:g} s while starting the {self.engine} engine worker",
                    limit_exceeded=True,
                ) from error
            if isinstance(error, (WorkerFailure, OSError)):
                detail = error.message if isinstance(error, WorkerFailure) else str(error)
                raise EngineUnavailableError(
                    f"cannot start the {self.engine} engine worker: {detail}"
                ) from error
            raise
        with self._condition:
            self._starting -= 1
            self._busy.add(worker)
        return worker

    def _release(self, worker: EngineWorker) -> None:
        with self._condition:
            self._busy.discard(worker)
            if worker.alive():
                self._idle.append(worker)
            else:
                worker.kill()
            self._condition.notify()

    def run(
        self,
        request: dict[str, Any],
        timeout_s: float,
        activity: str,
        on_message: Callable[[dict[str, Any]], None] | None = None,
        deadline: float | None = None,
    ) -> dict[str, Any]:
        """Run one request on a worker; returns the ``done`` message or raises WorkerFailure.

        ``timeout_s`` bounds the whole call: waiting for a free worker (or for one to start) included.
        ``deadline`` (time.monotonic()) ends it earlier, when the caller's ``timeout_s`` covers more.
        """
        deadline = min(time.monotonic() + timeout_s, deadline or float("inf"))
        worker = self._acquire(deadline, activity, timeout_s)
        try:
            for message in worker.request(
                request, timeout_s, activity, request.get("memory_mb"), deadline=deadline
            ):
                if message.get("type") == "done":
                    return message
                if on_message is not None:
                    on_message(message)
            raise WorkerFailure("engine worker stopped without an answer")
        except WorkerFailure:
            raise  # the worker is already killed or reaped
        except BaseException:
            # Anything else (a KeyboardInterrupt mid-request...) leaves the pipe mid-message: start afresh.
            worker.kill()
            raise
        finally:
            self._release(worker)

    def pids(self) -> list[int]:
        with self._condition:
            return [worker.pid for worker in (*self._idle, *self._busy) if worker.alive()]

    def shutdown(self) -> None:
        with self._condition:
            workers = [*self._idle, *self._busy]
            self._idle.clear()
        for worker in workers:
            worker.kill()


# One pool per engine and name: a regorus worker must not load OPA's Go runtime, which would make
# RLIMIT_AS meaningless for regorus too. The unnamed pool serves deployments and queues; a named pool
# ("dry-run") is small, separate, and refuses work when busy, so it can never starve deployments.
_pools: dict[tuple[str, str], WorkerPool] = {}
_pools_lock = threading.Lock()


def pool_size_variable(name: str) -> str:
    """The environment variable that sizes a named pool: "dry-run" -> POLICY_ENGINE_WORKERS_DRY_RUN."""
    suffix = "".join(char if char.isalnum() else "_" for char in name.upper())
    return f"POLICY_ENGINE_WORKERS_{suffix}" if name else "POLICY_ENGINE_WORKERS"


def pool(engine: str, name: str | None = None, size: int | None = None) -> WorkerPool:
    """The pool for ``engine``: the deployment pool, or a named pool of ``size`` workers (default: its
    environment variable, else 2 for the deployment pool and 1 for a named one). A named pool's size is
    fixed by its first use."""
    name = name or ""
    with _pools_lock:
        if (engine, name) not in _pools:
            default = size if size is not None else (1 if name else 2)
            workers = int(os.environ.get(pool_size_variable(name), default)) if size is None else size
            busy_wait_s = _NAMED_POOL_WAIT_S if name else None
            _pools[(engine, name)] = WorkerPool(engine, workers, name=name, busy_wait_s=busy_wait_s)
        return _pools[(engine, name)]


def _forget_pools_after_fork() -> None:
    # The child must not talk to its parent's workers; it starts its own when it first needs one.
    # Nor use its spawning thread, which did not survive the fork.
    global _pools, _pools_lock, _spawn_thread, _spawn_lock
    _pools = {}
    _pools_lock = threading.Lock()
    _spawn_thread = None
    _spawn_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_pools_after_fork)
atexit.register(lambda: shutdown())


def warm_up(engine: str) -> None:
    """Start a worker now (e.g. from Celery's worker_process_init) so the first evaluation does not wait
    for Python and the engine to load (0.1-0.3 s)."""
    engine_pool = pool(engine)
    engine_pool._release(engine_pool._acquire())


def worker_pids(engine: str, pool_name: str | None = None) -> list[int]:
    """Pids of the live workers of one engine's pool in this process (for operations and tests)."""
    return pool(engine, pool_name).pids()


def shutdown() -> None:
    for engine_pool in list(_pools.values()):
        engine_pool.shutdown()
