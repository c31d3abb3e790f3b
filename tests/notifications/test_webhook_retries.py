"""Celery retries a failed webhook delivery with exponential backoff: a real worker fed through a real
Redis, posting to a real receiver that fails twice before it accepts."""

import subprocess
import sys

import pytest

from policies_app.models import WebhookDelivery
from policies_app.notifications import webhooks
from tests.builders import make_policy
from tests.processes import ROOT, RedisServer, celery_worker, platform_environment, wait_until
from tests.receiver import Receiver

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("loopback_allowed")]

PENDING = 'package env0\n\npending contains "wait" if true\n'


def test_a_worker_retries_a_failed_delivery_with_backoff_until_the_receiver_accepts(world, tmp_path):
    world.platform.approval_policies.add(make_policy("wait", PENDING))
    receiver = Receiver(answers=[500, 502])
    hook = webhooks.create_webhook(
        world.admin, world.payments, name="h", url=receiver.url, statuses=["pending_approval"]
    )
    redis = RedisServer(tmp_path)
    redis.start()
    fast = {
        "WEBHOOK_RETRY_BASE_SECONDS": "0.5",
        "NOTIFICATION_SWEEP_INTERVAL_SECONDS": "3600",
        "EGRESS_ALLOWED_NETWORKS": "127.0.0.1/32",  # the receiver's address; nothing else internal
    }
    try:
        with celery_worker(tmp_path, redis.url, **fast):
            # Triggered from a process configured like production: its tasks go through Redis.
            trigger = (
                "from policies_app.deployments import lifecycle; from policies_app.models import Environment; "
                "from django.contrib.auth.models import User; "
                f"lifecycle.trigger_deployment(Environment.objects.get(pk={world.environment.pk}), "
                "User.objects.get(username='bob'))"
            )
            published = subprocess.run(
                [sys.executable, "manage.py", "shell", "-c", trigger],
                cwd=ROOT,
                env=platform_environment(tmp_path, CELERY_BROKER_URL=redis.url, **fast),
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert published.returncode == 0, published.stderr
            wait_until(
                lambda: WebhookDelivery.objects.filter(webhook=hook, status="delivered").exists(),
                60,
                what="the delivery succeeding after two failures",
            )
    finally:
        redis.stop()
        receiver.close()
    delivery = WebhookDelivery.objects.get(webhook=hook)
    assert (delivery.attempts, delivery.response_code) == (3, 200)
    assert len(receiver.received) == 3
    gaps = [
        (later - earlier)
        for earlier, later in zip(
            [r.at for r in receiver.received], [r.at for r in receiver.received][1:], strict=False
        )
    ]
    assert gaps[0] >= 0.45 and gaps[1] >= 0.95, f"backoff doubles: {gaps}"
