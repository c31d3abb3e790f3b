"""Every list endpoint and page costs an exact, pinned number of queries, the same with few rows and with
many (as NetBox pins its own): tests/http_api/query_counts.json holds the counts. A change that adds a query
per row fails here, and so does one that adds or saves a fixed query: the failure prints the SQL executed.
Every list operation of the OpenAPI schema must be counted here, so a new list endpoint needs its count.

After a change that means to alter a count, rewrite the file with the measured counts:

    UPDATE_QUERY_COUNTS=1 .venv/bin/python -m pytest -p no:cacheprovider tests/http_api/test_query_counts.py

The counts are the same on SQLite and PostgreSQL; an endpoint whose count genuinely differs keeps one per
database vendor, {"sqlite": n, "postgresql": m}, which the update mode then rewrites for the vendor it ran on.
"""

import json
import os
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator

from policies_app.accounts import service_accounts, tokens
from policies_app.models import (
    Approval,
    ApprovalPolicy,
    Deployment,
    DeploymentComment,
    DeploymentEvent,
    Environment,
    Evaluation,
    PolicyReplay,
    PolicyRepository,
    Project,
    ProjectMembership,
    ServiceAccount,
    Team,
    Template,
    Waiver,
    Webhook,
    WebhookDelivery,
)
from policies_app.notifications import webhooks
from policies_app.policies.authoring import revise_policy
from tests.builders import make_policy, make_user

# Webhooks point at loopback (port 9, discard): the egress guard is told to allow exactly 127.0.0.1.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]

COUNTS_FILE = Path(__file__).parent / "query_counts.json"
UPDATING = os.environ.get("UPDATE_QUERY_COUNTS", "") not in ("", "0")
PENDING = 'package env0\n\npending contains "wait" if true\n'


def counted_service_account(world) -> ServiceAccount:
    """The service account whose tokens are counted (its second token is made as the rows grow)."""
    return ServiceAccount.objects.filter(name="counted").first() or service_accounts.create_service_account(
        world.admin, world.payments, "counted"
    )


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
    evaluations, approvals and comments, teams and templates, members, webhook deliveries, tokens, users, waivers, and
    revisions of the policy whose pages are counted."""
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
        DeploymentComment.objects.create(deployment=deployment, author=approver, body=f"comment {number}")
        WebhookDelivery.objects.create(webhook=webhook, deployment=deployment, event="ping", body="{}")
        tokens.create_token(world.alice, f"token {number}")
        account = service_accounts.create_service_account(world.admin, world.payments, f"machine-{number}")
        service_accounts.create_account_token(world.admin, account)
        counted = counted_service_account(world)
        if service_accounts.live_tokens(counted).count() < service_accounts.MAX_LIVE_TOKENS:
            service_accounts.create_account_token(world.admin, counted)
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
        now = timezone.now()
        for scope in ({"environment": environment}, {"project": parent}):
            Waiver.objects.create(
                policy=policy,
                granted_by=approver,
                reason=f"incident {number}",
                starts_at=now,
                expires_at=now + timedelta(hours=1),
                revoked_at=now,
                revoked_by=world.sam,
                **scope,
            )
        for counted in ApprovalPolicy.objects.filter(name="budget policy"):
            revise_policy(counted, data={"x": number + 2})


def run_counting_queries(fetch) -> list[str]:
    """The SQL statements one request executes."""
    with CaptureQueriesContext(connection) as queries:
        response = fetch()
    assert response.status_code == 200, response.content[:500]
    return [query["sql"] for query in queries.captured_queries]


def listed(statements: list[str]) -> str:
    return "\n".join(f"  {number}. {sql}" for number, sql in enumerate(statements, 1))


def read_counts() -> dict[str, int | dict[str, int]]:
    return json.loads(COUNTS_FILE.read_text())


def pinned_count(name: str) -> int | None:
    """The count pinned for ``name`` on this database (None when there is none)."""
    entry = read_counts().get(name)
    return entry.get(connection.vendor) if isinstance(entry, dict) else entry


def pin_count(name: str, count: int) -> None:
    """Update mode: write the measured count (for this vendor only where the entry is kept per vendor)."""
    counts = read_counts()
    entry = counts.get(name)
    counts[name] = {**entry, connection.vendor: count} if isinstance(entry, dict) else count
    write_counts(counts)


def write_counts(counts: dict) -> None:
    COUNTS_FILE.write_text(json.dumps(dict(sorted(counts.items())), indent=2) + "\n")


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
    "api group mappings": ("api", "/api/v1/group-mappings/", "admin"),
    "page teams": ("page", "/teams/"),
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
    "page policy repositories": ("page", "/policies/repositories/", "admin"),
    "page environment edit": ("page", "/environments/{environment}/edit/", "admin"),
    "api policy replays": ("api", "/api/v1/policies/{policy}/replays/", "admin"),
    "api policy revisions": ("api", "/api/v1/policies/{policy}/revisions/"),
    "api policy repositories": ("api", "/api/v1/policy-repositories/", "admin"),
    "api deployments waiting for me": ("api", "/api/v1/deployments/?view=waiting&search=prod"),
    "api deployment": ("api", "/api/v1/deployments/{deployment}/"),
    "api deployment comments": ("api", "/api/v1/deployments/{deployment}/comments/"),
    "api webhooks": ("api", "/api/v1/webhooks/", "admin"),
    "api webhook deliveries": ("api", "/api/v1/webhooks/{webhook}/deliveries/", "admin"),
    "api users": ("api", "/api/v1/users/", "admin"),
    "api tokens": ("api", "/api/v1/tokens/"),
    "api service accounts": ("api", "/api/v1/service-accounts/", "admin"),
    "api service account tokens": ("api", "/api/v1/service-accounts/{service_account}/tokens/", "admin"),
    "api audit": ("api", "/api/v1/audit/", "admin"),
    "api waivers": ("api", "/api/v1/waivers/"),
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


def templated(path: str) -> str:
    """A path with its query left out and each parameter written {id}, to compare with the schema's."""
    return re.sub(r"\{[a-z_]+\}", "{id}", path.split("?")[0])


