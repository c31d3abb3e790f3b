"""``/readyz``: whether this process can do its work now, as a load balancer or orchestrator asks
before sending it traffic. Distinct from ``/healthz`` (liveness: the process answers, nothing asked of
anything else), so that a database outage takes web processes out of rotation without restarting them.

Checked, each within a few seconds: the database (a query), the broker when one is configured (a
connection), and an engine worker: with a broker, a Celery worker answering a ping (the engines run
there); without one (embedded mode), a worker of this process's engine evaluating a probe policy.
The answer is 200 or 503 with each check's result; no secret, no address of a service is shown.
"""

from __future__ import annotations

import json
import logging

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse

from policies_app.policies.engine import engine_problem

logger = logging.getLogger(__name__)


def database_problem() -> str | None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as problem:  # noqa: BLE001 - any failure means not ready
        logger.warning("readiness: database unavailable: %s", problem)
        return "unavailable"
    return None


def broker_problem() -> str | None:
    from celery import current_app

    try:
        with current_app.connection_for_write() as broker:
            broker.ensure_connection(max_retries=1, timeout=settings.READINESS_TIMEOUT_SECONDS)
    except Exception as problem:  # noqa: BLE001
        logger.warning("readiness: broker unavailable: %s", problem)
        return "unavailable"
    return None


def worker_problem() -> str | None:
    if settings.CELERY_BROKER_URL:
        from celery import current_app

        try:
            answers = current_app.control.ping(timeout=settings.READINESS_TIMEOUT_SECONDS)
        except Exception as problem:  # noqa: BLE001
            logger.warning("readiness: cannot ping the workers: %s", problem)
            return "unavailable"
        return None if answers else "no worker answered"
    problem = engine_problem(settings.READINESS_TIMEOUT_SECONDS)
    if problem:
        logger.warning("readiness: engine worker: %s", problem)
        return "no engine worker answered"
    return None


def checks() -> dict[str, str]:
    results = {"database": database_problem()}
    if settings.CELERY_BROKER_URL:
        results["broker"] = broker_problem()
        if results["broker"] is None:
            results["engine_worker"] = worker_problem()
        else:
            results["engine_worker"] = "broker unavailable"
    else:
        results["engine_worker"] = worker_problem()
    return {name: problem or "ok" for name, problem in results.items()}


def readyz(request: HttpRequest) -> HttpResponse:
    results = checks()
    ready = all(result == "ok" for result in results.values())
    return HttpResponse(
        json.dumps({"ready": ready, "checks": results}),
        status=200 if ready else 503,
        content_type="application/json",
    )
