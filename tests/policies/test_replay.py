"""Replaying a draft over a few hundred recorded deployments, with a known number of decisions that
would change; then publishing it."""

import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from policies_app.models import Deployment, Environment, Evaluation, PolicyReplay, Project
from policies_app.policies import replay
from tests.builders import make_policy

pytestmark = pytest.mark.django_db

ACTIVE = """package env0

import rego.v1

deny contains "over 200" if input.costEstimation.monthlyCostDiff > 200

allow contains "fine" if input.costEstimation.monthlyCostDiff <= 200
"""
DRAFT = """package env0

import rego.v1

diff := input.costEstimation.monthlyCostDiff

deny contains sprintf("rises by %v, over 150", [diff]) if diff > 150

pending contains sprintf("rises by %v: someone should look", [diff]) if {
	diff > 100
	diff <= 150
}

allow contains "fine" if diff <= 100
"""


def combine(*decisions):
    for decision in ("error", "deny", "pending", "warn", "allow"):
        if decision in decisions:
            return decision
    return "pending"


def recorded(policy, environment, deployer, diffs, other_policy_pending=lambda i: False):
    """Deployments whose latest evaluation recorded what the active revision and another policy said."""
    deployments = Deployment.objects.bulk_create(
        Deployment(environment=environment, deployer=deployer, status="approved") for _ in diffs
    )
    evaluations = []
    for index, (deployment, diff) in enumerate(zip(deployments, diffs, strict=True)):
        mine = "deny" if diff > 200 else "allow"
        other = "pending" if other_policy_pending(index) else "allow"
        evaluations.append(
            Evaluation(
                deployment=deployment,
                request_type="deploy",
                input_json=json.dumps({"costEstimation": {"monthlyCostDiff": diff}}),
                decision=combine(mine, other),
                messages={
                    "deny": ["over 200"] if mine == "deny" else [],
                    "pending": [],
                    "warn": [],
                    "allow": [],
                },
                outcomes=[
                    {"policy_id": policy.pk, "policy": policy.name, "revision": 1, "decision": mine},
                    {
                        "policy_id": None,
                        "policy": "other",
                        "revision": 1,
                        "decision": other,
                        "pending": ["look"] if other == "pending" else [],
                    },
                ],
                engine="regorus",
            )
        )
    Evaluation.objects.bulk_create(evaluations)
    return deployments


@pytest.fixture
def history(world):
    """300 deployments of an environment the policy applies to, 40 of one it does not."""
    policy = make_policy("cost", ACTIVE)
    world.platform.approval_policies.add(policy)
    elsewhere = Project.objects.create(name="Elsewhere")
    other_environment = Environment.objects.create(name="other", project=elsewhere, template=world.template)
    recorded(policy, other_environment, world.bob, [175] * 40)
    # An older evaluation of the first deployments said something else: only the latest one counts.
    first = recorded(
        policy, world.environment, world.bob, list(range(300)), other_policy_pending=lambda i: i % 10 == 0
    )
    Evaluation.objects.bulk_create(
        Evaluation(
            deployment=deployment,
            request_type="deploy",
            input_json=json.dumps({"costEstimation": {"monthlyCostDiff": 999}}),
            decision="deny",
            engine="regorus",
        )
        for deployment in first[:10]
    )
    Evaluation.objects.filter(input_json__contains="999").update(
        created_at=timezone.now() - timezone.timedelta(days=1)
    )
    return policy


def test_a_draft_replayed_over_300_deployments_changes_95_decisions(
    world, api, history, django_capture_on_commit_callbacks
):
    client = api(world.admin)
    with django_capture_on_commit_callbacks(execute=True):
        started = client.post(
            f"/api/v1/policies/{history.pk}/replay/",
            {"modules": [{"filename": "main.rego", "source": DRAFT}], "limit": 500},
            format="json",
        )
    assert started.status_code == 201, started.content
    shown = client.get(started["Location"]).json()
    result = shown["result"]
    assert (shown["status"], shown["replayed"], shown["total"], shown["draft"]) == ("done", 300, 300, True)
    assert (result["replayed"], result["changed_count"]) == (300, 95)
    assert result["counts"]["before"] == {"error": 0, "deny": 99, "pending": 21, "warn": 0, "allow": 180}
    assert result["counts"]["after"] == {"error": 0, "deny": 149, "pending": 61, "warn": 0, "allow": 90}
    one = next(
        entry
        for entry in result["changed"]
        if entry["after_policy"]["messages"]["deny"] == ["rises by 161, over 150"]
    )
    assert (one["before"], one["after"], one["before_policy"]) == (
        "allow",
        "deny",
        {"revision": 1, "decision": "allow"},
    )
    assert one["after_messages"]["pending"] == [], "the other policy said allow for this one"
    history.refresh_from_db()
    assert history.active_revision.number == 1, "replaying publishes nothing"


