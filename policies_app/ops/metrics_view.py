"""``/metrics``: the Prometheus exposition of django-prometheus's figures and ours (metrics.py), and of
figures read from the database at scrape time: deployments waiting (by status) and the age of the
oldest, and the outbox's lag (the oldest work that is due and not done: evaluations, webhook
deliveries, approval emails, the audit log's stream to a SIEM when it is on).

Who may read it: a scraper presenting ``Authorization: Bearer <METRICS_TOKEN>``, or one connecting from
``METRICS_ALLOWED_NETWORKS`` (the address as guards/client_address.py trusts it). With neither set,
nobody: the figures name no secret but tell an outsider how busy and how broken the platform is.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
from collections.abc import Iterator

from django.conf import settings
from django.db.models import Count, Min
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from policies_app.audit import stream_is_on
from policies_app.choices import DeliveryStatus, DeploymentStatus
from policies_app.guards.client_address import client_address
from policies_app.models import (
    ApprovalRequestEmail,
    AuditEntry,
    AuditStreamCursor,
    Deployment,
    WebhookDelivery,
)

WAITING = (DeploymentStatus.QUEUED, DeploymentStatus.EVALUATING, DeploymentStatus.PENDING_APPROVAL)


def refusal_to_scrape(request: HttpRequest) -> str | None:
    token = settings.METRICS_TOKEN
    given = request.META.get("HTTP_AUTHORIZATION", "")
    if token and given.startswith("Bearer ") and hmac.compare_digest(given[7:].encode(), token.encode()):
        return None
    networks = settings.METRICS_ALLOWED_NETWORKS
    if networks:
        try:
            address = ipaddress.ip_address(client_address(request))
        except ValueError:
            return "Metrics are readable only from METRICS_ALLOWED_NETWORKS or with METRICS_TOKEN."
        if any(address in ipaddress.ip_network(network, strict=False) for network in networks):
            return None
    if not token and not networks:
        return "Metrics are off: set METRICS_TOKEN or METRICS_ALLOWED_NETWORKS."
    return "Metrics are readable only with METRICS_TOKEN or from METRICS_ALLOWED_NETWORKS."


def _age(oldest) -> float:
    return max((timezone.now() - oldest).total_seconds(), 0.0) if oldest else 0.0


class DatabaseCollector:
    """What the database says now; one query per figure, at scrape time only."""

    def collect(self) -> Iterator[Metric]:
        waiting = GaugeMetricFamily(
            "policy_platform_deployments_waiting",
            "Deployments not yet decided, by status.",
            labels=["status"],
        )
        counts = dict(
            Deployment.objects.filter(status__in=WAITING)
            .order_by()
            .values_list("status")
            .annotate(n=Count("pk"))
            .values_list("status", "n")
        )
        for status in WAITING:
            waiting.add_metric([str(status)], counts.get(status, 0))
        yield waiting
        oldest_pending = Deployment.objects.filter(status=DeploymentStatus.PENDING_APPROVAL).aggregate(
            oldest=Min("pending_since")
        )["oldest"]
        yield GaugeMetricFamily(
            "policy_platform_oldest_pending_approval_age_seconds",
            "Age of the deployment waiting longest for approval (0: none waits).",
            value=_age(oldest_pending),
        )
        lag = GaugeMetricFamily(
            "policy_platform_outbox_lag_seconds",
            "Age of the oldest work due and not yet done, by kind (0: none); a sweep resends lost work.",
            labels=["work"],
        )
        evaluation = Deployment.objects.filter(evaluation_due_at__isnull=False).aggregate(
            oldest=Min("evaluation_due_at")
        )["oldest"]
        lag.add_metric(["evaluation"], _age(evaluation))
        webhook = WebhookDelivery.objects.filter(
            status=DeliveryStatus.PENDING, next_attempt_at__lte=timezone.now()
        ).aggregate(oldest=Min("next_attempt_at"))["oldest"]
        lag.add_metric(["webhook"], _age(webhook))
        email = ApprovalRequestEmail.objects.filter(sent_at__isnull=True, digest=False).aggregate(
            oldest=Min("created_at")
        )["oldest"]
        lag.add_metric(["approval_email"], _age(email))
        if stream_is_on():
            # The oldest entry not yet streamed to the target furthest behind.
            behind = AuditStreamCursor.objects.aggregate(least=Min("sequence"))["least"] or 0
            oldest = (
                AuditEntry.objects.filter(sequence=behind + 1).values_list("created_at", flat=True).first()
            )
            lag.add_metric(["audit_stream"], _age(oldest))
        yield lag


_database = CollectorRegistry(auto_describe=False)
_database.register(DatabaseCollector())


def exposition() -> bytes:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        processes = CollectorRegistry()
        multiprocess.MultiProcessCollector(processes)
        counted = generate_latest(processes)
    else:
        counted = generate_latest(REGISTRY)
    return counted + generate_latest(_database)


def metrics(request: HttpRequest) -> HttpResponse:
    refusal = refusal_to_scrape(request)
    if refusal is not None:
        return HttpResponse(refusal, status=403, content_type="text/plain")
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)
