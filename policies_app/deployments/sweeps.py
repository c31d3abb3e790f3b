"""The platform's periodic sweeps of deployments (run by Celery beat, or ``manage.py run_periodic``):
evaluations that are due but that no worker has are sent again, deployments nobody decided on in time
expire, releases the pipeline did not complete in time expire (freeing their environment), and a
deployment still held behind a release that is done is started.

Each sweep reads the due work from the deployments' rows (lifecycle.py records it there), so a lost
message, a broker outage or a worker that died is made good by the platform itself.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from policies_app import audit
from policies_app.choices import WAITING_STATUSES, DeploymentStatus, EventKind
from policies_app.deployments.lifecycle import (
    move_deployment,
    record_event,
    start_held_deployments,
    wake_evaluation,
)
from policies_app.models import Deployment
from policies_app.ops import metrics

logger = logging.getLogger(__name__)


def resend_lost_evaluations() -> list[int]:
    """Send again the evaluations that are due but that no worker has: their message was never sent
    (the broker was down), lost (a broker restart), or held by a worker that died. Returns their ids."""
    now = timezone.now()
    resend_before = now - timedelta(seconds=settings.EVALUATION_RESEND_AFTER_SECONDS)
    lease_start = now - timedelta(seconds=settings.EVALUATION_LEASE_SECONDS)
    lost = Deployment.objects.filter(
        status__in=WAITING_STATUSES, evaluation_due_at__isnull=False, evaluation_enqueued_at__lt=resend_before
    ).filter(
        # Nobody is on it: never started, started before the work became due, or started so long ago
        # that the worker must have died.
        Q(evaluation_started_at__isnull=True)
        | Q(evaluation_started_at__lt=F("evaluation_due_at"))
        | Q(evaluation_started_at__lt=lease_start)
    )
    resent = []
    for deployment_id, status in lost.values_list("pk", "status")[: settings.EVALUATION_RESEND_BATCH]:
        Deployment.objects.filter(pk=deployment_id).update(evaluation_enqueued_at=now)
        wake_evaluation(deployment_id, resume=status == DeploymentStatus.PENDING_APPROVAL)
        resent.append(deployment_id)
    if resent:
        metrics.RESENDS.labels(work="evaluation").inc(len(resent))
        logger.warning("resent the evaluation of %d deployments: %s", len(resent), resent)
    return resent


def sweep_waiting_deployments(now: datetime | None = None) -> dict[str, list[int]]:
    """Periodic: expire deployments nobody decided on in time and releases the pipeline did not complete
    in time, and start any deployment still held behind a release that is done (a safety net: completing
    or expiring a release starts the next one itself)."""
    now = now or timezone.now()
    expired = _expire_waiting(now)
    stale = _expire_stale_releases(now)
    started = []
    held_environments = (
        Deployment.objects.filter(status=DeploymentStatus.QUEUED, evaluation_due_at__isnull=True)
        .values_list("environment_id", flat=True)
        .distinct()
    )
    for environment_id in held_environments:
        with transaction.atomic():
            started += start_held_deployments(environment_id)
    if expired or stale or started:
        logger.info(
            "expired deployments %s; expired stale releases %s; started held deployments %s",
            expired,
            stale,
            started,
        )
    return {"expired": expired, "expired_releases": stale, "started": started}


def _expire_stale_releases(now: datetime) -> list[int]:
    """A released deployment whose pipeline never reported back would hold its environment for ever: past
    its project's release expiry it expires, which tells the gate (``complete`` is refused), the audit log
    and the webhooks, and starts the deployment held behind it (lifecycle._after_status_change)."""
    stale = []
    due = Deployment.objects.filter(status=DeploymentStatus.APPROVED, expires_at__lte=now).values_list(
        "pk", "released_at"
    )
    for deployment_id, released_at in due[: settings.EVALUATION_RESEND_BATCH]:
        with transaction.atomic():
            if not move_deployment(deployment_id, DeploymentStatus.APPROVED, DeploymentStatus.EXPIRED):
                continue
            hours = (now - released_at if released_at else timedelta(0)).total_seconds() / 3600
            record_event(
                deployment_id,
                EventKind.EXPIRED,
                detail=f"Released {hours:.1f} hours ago and not completed by the pipeline: the release "
                "went stale and no longer holds the environment.",
            )
            stale_deployment = Deployment.objects.select_related("environment__project").get(pk=deployment_id)
            audit.record(
                None,
                "deployment.expired",
                stale_deployment,
                before={"status": DeploymentStatus.APPROVED},
                after={"released_hours": round(hours, 1)},
            )
            stale.append(deployment_id)
            metrics.EXPIRIES.inc()
    return stale


def _expire_waiting(now: datetime) -> list[int]:
    expired = []
    due = Deployment.objects.filter(
        status=DeploymentStatus.PENDING_APPROVAL, expires_at__lte=now
    ).values_list("pk", "pending_since")
    for deployment_id, pending_since in due[: settings.EVALUATION_RESEND_BATCH]:
        with transaction.atomic():
            if not move_deployment(
                deployment_id,
                DeploymentStatus.PENDING_APPROVAL,
                DeploymentStatus.EXPIRED,
                evaluation_due_at=None,
            ):
                continue
            hours = (now - pending_since if pending_since else timedelta(0)).total_seconds() / 3600
            record_event(
                deployment_id,
                EventKind.EXPIRED,
                detail=f"Nobody approved or rejected it within {hours:.1f} hours.",
            )
            expired_deployment = Deployment.objects.select_related("environment__project").get(
                pk=deployment_id
            )
            audit.record(
                None, "deployment.expired", expired_deployment, after={"waited_hours": round(hours, 1)}
            )
            expired.append(deployment_id)
            metrics.EXPIRIES.inc()
    return expired
