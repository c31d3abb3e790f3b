"""A replay compares who must approve, not only decisions: a draft that keeps a deployment pending but
asks for other approvers changes it; and a policy attached nowhere yet says so, and is replayed over the
environments its author chooses."""

import json

import pytest

from policies_app.models import Deployment, Evaluation, PolicyReplay
from policies_app.policies import replay
from tests.builders import make_policy

pytestmark = pytest.mark.django_db

ONE = """# METADATA
# title: Production changes
# custom:
#   approvals: 1
package env0

pending contains "a production change" if true
"""
TWO_AND_SECURITY = """# METADATA
# custom:
#   requirements:
#     - approvals: 2
#     - team: security
package env0

pending contains "a production change" if true
"""


def recorded(policy, environment, deployer, count, requirements=True):
    deployments = Deployment.objects.bulk_create(
        Deployment(environment=environment, deployer=deployer, status="pending_approval")
        for _ in range(count)
    )
    outcome = {"policy_id": policy.pk, "policy": policy.name, "revision": 1, "decision": "pending"}
    if requirements:
        outcome["requirements"] = [{"approvals": 1}]
    Evaluation.objects.bulk_create(
        Evaluation(
            deployment=deployment,
            request_type="deploy",
            input_json=json.dumps({"deploymentRequest": {"type": "deploy"}}),
            decision="pending",
            messages={"deny": [], "pending": ["a production change"], "warn": [], "allow": []},
            outcomes=[outcome],
            engine="regorus",
        )
        for deployment in deployments
    )
    return deployments


def test_a_change_in_who_must_approve_counts_as_changed(world):
    policy = make_policy("production", ONE)
    world.platform.approval_policies.add(policy)
    recorded(policy, world.environment, world.bob, 3)
    recorded(policy, world.environment, world.bob, 2, requirements=False)  # recorded before they were kept
    same = replay.replay_revision(policy.active_revision, 100)
    assert (same["replayed"], same["changed_count"], same["requirements_changed_count"]) == (5, 0, 0)

    from policies_app.policies.authoring import revise_policy

    draft = revise_policy(policy, modules=[{"filename": "main.rego", "source": TWO_AND_SECURITY}], draft=True)
    result = replay.replay_revision(draft, 100)
    assert result["counts"]["before"] == result["counts"]["after"], "no decision changes"
    assert (result["changed_count"], result["requirements_changed_count"]) == (3, 3)
    entry = result["changed"][0]
    assert (entry["before"], entry["after"]) == ("pending", "pending")
    assert entry["before_requirements"] == ["1 approval"]
    assert entry["after_requirements"] == ["2 approvals", "security team"]
    assert entry["requirements_changed"] is True
    assert result["applies_nowhere"] is False


def test_a_policy_attached_nowhere_says_so_and_replays_over_chosen_environments(
    client, world, django_capture_on_commit_callbacks
):
    attached = make_policy("attached", ONE)
    world.platform.approval_policies.add(attached)
    recorded(attached, world.environment, world.bob, 4)
    loose = make_policy("not attached yet", TWO_AND_SECURITY)
    nowhere = replay.replay_revision(loose.active_revision, 100)
    assert (nowhere["replayed"], nowhere["applies_nowhere"]) == (0, True)

    client.force_login(world.admin)
    page = client.get(f"/policies/{loose.pk}/").content.decode()
    assert 'id="replay-applies-nowhere"' in page and "Choose environments to replay it over" in page
    assert f'<option value="{world.environment.pk}">{world.environment}</option>' in page
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/policies/{loose.pk}/replays/",
            {"revision": loose.active_revision.number, "limit": 100, "environments": [world.environment.pk]},
        )
    assert response.status_code == 302, response.content.decode()[:2000]
    done = PolicyReplay.objects.get(revision__policy=loose)
    assert done.environment_ids == [world.environment.pk]
    assert (done.result["replayed"], done.result["applies_nowhere"]) == (4, False)
    # The recorded deployments waited on another policy: this one, in force, would add its requirements.
    assert done.result["requirements_changed_count"] == 4
    shown = client.get(response["Location"]).content.decode()
    assert "the 1 environment chosen" in shown and "2 approvals; security team" in shown


def test_an_environment_the_author_cannot_see_is_refused(world, api):
    from policies_app.models import Environment, Project

    hidden = Environment.objects.create(
        name="hidden", project=Project.objects.create(name="Hidden"), template=world.template
    )
    from django.contrib.auth.models import Permission

    # alice writes policies (the model permission) but sees only the Platform projects.
    world.alice.user_permissions.add(Permission.objects.get(codename="change_approvalpolicy"))
    loose = make_policy("not attached yet", ONE)
    response = api(world.alice).post(
        f"/api/v1/policies/{loose.pk}/replay/",
        {"revision": 1, "environments": [hidden.pk]},
        format="json",
    )
    assert response.status_code == 400
    assert "does not exist" in json.dumps(response.json())
    assert not PolicyReplay.objects.exists()
