"""The pools of supervised engine workers: how many run, who waits for one, and what a request costs.

A pool hands each request one worker (worker_process.py: one process, its pipes and its limits); a
worker is reused while healthy, and one that timed out, crashed or asked to be replaced is started anew
on the next request. A lock makes a pool safe to share between threads, and a fork of the calling process
gets fresh pools instead of sharing pipes with its parent.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from policies_app.rego.contract import EngineBusyError, EngineUnavailableError
from policies_app.rego.worker_process import START_TIMEOUT_S, EngineWorker, WorkerFailure

# A named pool does not queue: a caller waits at most this long for a worker, then is told it is busy;
# enough for a worker to be handed back or replaced after a kill, so one request at a time is never busy.
_NAMED_POOL_WAIT_S = 2.0


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
        start_timeout = START_TIMEOUT_S if deadline is None else max(deadline - time.monotonic(), 0.0)
        try:
            if start_timeout <= 0:
                raise WorkerFailure(
                    f"{activity} exceeded {timeout_s:g} s before an engine worker was free",
                    limit_exceeded=True,
                )
            worker = EngineWorker(self.engine, min(start_timeout, START_TIMEOUT_S))
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
    global _pools, _pools_lock
    _pools = {}
    _pools_lock = threading.Lock()


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