def list_operations_of_the_schema() -> set[str]:
    """The path of every list operation of /api/schema/ (drf-spectacular names them ..._list)."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return {
        path
        for path, operations in schema["paths"].items()
        if operations.get("get", {}).get("operationId", "").endswith("_list")
    }


def test_every_list_operation_of_the_schema_is_counted():
    counted = {templated(path) for kind, path, *_ in ENDPOINTS.values() if kind == "api"}
    uncounted = {templated(path) for path in list_operations_of_the_schema()} - counted
    assert uncounted == set(), f"list endpoints without a pinned query count: {sorted(uncounted)}"


def test_every_endpoint_has_a_pinned_count_and_every_count_an_endpoint():
    if UPDATING:
        counts = read_counts()
        write_counts({name: count for name, count in counts.items() if name in ENDPOINTS})
    counts = read_counts()
    assert set(counts) <= set(ENDPOINTS), (
        f"counts of endpoints no longer measured: {set(counts) - set(ENDPOINTS)}"
    )
    if not UPDATING:
        assert {name for name in ENDPOINTS if pinned_count(name) is None} == set(), (
            f"endpoints without a count for {connection.vendor}: run with UPDATE_QUERY_COUNTS=1"
        )


def test_a_count_kept_per_vendor_is_read_and_rewritten_for_this_database_only(tmp_path, monkeypatch):
    counts = tmp_path / "query_counts.json"
    other = "postgresql" if connection.vendor != "postgresql" else "sqlite"
    counts.write_text(json.dumps({"same": 3, "differs": {connection.vendor: 4, other: 5}}))
    monkeypatch.setattr(f"{__name__}.COUNTS_FILE", counts)
    assert (pinned_count("same"), pinned_count("differs"), pinned_count("new")) == (3, 4, None)
    pin_count("differs", 6)
    pin_count("same", 7)
    pin_count("new", 1)
    assert json.loads(counts.read_text()) == {
        "differs": {connection.vendor: 6, other: 5},
        "new": 1,
        "same": 7,
    }


@pytest.mark.parametrize("name", sorted(ENDPOINTS))
def test_each_endpoint_executes_its_pinned_number_of_queries_however_many_rows(world, api, client, name):
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
        service_account=counted_service_account(world).pk,
    )
    fetch = api_get(api, user, path) if kind == "api" else page_get(client, user, path)
    grow(world, 2, 0)
    few = run_counting_queries(fetch)
    grow(world, 6, 2)
    many = run_counting_queries(fetch)
    assert len(many) == len(few), (
        f"{name}: {len(few)} queries with few rows, {len(many)} with more:\n{listed(many)}"
    )
    if UPDATING:
        pin_count(name, len(many))
        return
    expected = pinned_count(name)
    assert len(many) == expected, (
        f"{name}: {len(many)} queries on {connection.vendor}, {expected} pinned in {COUNTS_FILE.name} "
        f"(UPDATE_QUERY_COUNTS=1 rewrites it if the change is meant). The queries:\n{listed(many)}"
    )
