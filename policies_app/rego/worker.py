"""The supervised engine worker: ``python -m policies_app.rego.worker`` (started by supervisor.py).

It reads pickled requests on stdin and answers on the original stdout. Engines are native code that can
crash, loop or exhaust memory; running them here means the web server or Celery worker that asked only
ever sees an error. Native libraries print diagnostics on stdout (rego-cpp does), so fd 1 is pointed at
/dev/null and the protocol uses a private duplicate of it.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys
from multiprocessing.connection import Connection
from typing import Any

from policies_app.rego.capabilities import refused_in_test_module
from policies_app.rego.contract import SUPERVISOR_PID_VARIABLE, PolicyCompileError
from policies_app.rego.decisions import MessageLimits, limit_messages, truncate_message
from policies_app.rego.engines import LRUCache, OpaAdapter, PolicyRuntimeError, RegorusAdapter
from policies_app.rego.prepare import PreparedPolicy, library_modules, prepare_policy
from policies_app.rego.testing import WORKER_OPERATIONS

_MB = 1024 * 1024
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _virtual_memory_bytes() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


class Worker:
    """Serves one engine. Every worker loads regorus, whose parser prepares policies (prepare.py);
    only opa workers load OPA's Go runtime."""

    def __init__(self, engine: str, send: Any) -> None:
        self.engine = engine
        self.send = send
        self.regorus = RegorusAdapter()
        self.opa = OpaAdapter() if engine == "opa" else None
        library_modules()  # read once per process, before the baseline is measured
        self.prepared = LRUCache()
        # RLIMIT_AS is set relative to what the worker already maps: regorus alone reserves ~1 GB of
        # address space at import, which is not memory the policy uses.
        self.baseline_bytes = _virtual_memory_bytes()

    def _prepare(self, payload: dict[str, Any]) -> PreparedPolicy:
        # Cached by (key, source hash): a policy revision is parsed, scanned and rewritten once per worker.
        return self.prepared.get_or_create((payload["key"], payload["hash"]), lambda: prepare_policy(payload))

    def check(self, request: dict[str, Any]) -> dict[str, Any]:
        payload = request["policy"]
        try:
            policy = self._prepare(payload)
            for filename, source in request.get("tests") or ():
                refused = refused_in_test_module(filename, source, rego_v0=policy.rego_version == "v0")
                if refused is not None:
                    raise refused.error(policy.name)
            if self.opa is not None:
                self.opa.check(policy, (payload["key"], payload["hash"]))
            else:
                self.regorus.check(policy)
        except PolicyCompileError as error:
            return {"type": "done", "error": _compile_error_dict(error)}
        return {"type": "done", "error": None}

    def evaluate(self, request: dict[str, Any]) -> dict[str, Any]:
        payloads = request["policies"]
        prepared: list[PreparedPolicy | None] = []
        failures: dict[int, dict[str, Any]] = {}
        for index, payload in enumerate(payloads):
            try:
                prepared.append(self._prepare(payload))
            except PolicyCompileError as error:
                prepared.append(None)
                failures[index] = _compile_error_dict(error)
        runnable = [index for index, policy in enumerate(prepared) if policy is not None]
        limits = MessageLimits(**request.get("limits", {}))
        remaining = [limits.per_evaluation]  # messages this evaluation may still send

        # A policy's outcome crosses the pipe with the "started" of the next one (one message, not two
        # per policy): "started" must be sent before its policy runs (a crash or timeout is blamed on the
        # policy announced last); an outcome may wait, as nothing runs between it and the next start.
        held: list[dict[str, Any]] = []

        def report(position: int, kind: str, **fields: Any) -> None:
            # Cut messages here, before they cross the pipe: a policy can build a 100 MB message.
            if fields.get("messages") is not None:
                fields["messages"], used = limit_messages(fields["messages"], limits, remaining[0])
                remaining[0] = max(remaining[0] - used, 0)
            if fields.get("error") is not None:
                fields["error"] = _limited_error(fields["error"], limits)
            held.append({"type": kind, "index": runnable[position], **fields})
            if kind == "started":
                self._send_held(held)

        for index, error in failures.items():
            self.send({"type": "outcome", "index": index, "error": _limited_error(error, limits)})
        policies = [prepared[index] for index in runnable]
        try:
            if self.opa is not None:
                keys = [(payloads[index]["key"], payloads[index]["hash"]) for index in runnable]
                together = request.get("together", True)
                self.opa.evaluate(policies, keys, request["input_json"], report, together=together)
            else:
                self.regorus.evaluate(policies, request["input_json"], report)
        except PolicyRuntimeError as error:
            message = truncate_message(error.message, limits.characters)
            return {"type": "done", "error": {"file": None, "line": None, "column": None, "message": message}}
        finally:  # whatever ends the evaluation, the outcomes already decided cross the pipe first
            self._send_held(held)
        return {"type": "done", "error": None}

    def _send_held(self, held: list[dict[str, Any]]) -> None:
        """Send the messages held, in order, in one message (``batch``: the supervisor unpacks it)."""
        if len(held) == 1:
            self.send(held[0])
        elif held:
            self.send({"type": "batch", "messages": list(held)})
        held.clear()

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        if op == "ping":
            return {"type": "done", "error": None, "pid": os.getpid()}
        limit = request.get("memory_mb")
        if limit and self.engine == "regorus":
            # RLIMIT_AS makes an engine that builds an enormous value fail (MemoryError, or an abort in
            # native code) instead of taking the machine's memory; the supervisor restarts us if we die.
            # Not for opa: Go's runtime reserves address space as it sees fit; its memory is bounded by
            # the supervisor's RSS watchdog.
            _, hard = resource.getrlimit(resource.RLIMIT_AS)
            wanted = self.baseline_bytes + int(limit) * _MB
            if hard != resource.RLIM_INFINITY:
                wanted = min(wanted, hard)
            resource.setrlimit(resource.RLIMIT_AS, (wanted, hard))
        if op == "check":
            return self.check(request)
        if op == "evaluate":
            return self.evaluate(request)
        if op in WORKER_OPERATIONS:  # policy tests and explanations, on OPA (testing.py)
            return WORKER_OPERATIONS[op](self._prepare, request)
        return {"type": "done", "error": {"message": f"unknown request {op!r}"}}


