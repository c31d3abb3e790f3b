"""The engines run in supervised worker processes: time limit, memory limit, crashes, threads, forks."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from policies_app.rego import (
    ENGINES,
    PolicyCompileError,
    PolicyModule,
    PolicySource,
    check_policy,
    evaluate_policies,
)
from policies_app.rego.supervisor import worker_pids

pytestmark = pytest.mark.parametrize("engine", ENGINES)


def policy(name, source):
    return PolicySource(f"{name}@1", name, "v1", (PolicyModule(f"{name}.rego", source),))


FINE = policy("fine", 'package env0\n\nallow contains "fine" if { true }\n')

# About 10^9 iterations that allocate nothing: only the time limit stops it.
LOOPS = policy(
    "loops",
    """package env0

deny contains "never" if {
  some a in numbers.range(1, 1000)
  some b in numbers.range(1, 1000)
  some c in numbers.range(1, 1000)
  a * b * c == -1
}
""",
)

# An array of 200 million numbers: gigabytes, far over the limits used below.
HOG = policy(
    "hog",
    """package env0

deny contains "huge" if {
  xs := numbers.range(1, 200000000)
  count(xs) == 0
}
""",
)


def assert_still_works(engine):
    result = evaluate_policies([FINE], "{}", engine)
    assert result.decision == "allow", result.error


def test_it_stops_an_evaluation_that_runs_too_long_and_fails_closed(engine):
    started = time.monotonic()
    result = evaluate_policies([FINE, LOOPS], "{}", engine, timeout_s=1.5)
    assert time.monotonic() - started < 6
    assert result.decision == "error"
    assert result.error.policy == "loops"
    assert result.error.message == "evaluation exceeded 1.5 s"
    assert [o.decision for o in result.outcomes] == ["allow", "error"]
    assert_still_works(engine)


def test_it_stops_an_evaluation_that_exceeds_the_memory_limit_and_fails_closed(engine):
    result = evaluate_policies([HOG, FINE], "{}", engine, memory_mb=400, timeout_s=60)
    assert result.decision == "error"
    assert result.error.policy == "hog"
    assert "memory limit" in result.error.message
    assert result.outcomes[1].decision == "error"
    assert "not evaluated" in result.outcomes[1].error.message
    assert_still_works(engine)


def test_it_rejects_a_policy_whose_check_runs_too_long(engine):
    if engine == "opa":
        # OPA compiles without running any rule: the loop is a matter for evaluation's time limit.
        check_policy(LOOPS, engine, timeout_s=5.0)
        return
    with pytest.raises(PolicyCompileError) as caught:
        check_policy(LOOPS, engine, timeout_s=1.0)
    assert caught.value.policy == "loops"
    assert caught.value.message == "compiling the policy exceeded 1 s"


def test_it_fails_closed_when_the_worker_is_killed_mid_evaluation(engine):
    assert_still_works(engine)
    pids_before = set(worker_pids(engine))
    results = []
    evaluation = threading.Thread(
        target=lambda: results.append(evaluate_policies([LOOPS], "{}", engine, timeout_s=30))
    )
    evaluation.start()
    time.sleep(0.7)  # the loop is running by now
    # Whichever worker is running the loop: a segmentation fault in native code looks like this.
    for pid in worker_pids(engine):
        os.kill(pid, signal.SIGSEGV)
    evaluation.join(30)
    assert not evaluation.is_alive()
    [result] = results
    assert result.decision == "error"
    if engine == "opa":
        # Go's runtime catches SIGSEGV itself, prints its goroutines and dies in its own way.
        assert result.error.message.startswith(("engine crashed (signal", "engine worker exited"))
    else:
        assert result.error.message == "engine crashed (signal 11, SIGSEGV)"
    assert_still_works(engine)
    assert not set(worker_pids(engine)) & pids_before


# A supervising process with one evaluation of LOOPS under way: it prints its worker's pid and waits.
SUPERVISOR = """
import sys, threading, time
from policies_app.rego import PolicyModule, PolicySource, evaluate_policies
from policies_app.rego.supervisor import worker_pids

engine, source = sys.argv[1], sys.stdin.read()
loops = PolicySource("loops@1", "loops", "v1", (PolicyModule("loops.rego", source),))
threading.Thread(target=evaluate_policies, args=([loops], "{}", engine), kwargs={"timeout_s": 600}).start()
while not worker_pids(engine):
    time.sleep(0.02)
