"""Every list endpoint and page costs a constant number of queries as rows grow, within a budget kept in
tests/http_api/query_counts.json (as NetBox keeps its own). A change that adds a query per row fails here; a
change that adds a fixed query must raise the budget on purpose."""

import json
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from policies_app.accounts import tokens
from policies_app.models import (
    Approval,
    Deployment,
    DeploymentEvent,
    Environment,
    Evaluation,
    PolicyReplay,
    PolicyRepository,
    Project,
    ProjectMembership,
    Team,
    Template,
    Webhook,
    WebhookDelivery,
)
from policies_app.notifications import webhooks
from policies_app.policies.authoring import revise_policy
from tests.builders import make_policy, make_user

# Webhooks point at loopback (port 9, discard): the egress guard is told to allow exactly 127.0.0.1.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]

BUDGETS = json.loads((Path(__file__).parent / "query_counts.json").read_text())
PENDING = 'package env0\n\npending contains "wait" if true\n'


def watched(world) -> tuple[Deployment, Webhook]:
    """The deployment and the webhook whose own pages are counted (their evaluations, approvals,
    events and deliveries grow)."""
    deployment = Deployment.objects.filter(
        environment=world.environment
    ).first() or Deployment.objects.create(
        environment=world.environment, deployer=world.bob, status="pending_approval", decision="pending"
    )
    webhook = Webhook.objects.filter(project=world.payments).first() or webhooks.create_webhook(
        world.admin, world.payments, name="chat", url="http://127.0.0.1:9/"
    )
    return deployment, webhook


def grow(world, rows: int, start: int) -> None:
    """Add ``rows`` of everything: nested projects with policies, environments, deployments with
    evaluations and approvals, teams and templates, members, webhook deliveries, tokens, users."""
    deployment, webhook = watched(world)
    for number in range(start, start + rows):
        approver = make_user(f"approver{number}")
        ProjectMembership.objects.create(project=world.payments_eu, user=approver, role="approver")
        Approval.objects.create(deployment=deployment, user=approver, decision="approve", comment="ok")
        Evaluation.objects.create(
            deployment=deployment,
            request_type="deployResume",
            input_json="{}",
            decision="pending",
            engine="x",
        )
        DeploymentEvent.objects.create(deployment=deployment, kind="approved", actor=approver)
        WebhookDelivery.objects.create(webhook=webhook, deployment=deployment, event="ping", body="{}")
        tokens.create_token(world.alice, f"token {number}")
        parent = Project.objects.create(name=f"p{number}", parent=world.payments)
        child = Project.objects.create(name=f"c{number}", parent=parent)
        policy = make_policy(f"policy {number}", PENDING)
        parent.approval_policies.add(policy)
        template = Template.objects.create(name=f"t{number}", type="terraform")
        template.approval_policies.add(policy)
        team = Team.objects.create(name=f"team {number}")
        team.members.add(world.alice)
        ProjectMembership.objects.create(project=child, team=team, role="viewer")
        environment = Environment.objects.create(name=f"e{number}", project=child, template=template)
        deployment = Deployment.objects.create(
            environment=environment, deployer=world.bob, status="pending_approval", decision="pending"
        )
        evaluation = Evaluation.objects.create(
            deployment=deployment,
            request_type="deploy",
            input_json="{}",
            decision="pending",
            engine="regorus",
        )
        evaluation.policy_revisions.set([policy.latest_revision])
        Approval.objects.create(deployment=deployment, user=world.sam, decision="approve")


def count_queries(fetch) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = fetch()
    assert response.status_code == 200, response.content[:500]
    return len(queries)


def api_get(api, user, path):
    client = api(user)  # creates the user's token outside the counted requests
    return lambda: client.get(path)


def page_get(client, user, path):
    client.force_login(user)
    return lambda: client.get(path)


def policy_with_history(world) -> tuple[int, int]:
    """A policy that applies to every environment grow() adds, with two revisions and a replay."""
    policy = make_policy("budget policy", PENDING)
    revise_policy(policy, data={"x": 1})
    world.platform.approval_policies.add(policy)
    replay = PolicyReplay.objects.create(revision=policy.latest_revision, limit=5, status="done", result={})
    PolicyRepository.objects.create(name="policies", url="https://example.com/policies.git")
    return policy.pk, replay.pk