def _limited_error(error: dict[str, Any], limits: MessageLimits) -> dict[str, Any]:
    return {**error, "message": truncate_message(error.get("message") or "", limits.characters)}


def _compile_error_dict(error: PolicyCompileError) -> dict[str, Any]:
    return {"file": error.file, "line": error.line, "column": error.column, "message": error.message}


def _end_with_supervisor() -> None:
    """Killed by the kernel when the supervisor ends (Linux's parent-death signal), so that a supervisor
    killed mid-evaluation does not leave this worker computing for no one; gone already, leave now."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    supervisor = os.environ.get(SUPERVISOR_PID_VARIABLE)
    if supervisor and os.getppid() != int(supervisor):
        os._exit(0)


def main() -> int:
    _end_with_supervisor()
    protocol_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    sys.stdout = sys.stderr
    requests = Connection(0, writable=False)
    replies = Connection(protocol_fd, readable=False)
    engine = sys.argv[1] if len(sys.argv) > 1 else "regorus"
    worker = Worker(engine, replies.send)
    replies.send({"type": "ready", "pid": os.getpid()})
    while True:
        try:
            request = requests.recv()
        except (EOFError, OSError):
            return 0  # the supervisor went away
        try:
            reply = worker.handle(request)
        except MemoryError:
            # Python itself ran out under RLIMIT_AS: our state is suspect, ask to be replaced.
            reply = {"type": "done", "restart": True, "error": {"message": "memory limit exceeded"}}
        except Exception as error:  # a bug of ours must still produce an answer, never a hang
            reply = {"type": "done", "restart": True, "error": {"message": f"engine worker error: {error!r}"}}
        replies.send(reply)


if __name__ == "__main__":
    sys.exit(main())