print(worker_pids(engine)[0], flush=True)
time.sleep(600)
"""


def running(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie no init has reaped yet does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_worker_ends_with_the_process_that_supervises_it(engine):
    # A Celery child or gunicorn worker killed mid-evaluation (SIGKILL, the OOM killer) cannot stop its
    # worker: the worker must not go on computing the policy, minutes of a core, for no one.
    supervising = subprocess.Popen(
        [sys.executable, "-c", SUPERVISOR, engine],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        supervising.stdin.write(LOOPS.modules[0].source)
        supervising.stdin.close()
        worker = int(supervising.stdout.readline())
        time.sleep(0.5)  # the loop is running by now
        assert running(worker)
    finally:
        supervising.kill()
        supervising.wait(10)
    deadline = time.monotonic() + 10
    while running(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not running(worker), "the worker outlived its supervisor"


def test_a_worker_started_for_a_thread_that_has_ended_goes_on_serving(engine, monkeypatch):
    # Linux's parent-death signal follows the thread that started the worker: request threads end
    # (runserver's, one per request), so workers are started by one thread that lives with the process.
    from policies_app.rego import supervisor

    monkeypatch.setattr(supervisor, "_pools", {})
    request = threading.Thread(target=assert_still_works, args=(engine,))
    request.start()
    request.join(60)
    [pid] = worker_pids(engine)
    time.sleep(0.3)
    assert running(pid)
    assert_still_works(engine)
    assert worker_pids(engine) == [pid]
    supervisor.pool(engine).shutdown()


def test_it_replaces_a_worker_that_died_while_idle(engine):
    assert_still_works(engine)
    for pid in worker_pids(engine):
        os.kill(pid, signal.SIGKILL)
    time.sleep(0.1)
    assert_still_works(engine)


def test_it_serves_several_threads_at_once(engine):
    source = 'package env0\n\ndeny contains sprintf("request %v", [input.n]) if { input.n % 2 == 0 }\n\nallow contains "odd" if { input.n % 2 == 1 }\n'
    numbered = policy("numbered", source)
    results: dict[int, str] = {}

    def run(n):
        outcome = evaluate_policies([numbered], json.dumps({"n": n}), engine)
        results[n] = outcome.messages["deny"][0] if outcome.decision == "deny" else outcome.decision

    threads = [threading.Thread(target=run, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert results == {n: (f"request {n}" if n % 2 == 0 else "allow") for n in range(8)}


def test_a_forked_child_uses_its_own_workers(engine):
    # Celery's prefork pool forks after the parent may have used the engine: the child must not share
    # the parent's pipes (answers would be read by the wrong process).
    assert_still_works(engine)
    parent_pids = set(worker_pids(engine))
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        try:
            os.close(read_end)
            ok = evaluate_policies([FINE], "{}", engine).decision == "allow"
            own = not set(worker_pids(engine)) & parent_pids
            os.write(write_end, b"ok" if ok and own else b"no")
        finally:
            os._exit(0)
    os.close(write_end)
    answer = os.read(read_end, 2)
    os.close(read_end)
    os.waitpid(child, 0)
    assert answer == b"ok"
    assert_still_works(engine)


@pytest.mark.parametrize("executable", ["/nonexistent/python3", "/bin/false"])
def test_it_fails_closed_when_no_worker_can_start(engine, executable, monkeypatch):
    from policies_app.rego import EngineUnavailableError, supervisor, worker_process

    monkeypatch.setattr(supervisor, "_pools", {})
    monkeypatch.setattr(worker_process.sys, "executable", executable)
    result = evaluate_policies([FINE], "{}", engine)
    assert result.decision == "error"
    assert result.error.message.startswith(f"cannot start the {engine} engine worker")
    assert result.outcomes[0].decision == "error"
    with pytest.raises(EngineUnavailableError):
        check_policy(FINE, engine)


def test_it_can_start_a_worker_ahead_of_the_first_evaluation(engine, monkeypatch):
    from policies_app.rego import supervisor

    monkeypatch.setattr(supervisor, "_pools", {})
    assert worker_pids(engine) == []
    supervisor.warm_up(engine)
    [pid] = worker_pids(engine)
    assert_still_works(engine)
    assert worker_pids(engine) == [pid]
    supervisor.pool(engine).shutdown()


def test_it_counts_waiting_for_a_free_worker_in_the_time_limit(engine, monkeypatch):
    from policies_app.rego import supervisor

    # A pool of one worker, kept busy by a loop: the second evaluation can only wait for it.
    monkeypatch.setattr(supervisor, "_pools", {})
    monkeypatch.setenv("POLICY_ENGINE_WORKERS", "1")
    busy = threading.Thread(target=lambda: evaluate_policies([LOOPS], "{}", engine, timeout_s=3))
    busy.start()
    try:
        deadline = time.monotonic() + 10
        while not worker_pids(engine) and time.monotonic() < deadline:
            time.sleep(0.05)
        started = time.monotonic()
        result = evaluate_policies([FINE], "{}", engine, timeout_s=1)
        waited = time.monotonic() - started
    finally:
        busy.join()
        supervisor.pool(engine).shutdown()
    assert waited < 2.5
    assert result.decision == "error"
    assert result.outcomes[0].decision == "error"
    assert result.error.message == (
        f"evaluation exceeded 1 s waiting for a free {engine} engine worker (all 1 busy)"
    )


def test_a_worker_that_asks_to_be_replaced_is_not_used_again(engine):
    from policies_app.rego.supervisor import WorkerPool

    workers = WorkerPool(engine, 1, name="replaced")
    try:
        first = workers.run({"op": "ping"}, 30, "a ping")["pid"]
        # A request the worker cannot handle raises inside it: it answers, asking to be replaced.
        answer = workers.run({"op": "evaluate"}, 30, "a broken request")
        assert answer["restart"] and "engine worker error" in answer["error"]["message"]
        assert first not in workers.pids()
        assert workers.run({"op": "ping"}, 30, "a ping")["pid"] != first
    finally:
        workers.shutdown()