# name -> (api or page, path, who asks: Alice unless said)
ENDPOINTS = {
    "api projects": ("api", "/api/v1/projects/"),
    "api environments": ("api", "/api/v1/environments/"),
    "api deployments": ("api", "/api/v1/deployments/"),
    "api pending deployments": ("api", "/api/v1/deployments/?status=pending_approval"),
    "api policies": ("api", "/api/v1/policies/"),
    "api templates": ("api", "/api/v1/templates/"),
    "api teams": ("api", "/api/v1/teams/"),
    "api environment deployments": ("api", "/api/v1/environments/{environment}/deployments/"),
    "api effective policies": ("api", "/api/v1/environments/{environment}/effective-policies/"),
    "page queue": ("page", "/?status="),
    "page projects": ("page", "/projects/"),
    "page policies": ("page", "/policies/"),
    "page environment": ("page", "/environments/{environment}/"),
    "page policy": ("page", "/policies/{policy}/"),
    "page policy revision": ("page", "/policies/{policy}/revisions/1/"),
    "page policy diff": ("page", "/policies/{policy}/diff/?old=1&new=2"),
    "page policy edit": ("page", "/policies/{policy}/edit/", "admin"),
    "page policy replay": ("page", "/policies/{policy}/replays/{replay}/", "admin"),
    "page policy catalog": ("page", "/policies/catalog/"),
    "api policy replays": ("api", "/api/v1/policies/{policy}/replays/", "admin"),
    "api policy repositories": ("api", "/api/v1/policy-repositories/", "admin"),
    "api deployments waiting for me": ("api", "/api/v1/deployments/?view=waiting&search=prod"),
    "api deployment": ("api", "/api/v1/deployments/{deployment}/"),
    "api webhooks": ("api", "/api/v1/webhooks/", "admin"),
    "api webhook deliveries": ("api", "/api/v1/webhooks/{webhook}/deliveries/", "admin"),
    "api users": ("api", "/api/v1/users/", "admin"),
    "api tokens": ("api", "/api/v1/tokens/"),
    "api audit": ("api", "/api/v1/audit/", "admin"),
    "page queue waiting for me": ("page", "/"),
    "page queue all, searched and sorted": (
        "page",
        "/?view=all&q=e&sort=environment&status=pending_approval",
    ),
    "page deployment": ("page", "/deployments/{deployment}/"),
    "page deployment live": ("page", "/deployments/{deployment}/live/"),
    "page project": ("page", "/projects/{project}/", "admin"),
    "page templates": ("page", "/templates/", "admin"),
    "page template": ("page", "/templates/{template}/", "admin"),
    "page webhook": ("page", "/webhooks/{webhook}/", "admin"),
    "page users": ("page", "/users/", "admin"),
    "page account": ("page", "/account/"),
    "page audit log": ("page", "/audit/?action=policy.", "admin"),
}


def test_every_endpoint_has_a_budget():
    assert set(BUDGETS) == set(ENDPOINTS)


@pytest.mark.parametrize("name", sorted(ENDPOINTS))
def test_queries_do_not_grow_with_rows_and_stay_within_budget(world, api, client, name):
    kind, path, *who = ENDPOINTS[name]
    user = getattr(world, who[0] if who else "alice")
    deployment, webhook = watched(world)
    policy, replay = policy_with_history(world) if "{policy}" in path or "policy" in name else (None, None)
    path = path.format(
        environment=world.environment.pk,
        deployment=deployment.pk,
        webhook=webhook.pk,
        project=world.payments.pk,
        template=world.template.pk,
        policy=policy,
        replay=replay,
    )
    fetch = api_get(api, user, path) if kind == "api" else page_get(client, user, path)
    grow(world, 2, 0)
    few = count_queries(fetch)
    grow(world, 6, 2)
    many = count_queries(fetch)
    assert many == few, f"{name}: {few} queries with few rows, {many} with more"
    assert many <= BUDGETS[name], f"{name}: {many} queries, budget {BUDGETS[name]}"