def test_the_limit_takes_the_most_recent_deployments(world, history):
    draft = history.revisions.get(number=1)
    result = replay.replay_revision(draft, 100)
    assert (result["replayed"], result["changed_count"]) == (100, 0)  # the active revision against itself
    from policies_app.policies.authoring import revise_policy

    draft = revise_policy(history, modules=[{"filename": "main.rego", "source": DRAFT}], draft=True)
    result = replay.replay_revision(draft, 100)
    assert [entry["after_policy"]["messages"]["deny"] for entry in result["changed"]] == [
        ["rises by 200, over 150"]
    ]


def test_a_replay_reports_its_progress(world, history):
    draft = history.revisions.get(number=1)
    seen = []
    replay.replay_revision(draft, 60, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(20, 60), (40, 60), (60, 60)]


def test_a_replay_task_delivered_twice_runs_once(world, history):
    queued = PolicyReplay.objects.create(revision=history.revisions.get(number=1), limit=10)
    replay.run_replay(queued.pk)
    finished_at = PolicyReplay.objects.get(pk=queued.pk).finished_at
    replay.run_replay(queued.pk)
    assert PolicyReplay.objects.get(pk=queued.pk).finished_at == finished_at


def test_publishing_the_replayed_draft_makes_it_the_active_revision(
    world, api, history, django_capture_on_commit_callbacks
):
    client = api(world.admin)
    with django_capture_on_commit_callbacks(execute=True):
        started = client.post(
            f"/api/v1/policies/{history.pk}/replay/",
            {"modules": [{"filename": "main.rego", "source": DRAFT}], "limit": 10},
            format="json",
        ).json()
    published = client.post(
        f"/api/v1/policies/{history.pk}/publish/", {"revision": started["revision"]}, format="json"
    )
    assert published.status_code == 200
    assert published.json()["active_revision"] == started["revision"] == 2


def test_the_replay_page_lists_the_changed_deployments(
    client, world, history, django_capture_on_commit_callbacks
):
    client.force_login(world.admin)
    from policies_app.policies.authoring import revise_policy

    draft = revise_policy(history, modules=[{"filename": "main.rego", "source": DRAFT}], draft=True)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/policies/{history.pk}/replays/", {"revision": draft.number, "limit": 500})
    page = client.get(response["Location"])
    assert page.status_code == 200
    html = page.content.decode()
    assert "<strong>95</strong> of 300 deployments would be decided differently" in html
    assert "rises by 161, over 150" in html and "Publish r2" in html


def test_a_replay_is_refused_to_non_authors(world, api, history):
    response = api(world.alice).post(f"/api/v1/policies/{history.pk}/replay/", {"revision": 1}, format="json")
    assert response.status_code == 403


def test_a_replay_whose_task_was_lost_is_sent_again_by_the_periodic_sweep_and_runs(
    world, history, django_capture_on_commit_callbacks
):
    from policies_app.policies.authoring import revise_policy

    draft = revise_policy(history, modules=[{"filename": "main.rego", "source": DRAFT}], draft=True)
    with django_capture_on_commit_callbacks(execute=False) as dropped:  # the wake-up never leaves
        started = replay.start_replay(history, user=world.admin, revision_number=draft.number, limit=30)
    assert len(dropped) == 1
    with django_capture_on_commit_callbacks(execute=True):
        call_command("run_periodic", "--once")
    assert PolicyReplay.objects.get(pk=started.pk).status == "queued", "resent only once it is late"

    PolicyReplay.objects.filter(pk=started.pk).update(enqueued_at=timezone.now() - timedelta(minutes=5))
    with django_capture_on_commit_callbacks(execute=True):
        call_command("run_periodic", "--once")
    done = PolicyReplay.objects.get(pk=started.pk)
    assert (done.status, done.replayed) == ("done", 30)
    assert done.enqueued_at > timezone.now() - timedelta(minutes=1)


def test_a_replay_started_or_finished_is_never_resent(world, history):
    long_ago = timezone.now() - timedelta(minutes=5)
    active = history.revisions.get(number=1)
    for status in ("running", "done", "failed"):
        PolicyReplay.objects.create(revision=active, limit=10, status=status, enqueued_at=long_ago)
    lost = PolicyReplay.objects.create(revision=active, limit=10, enqueued_at=long_ago)
    PolicyReplay.objects.create(revision=active, limit=10)  # sent just now
    assert replay.resend_lost_replays() == [lost.pk]
