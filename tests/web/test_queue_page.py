"""The queue says why and how urgently each deployment waits: its pending reasons and the requirements
not met yet, the plan's counts by action (none that is zero), cost, age and expiry; what waits for me is
sorted by urgency (soonest expiry first); and a plan already opened can be approved from its row, with
the keyboard, through the same approval use case."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from policies_app.deployments.plan_summary import plan_counts
from policies_app.deployments.stored_inputs import store_plan
from policies_app.models import Approval, Deployment, Evaluation
from tests.builders import plan_with

pytestmark = pytest.mark.django_db


def waiting(world, *, expires_in=None, plan=None, **fields):
    now = timezone.now()
    deployment = Deployment.objects.create(
        environment=world.environment,
        deployer=world.bob,
        status="pending_approval",
        pending_since=now - timedelta(hours=3),
        expires_at=None if expires_in is None else now + expires_in,
        plan_document_id=store_plan(plan),
        plan_counts=plan_counts(plan),  # as trigger_deployment keeps them
        messages={"deny": [], "pending": ["a production change needs approvals"], "warn": [], "allow": []},
        **fields,
    )
    Evaluation.objects.create(
        deployment=deployment,
        request_type="deploy",
        input_json="null",
        decision="pending",
        outcomes=[
            {
                "policy_id": 1,
                "policy": "production",
                "decision": "pending",
                "requirements": [{"approvals": 2}, {"approvals": 1, "team": "security team"}],
            }
        ],
    )
    return deployment


def test_each_row_says_why_it_waits_what_the_plan_does_and_how_urgent_it_is(client, world):
    later = waiting(world, expires_in=timedelta(days=2))
    soon = waiting(
        world,
        expires_in=timedelta(hours=1),
        plan=plan_with(("aws_db_instance.main", ["delete"]), ("aws_s3_bucket.logs", ["create"])),
        total_monthly_cost=120.5,
        monthly_cost_diff=20,
    )
    never = waiting(world)
    Approval.objects.create(deployment=soon, user=world.sam, decision="approve")
    client.force_login(world.alice)
    response = client.get(reverse("web:deployment-queue"))
    rows = response.context["rows"]
    assert [row.deployment.pk for row in rows] == [soon.pk, later.pk, never.pk], "soonest expiry first"
    first = rows[0]
    assert first.reasons == ["a production change needs approvals"]
    # sam (security team) approved: one of two approvals, the security team's done.
    assert first.unmet == ["1/2 approvals ✗"]
    assert rows[1].unmet == ["0/2 approvals ✗", "security team 0/1 ✗"]
    assert first.count_rows == [("delete", 1), ("create", 1)], "no zero counts"
    page = response.content.decode()
    assert '<span class="verb-delete">1</span> delete' in page
    assert "120.50" in page and "+20.00" in page
    assert "3\xa0hours" in page or "3 hours" in page
    assert "never" in page
    assert "security team 0/1 ✗" in page


def test_the_urgency_sort_can_be_reversed_and_other_views_stay_newest_first(client, world):
    soon = waiting(world, expires_in=timedelta(hours=1))
    later = waiting(world, expires_in=timedelta(days=1))
    client.force_login(world.alice)
    reversed_rows = client.get(reverse("web:deployment-queue"), {"sort": "-expires"}).context["rows"]
    assert [row.deployment.pk for row in reversed_rows] == [later.pk, soon.pk]
    all_rows = client.get(reverse("web:deployment-queue"), {"view": "all"}).context["rows"]
    assert [row.deployment.pk for row in all_rows] == [later.pk, soon.pk]


def test_a_plan_already_opened_is_approved_from_its_row(client, world):
    opened = waiting(world, expires_in=timedelta(hours=1))
    unseen = waiting(world, expires_in=timedelta(hours=2))
    destroy = waiting(world, expires_in=timedelta(hours=3), type="destroy")
    client.force_login(world.alice)
    queue = client.get(reverse("web:deployment-queue")).content.decode()
    assert 'class="quick-approve"' not in queue, "nothing opened yet"
    client.get(reverse("web:deployment-detail", args=[opened.pk]))
    client.get(reverse("web:deployment-detail", args=[destroy.pk]))
    response = client.get(reverse("web:deployment-queue"))
    assert response.context["quick_approve"] == {opened.pk}, "not the unseen one, not a destroy"
    page = response.content.decode()
    decide = reverse("web:deployment-decide", args=[opened.pk])
    assert f'action="{decide}" class="quick-approve"' in page
    assert 'accesskey="a" aria-label="Approve deployment #' in page
    answer = client.post(decide, {"decision": "approve", "back": "queue"})
    assert (
        answer.status_code == 302 and answer["Location"] == f"{reverse('web:deployment-queue')}?view=waiting"
    )
    assert Approval.objects.filter(deployment=opened, user=world.alice, decision="approve").exists()
    assert unseen.approvals.count() == 0
    # Another user's browser does not inherit alice's opened plans.
    client.force_login(world.sam)
    assert client.get(reverse("web:deployment-queue")).context["quick_approve"] == set()
