"""The platform's own Prometheus metrics (django-prometheus adds the framework's: requests, latencies,
responses by status, database errors).

Each figure is counted in the one service function where its event happens: decisions and their latency
in deployments/verdicts.py, expiries in deployments/sweeps.py, resends in sweeps.py, webhook failures in
notifications/webhooks.py, audit stream failures in
accounts/audit_stream.py, email failures in notifications/approval_emails.py, sync failures in
policies/git/sources.py, engine workers' ends in rego/supervisor.py (through its observer hook,
``observe_engine``). Figures read from the database at scrape time (waiting deployments, the outbox's
lag) are in metrics_view.py.

With several processes (gunicorn workers, Celery workers) set PROMETHEUS_MULTIPROC_DIR to a directory
they share: counters are then written there and /metrics adds up every process's.
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

DECISIONS = Counter(
    "policy_platform_decisions",
    "Decisions recorded for deployments, by outcome (allow, warn, pending, deny, error) and engine.",
    ["outcome", "engine"],
)
EVALUATION_SECONDS = Histogram(
    "policy_platform_evaluation_seconds",
    "Time from an evaluation's start to its recorded verdict (input, engine and recording).",
    ["engine"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
)
EXPIRIES = Counter("policy_platform_deployment_expiries", "Deployments expired while waiting for approval.")
ENGINE_WORKER_RESTARTS = Counter(
    "policy_platform_engine_worker_restarts",
    "Engine workers killed and replaced, by engine and reason (timeout, memory_limit, crash, restart_requested).",
    ["engine", "reason"],
)
ENGINE_TIMEOUTS = Counter(
    "policy_platform_engine_timeouts", "Engine work stopped at its time limit, by engine.", ["engine"]
)
WEBHOOK_FAILURES = Counter(
    "policy_platform_webhook_delivery_failures",
    "Failed webhook delivery attempts, by kind of failure; final: no attempt follows.",
    ["kind", "final"],
)
AUDIT_STREAM_FAILURES = Counter(
    "policy_platform_audit_stream_failures",
    "Failed attempts to stream the audit log to the SIEM, by target (webhook, syslog) and kind of failure.",
    ["target", "kind"],
)
EMAIL_FAILURES = Counter(
    "policy_platform_email_delivery_failures", "Emails that could not be sent, by kind.", ["kind"]
)
RESENDS = Counter(
    "policy_platform_resends", "Lost wake-ups found and sent again by a sweep, by kind of work.", ["work"]
)
SYNC_FAILURES = Counter("policy_platform_policy_sync_failures", "Policy syncs from git that failed.")


def record_decision(outcome: str, engine: str, seconds: float) -> None:
    DECISIONS.labels(outcome=outcome, engine=engine).inc()
    EVALUATION_SECONDS.labels(engine=engine).observe(seconds)


def engine_worker_ended(engine: str, reason: str) -> None:
    ENGINE_WORKER_RESTARTS.labels(engine=engine, reason=reason).inc()
    if reason == "timeout":
        ENGINE_TIMEOUTS.labels(engine=engine).inc()


def observe_engine() -> None:
    """Hear of engine workers' ends (called once per process, from apps.py)."""
    from policies_app.rego.worker_process import observe_worker_ends

    observe_worker_ends(engine_worker_ended)
