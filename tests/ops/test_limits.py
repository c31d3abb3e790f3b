"""Policy output and dry runs are bounded (issue 6, findings 9 and 10)."""

import json
import threading

import pytest
from django.db import connections
from django.test import override_settings

from tests.builders import make_policy

pytestmark = pytest.mark.django_db

HUGE_DENY = """package env0

deny contains concat("", [s | some _ in numbers.range(1, 100000); s := "0123456789"]) if true

deny contains sprintf("reason %d", [i]) if some i in numbers.range(1, 500)
"""
# Several seconds: longer than a dry run waits for the pool's worker (supervisor._NAMED_POOL_WAIT_S).
SLOW = """package env0

pending contains sprintf("%d", [count({x | some x in numbers.range(1, 10000000); x % 7 == 0})]) if true
"""


@override_settings(POLICY_MESSAGE_MAX_LENGTH=1000, POLICY_MESSAGE_MAX_COUNT=20)
def test_a_policy_that_denies_with_a_megabyte_message_is_stored_cut_with_a_marker(
    world, api, django_capture_on_commit_callbacks
):
    world.platform.approval_policies.add(make_policy("huge", HUGE_DENY))
    with django_capture_on_commit_callbacks(execute=True):
        created = api(world.bob).post(
            f"/api/v1/environments/{world.environment.pk}/deployments/", {}, format="json"
        )
    response = api(world.bob).get(f"/api/v1/deployments/{created.json()['id']}/")
    deployment = response.json()
    assert deployment["status"] == "denied"  # cutting never changes a decision
    denies = deployment["messages"]["deny"]
    assert len(denies) <= 21
    assert any("more messages" in message for message in denies)
    assert any("truncated" in message for message in denies)
    assert max(len(message) for message in denies) < 1100
    assert len(response.content) < 200_000


@pytest.mark.django_db(transaction=True)
@override_settings(POLICY_EVALUATION_TIMEOUT_SECONDS=60)
def test_a_dry_run_while_the_dry_run_pool_is_busy_answers_429(world, api, monkeypatch):
    from rest_framework.throttling import SimpleRateThrottle

    monkeypatch.setattr(
        SimpleRateThrottle, "THROTTLE_RATES", {**SimpleRateThrottle.THROTTLE_RATES, "dry_run": None}
    )
    slow = make_policy("slow", SLOW)
    quick = make_policy("quick", 'package env0\n\nallow contains "ok" if true\n')
    world.platform.approval_policies.add(slow, quick)
    occupied: dict = {}

    def occupy() -> None:
        # Retried until it holds the pool's only worker (a probe below may hold it for a moment).
        try:
            for _ in range(100):
                response = api(world.alice).post(
                    f"/api/v1/policies/{slow.pk}/evaluate/", {"input": {}}, format="json"
                )
                if response.status_code != 429:
                    occupied["response"] = response
                    return
        finally:
            connections.close_all()  # this thread's own connection, or the test database outlives the run

    thread = threading.Thread(target=occupy)
    thread.start()
    try:
        for _ in range(200):
            probe = api(world.sam).post(
                f"/api/v1/policies/{quick.pk}/evaluate/", {"input": {}}, format="json"
            )
            if probe.status_code == 429 or not thread.is_alive():
                break
        assert probe.status_code == 429
        assert probe.json()["code"] == "busy"
    finally:
        thread.join(60)
    assert occupied["response"].status_code == 200
    assert json.loads(occupied["response"].content)["decision"] == "pending"


def test_dry_runs_are_throttled_per_user(world, api, monkeypatch):
    from rest_framework.throttling import SimpleRateThrottle

    # DRF reads the rates once, at import; the test lowers the dry-run rate for its own duration.
    monkeypatch.setattr(
        SimpleRateThrottle, "THROTTLE_RATES", {**SimpleRateThrottle.THROTTLE_RATES, "dry_run": "3/minute"}
    )
    quick = make_policy("quick", 'package env0\n\nallow contains "ok" if true\n')
    world.platform.approval_policies.add(quick)
    url = f"/api/v1/policies/{quick.pk}/evaluate/"
    codes = [api(world.alice).post(url, {"input": {}}, format="json").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    # Another user has their own allowance.
    assert api(world.sam).post(url, {"input": {}}, format="json").status_code == 200
