"""Every route of the OpenAPI schema × every persona: allowed, forbidden or not found, as expected.

The routes come from the schema itself, so a new route without expectations here fails
``test_every_route_of_the_schema_has_expectations``. Personas, all on the world of tests/builders.py:
  orgadmin  superuser (organisation admin)        auditor   organisation auditor (reads everything)
  padmin    admin of Payments (above the env)     approver  Alice, approver on Platform
  deployer  Bob, deployer on Platform             viewer    Vera, viewer on Platform
  outsider  Charlie, no role anywhere
Objects: the environment "prod" (Platform / Payments / Payments EU), a deployment of it pending approval
(triggered by Bob), another pending one triggered by Dave, a deployer who is none of the personas (for
approve and reject: so that Bob is refused for his role, not because it is his own deployment), one approved
(for complete), a policy attached to Platform, the template "network",
a comment of Bob on the pending deployment, the team "security team" (approvers on Platform), a webhook of Payments and a delivery of it, Bob's API token, the user Sam
(for the user routes), a member of Payments EU and a policy attached to it from Payments, a policy
attached to the template, a waiver of the Platform policy on "prod" granted by Alice.
"""

import io
import tarfile
from datetime import timedelta

import pytest
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator

from policies_app.accounts import service_accounts, tokens
from policies_app.models import (
    Deployment,
    DeploymentComment,
    EnvironmentState,
    Evaluation,
    GroupTeamMapping,
    OrganisationMembership,
    PolicyReplay,
    PolicyRepository,
    ProjectMembership,
    ProjectPolicy,
    Waiver,
    WebhookDelivery,
)
from policies_app.notifications import webhooks
from tests.builders import api_client_for, make_policy, make_user

# Webhooks point at loopback (port 9, discard): the egress guard is told to allow exactly 127.0.0.1.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]

PERSONAS = ("orgadmin", "auditor", "padmin", "approver", "deployer", "viewer", "outsider")
A, F, N, I = "allowed", "forbidden", "not found", "invalid"  # noqa: E741 - the matrix reads better short


def row(orgadmin, auditor, padmin, approver, deployer, viewer, outsider) -> dict[str, str]:
    return dict(zip(PERSONAS, (orgadmin, auditor, padmin, approver, deployer, viewer, outsider), strict=True))


EVERYONE = row(A, A, A, A, A, A, A)
MEMBERS_READ = row(A, A, A, A, A, A, N)
ADMINS_WRITE = row(A, F, A, F, F, F, N)
ORG_WRITE = row(A, F, F, F, F, F, N)
DEPLOYERS = row(A, F, A, A, A, F, N)
APPROVERS = row(A, F, A, A, F, F, N)
AUTHORS = row(A, F, F, F, F, F, F)  # organisation-wide writes, not about one visible object
AUTHORS_READ = row(A, A, F, F, F, F, N)  # replays: policy authors and organisation roles
# The deployer who triggered it (Bob) and project admins.
CANCELLERS = row(A, F, A, F, A, F, N)
# Webhooks are seen by the admins of their project and by organisation roles.
WEBHOOK_READ = row(A, A, A, N, N, N, N)
WEBHOOK_WRITE = row(A, F, A, N, N, N, N)
ORG_READ = row(A, A, N, N, N, N, N)
OWN_TOKEN = row(N, N, N, N, A, N, N)  # Bob's token
# A service account of Payments: only admins of Payments (and above, and organisation admins) see it.
ACCOUNT_ADMINS = row(A, N, A, N, N, N, N)

# (method, path) -> (expectations, body). Bodies may name objects with {placeholders} (see objects()).
MATRIX = {
    ("get", "/api/v1/projects/"): (EVERYONE, None),
    ("post", "/api/v1/projects/"): (row(A, F, A, F, F, F, I), {"name": "New", "parent": "{payments}"}),
    ("get", "/api/v1/projects/{id}/"): (MEMBERS_READ, None),
    ("put", "/api/v1/projects/{id}/"): (
        ADMINS_WRITE,
        {"name": "Payments EU", "parent": "{payments}", "description": "x"},
    ),
    ("patch", "/api/v1/projects/{id}/"): (ADMINS_WRITE, {"description": "changed"}),
    ("get", "/api/v1/projects/{id}/members/"): (MEMBERS_READ, None),
    ("post", "/api/v1/projects/{id}/members/"): (ADMINS_WRITE, {"username": "charlie", "role": "viewer"}),
    ("get", "/api/v1/templates/"): (EVERYONE, None),
    ("post", "/api/v1/templates/"): (row(A, F, F, F, F, F, F), {"name": "new", "type": "terraform"}),
    ("get", "/api/v1/templates/{id}/"): (MEMBERS_READ, None),
    ("put", "/api/v1/templates/{id}/"): (ORG_WRITE, {"name": "network", "type": "terraform"}),
    ("patch", "/api/v1/templates/{id}/"): (ORG_WRITE, {"path": "elsewhere"}),
    ("post", "/api/v1/templates/{id}/archive/"): (ORG_WRITE, "archive"),
    ("get", "/api/v1/teams/"): (EVERYONE, None),
    ("post", "/api/v1/teams/"): (row(A, F, F, F, F, F, F), {"name": "new team"}),
    ("get", "/api/v1/teams/{id}/"): (MEMBERS_READ, None),
    ("put", "/api/v1/teams/{id}/"): (ORG_WRITE, {"name": "security team", "members": ["sam"]}),
    ("patch", "/api/v1/teams/{id}/"): (ORG_WRITE, {"description": "changed"}),
    # Mapping provider groups to teams: organisation admins only; everyone else lists none, finds none.
    ("get", "/api/v1/group-mappings/"): (EVERYONE, None),
    ("post", "/api/v1/group-mappings/"): (
        row(A, F, F, F, F, F, F),
        {"group": "new", "team": "security team"},
    ),
    ("delete", "/api/v1/group-mappings/{id}/"): (row(A, N, N, N, N, N, N), None),
    ("get", "/api/v1/policies/"): (EVERYONE, None),
    ("post", "/api/v1/policies/"): (
        row(A, F, F, F, F, F, F),
        {
            "name": "new",
            "modules": [{"filename": "main.rego", "source": 'package env0\n\nallow contains "ok" if true\n'}],
        },
    ),
    ("get", "/api/v1/policies/{id}/"): (MEMBERS_READ, None),
    ("put", "/api/v1/policies/{id}/"): (ORG_WRITE, {"name": "platform policy", "description": "x"}),
    ("patch", "/api/v1/policies/{id}/"): (ORG_WRITE, {"description": "changed"}),
    ("get", "/api/v1/policies/{id}/revisions/"): (MEMBERS_READ, None),
    ("post", "/api/v1/policies/{id}/evaluate/"): (MEMBERS_READ, {"input": {}}),
    ("post", "/api/v1/policies/{id}/test/"): (MEMBERS_READ, {}),
    # The editor's text, not saved: for those who may edit the policy (members who see it are refused).
    ("post", "/api/v1/policies/{id}/try-unsaved/"): (
        ORG_WRITE,
        {"modules": [{"filename": "main.rego", "source": "package env0\n"}], "input": {}},
    ),
    # An inline policy has no repository to sync from: the one who may sync gets a field error.
    ("post", "/api/v1/policies/{id}/sync/"): (row(I, F, F, F, F, F, N), {}),
    ("post", "/api/v1/policies/{id}/publish/"): (ORG_WRITE, {"revision": 1}),
    ("post", "/api/v1/policies/{id}/replay/"): (ORG_WRITE, {"revision": 1, "limit": 5}),
    ("get", "/api/v1/policies/{id}/replays/"): (AUTHORS_READ, None),
    ("get", "/api/v1/policies/{id}/replays/{replay_id}/"): (AUTHORS_READ, None),
    ("post", "/api/v1/policies/check/"): (
        AUTHORS,
        {"modules": [{"filename": "main.rego", "source": "package env0\n"}]},
    ),
    ("get", "/api/v1/policies/catalog/"): (EVERYONE, None),
    ("post", "/api/v1/policies/install/"): (
        AUTHORS,
        {"entry": "require-approvers", "name": "two approvers", "parameters": {"count": 2}},
    ),
    ("get", "/api/v1/policy-repositories/"): (EVERYONE, None),
    ("post", "/api/v1/policy-repositories/"): (AUTHORS, {"name": "new", "url": "http://127.0.0.1:9/p.git"}),
    ("get", "/api/v1/policy-repositories/{id}/"): (row(A, A, N, N, N, N, N), None),
    ("put", "/api/v1/policy-repositories/{id}/"): (
        row(A, F, N, N, N, N, N),
        {"name": "policies", "url": "http://127.0.0.1:9/policies.git"},
    ),
    ("patch", "/api/v1/policy-repositories/{id}/"): (row(A, F, N, N, N, N, N), {"username": "bot"}),
    ("get", "/api/v1/environments/"): (EVERYONE, None),
    ("post", "/api/v1/environments/"): (
        row(A, F, A, F, F, F, I),
        {"name": "new", "project": "{payments_eu}", "template": "{template}"},
    ),
    ("get", "/api/v1/environments/{id}/"): (MEMBERS_READ, None),
    ("put", "/api/v1/environments/{id}/"): (
        ADMINS_WRITE,
        {"name": "prod", "project": "{payments_eu}", "template": "{template}"},
    ),
    ("patch", "/api/v1/environments/{id}/"): (ADMINS_WRITE, {"terraform_variables": {"size": "small"}}),
    ("get", "/api/v1/environments/{id}/effective-policies/"): (MEMBERS_READ, None),
    ("get", "/api/v1/environments/{id}/deployments/"): (MEMBERS_READ, None),
    ("post", "/api/v1/environments/{id}/deployments/"): (DEPLOYERS, {"plan": None}),
    ("get", "/api/v1/environments/{id}/state/"): (MEMBERS_READ, None),
    ("put", "/api/v1/environments/{id}/state/"): (
        DEPLOYERS,
        {
            "version": 4,
            "serial": 2,
            "lineage": "l",
            "terraform_version": "1.11.4",
            "outputs": {},
            "resources": [],
        },
    ),
    ("get", "/api/v1/deployments/"): (EVERYONE, None),
    ("get", "/api/v1/deployments/{id}/"): (MEMBERS_READ, None),
    ("get", "/api/v1/deployments/{id}/status/"): (MEMBERS_READ, None),
    ("get", "/api/v1/deployments/{id}/input/"): (MEMBERS_READ, None),
    ("post", "/api/v1/deployments/{id}/approve/"): (APPROVERS, {"comment": "ok"}),
    ("post", "/api/v1/deployments/{id}/reject/"): (APPROVERS, {"comment": "no"}),
    ("post", "/api/v1/deployments/{id}/cancel/"): (CANCELLERS, None),
    ("post", "/api/v1/deployments/{id}/complete/"): (DEPLOYERS, {"status": "succeeded"}),
    ("get", "/api/v1/deployments/{id}/plan-summary/"): (MEMBERS_READ, None),
    ("get", "/api/v1/deployments/{id}/comments/"): (MEMBERS_READ, None),
    ("post", "/api/v1/deployments/{id}/comments/"): (DEPLOYERS, {"body": "looks fine"}),
    # Bob's comment: its author and organisation admins remove it.
    ("delete", "/api/v1/deployments/{id}/comments/{comment_id}/"): (row(A, F, F, F, A, F, N), None),
    ("delete", "/api/v1/projects/{id}/members/{membership_id}/"): (ADMINS_WRITE, None),
    ("post", "/api/v1/projects/{id}/policies/"): (ADMINS_WRITE, {"policy": "{policy}"}),
    ("delete", "/api/v1/projects/{id}/policies/{policy_id}/"): (ADMINS_WRITE, None),
    ("post", "/api/v1/templates/{id}/policies/"): (ORG_WRITE, {"policy": "{policy}"}),
    ("delete", "/api/v1/templates/{id}/policies/{policy_id}/"): (ORG_WRITE, None),
    ("get", "/api/v1/webhooks/"): (EVERYONE, None),
    ("post", "/api/v1/webhooks/"): (
        row(A, F, A, F, F, F, I),
        {"project": "{payments_eu}", "name": "new", "url": "http://127.0.0.1:9/hook"},
    ),
    ("get", "/api/v1/webhooks/{id}/"): (WEBHOOK_READ, None),
    ("put", "/api/v1/webhooks/{id}/"): (
        WEBHOOK_WRITE,
        {"project": "{payments}", "name": "chat", "url": "http://127.0.0.1:9/other"},
    ),
    ("patch", "/api/v1/webhooks/{id}/"): (WEBHOOK_WRITE, {"active": False}),
    ("delete", "/api/v1/webhooks/{id}/"): (WEBHOOK_WRITE, None),
    ("post", "/api/v1/webhooks/{id}/test/"): (WEBHOOK_WRITE, None),
    ("get", "/api/v1/webhooks/{id}/deliveries/"): (WEBHOOK_READ, None),
    ("get", "/api/v1/webhooks/{id}/deliveries/{delivery_id}/"): (WEBHOOK_READ, None),
    ("post", "/api/v1/webhooks/{id}/deliveries/{delivery_id}/resend/"): (WEBHOOK_WRITE, None),
    ("get", "/api/v1/users/"): (EVERYONE, None),
    ("post", "/api/v1/users/"): (
        row(A, F, F, F, F, F, F),
        {"username": "newbie", "password": "a-long-password"},
    ),
    ("get", "/api/v1/users/{id}/"): (ORG_READ, None),
    ("patch", "/api/v1/users/{id}/"): (row(A, F, N, N, N, N, N), {"is_active": False}),
    ("get", "/api/v1/tokens/"): (EVERYONE, None),
    ("post", "/api/v1/tokens/"): (EVERYONE, {"name": "pipeline"}),
    ("get", "/api/v1/tokens/{id}/"): (OWN_TOKEN, None),
    ("delete", "/api/v1/tokens/{id}/"): (OWN_TOKEN, None),
    ("get", "/api/v1/service-accounts/"): (EVERYONE, None),
    ("post", "/api/v1/service-accounts/"): (
        row(A, F, A, F, F, F, I),
        {"project": "{payments}", "name": "new-machine"},
    ),
    ("get", "/api/v1/service-accounts/{id}/"): (ACCOUNT_ADMINS, None),
    ("patch", "/api/v1/service-accounts/{id}/"): (ACCOUNT_ADMINS, {"description": "changed"}),
    ("delete", "/api/v1/service-accounts/{id}/"): (ACCOUNT_ADMINS, None),
    ("get", "/api/v1/service-accounts/{id}/tokens/"): (ACCOUNT_ADMINS, None),
    ("post", "/api/v1/service-accounts/{id}/tokens/"): (ACCOUNT_ADMINS, {"capabilities": ["deploy"]}),
    ("delete", "/api/v1/service-accounts/{id}/tokens/{token_id}/"): (ACCOUNT_ADMINS, None),
    ("post", "/api/v1/service-accounts/{id}/tokens/{token_id}/rotate/"): (ACCOUNT_ADMINS, {}),
    ("get", "/api/v1/me/"): (EVERYONE, None),
    ("patch", "/api/v1/me/"): (EVERYONE, {"email_notifications": "daily_digest"}),
    ("get", "/api/v1/waivers/"): (EVERYONE, None),
    # Approvers of the environment's project (or above) grant; an outsider does not see the policy (400).
    ("post", "/api/v1/waivers/"): (
        row(A, F, A, A, F, F, I),
        {"policy": "{policy}", "environment": "{environment}", "reason": "incident", "hours": 1},
    ),
    ("get", "/api/v1/waivers/{id}/"): (MEMBERS_READ, None),
    ("post", "/api/v1/waivers/{id}/revoke/"): (APPROVERS, None),
    ("get", "/api/v1/audit/"): (EVERYONE, None),
    ("get", "/api/v1/audit/export/"): (EVERYONE, None),
}
OBJECT_OF_PATH = {
    "projects": "payments_eu",
    "templates": "template",
    "teams": "team",
    "policies": "policy",
    "environments": "environment",
    "deployments": "deployment",
    "policy-repositories": "repository",
    "webhooks": "webhook",
    "users": "user",
    "tokens": "token",
    "service-accounts": "service_account",
    "group-mappings": "group_mapping",
    "waivers": "waiver",
}
# Allowed: done (200, 201, 204) or accepted for a worker (202: a webhook test is queued, not sent in the request).
STATUS = {A: {200, 201, 202, 204}, F: {403}, N: {404}, I: {400}}


def schema_routes() -> set[tuple[str, str]]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return {
        (method, path)
        for path, operations in schema["paths"].items()
        if path.startswith("/api/v1/")
        for method in operations
        if method in ("get", "post", "put", "patch", "delete")
    }


def test_every_route_of_the_schema_has_expectations():
    assert schema_routes() == set(MATRIX)


def objects(world) -> dict:
    pat, audrey = make_user("pat"), make_user("audrey")
    ProjectMembership.objects.create(project=world.payments, user=pat, role="admin")
    OrganisationMembership.objects.create(user=audrey, role="auditor")
    world.platform.memberships.create(team=world.security, role="approver")
    policy = make_policy("platform policy", 'package env0\n\npending contains "wait" if true\n')
    world.platform.approval_policies.add(policy)
    pending = Deployment.objects.create(
        environment=world.environment, deployer=world.bob, status="pending_approval", decision="pending"
    )
    Evaluation.objects.create(
        deployment=pending, request_type="deploy", input_json="{}", decision="pending", engine="x"
    )
    dave = make_user("dave")
    ProjectMembership.objects.create(project=world.platform, user=dave, role="deployer")
    daves = Deployment.objects.create(
        environment=world.environment, deployer=dave, status="pending_approval", decision="pending"
    )
    approved = Deployment.objects.create(environment=world.environment, deployer=world.bob, status="approved")
    replay = PolicyReplay.objects.create(revision=policy.latest_revision, limit=5, status="done")
    repository = PolicyRepository.objects.create(name="policies", url="https://example.com/policies.git")
    EnvironmentState.objects.create(
        environment=world.environment, document={"version": 4}, serial=1, lineage="l"
    )
    member = ProjectMembership.objects.create(project=world.payments_eu, user=make_user("mia"), role="viewer")
    eu_policy = make_policy("eu policy", 'package env0\n\nallow contains "ok" if true\n')
    ProjectPolicy.objects.create(project=world.payments_eu, policy=eu_policy, authority=world.payments)
    template_policy = make_policy("template policy", 'package env0\n\nallow contains "ok" if true\n')
    world.template.approval_policies.add(template_policy)
    webhook = webhooks.create_webhook(world.admin, world.payments, name="chat", url="http://127.0.0.1:9/hook")
    delivery = WebhookDelivery.objects.create(webhook=webhook, event="ping", body="{}", status="failed")
    token, _ = tokens.create_token(world.bob, "ci")
    now = timezone.now()
    waiver = Waiver.objects.create(
        policy=policy,
        environment=world.environment,
        granted_by=world.alice,
        reason="incident",
        starts_at=now,
        expires_at=now + timedelta(hours=1),
    )
    account = service_accounts.create_service_account(world.admin, world.payments, "ci")
    account_token, _ = service_accounts.create_account_token(world.admin, account)
    personas = {
        "orgadmin": world.admin,
        "auditor": audrey,
        "padmin": pat,
        "approver": world.alice,
        "deployer": world.bob,
        "viewer": world.vera,
        "outsider": world.charlie,
    }
    return {
        "personas": personas,
        "payments": world.payments.pk,
        "payments_eu": world.payments_eu.pk,
        "template": world.template.pk,
        "team": world.security.pk,
        "policy": policy.pk,
        "environment": world.environment.pk,
        "deployment": pending.pk,
        "approved": approved.pk,
        "someone_elses": daves.pk,
        "replay": replay.pk,
        "repository": repository.pk,
        "webhook": webhook.pk,
        "delivery": delivery.pk,
        "user": world.sam.pk,
        "token": token.pk,
        "service_account": account.pk,
        "group_mapping": GroupTeamMapping.objects.create(group="sec", team=world.security).pk,
        "service_account_token": account_token.pk,
        "membership_id": member.pk,
        "policy_id": eu_policy.pk,
        "template_policy_id": template_policy.pk,
        "waiver": waiver.pk,
        "comment": DeploymentComment.objects.create(deployment=pending, author=world.bob, body="hm").pk,
    }


def fill(body, ids: dict):
    if isinstance(body, dict):
        return {key: fill(value, ids) for key, value in body.items()}
    if isinstance(body, str) and body.startswith("{") and body.endswith("}"):
        return ids[body[1:-1]]
    return body


def archive() -> io.BytesIO:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        data = b'output "x" { value = 1 }\n'
        info = tarfile.TarInfo("network/main.tf")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    buffer.seek(0)
    buffer.name = "network.tar.gz"
    return buffer


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize(("method", "path"), sorted(MATRIX))
def test_each_persona_is_allowed_forbidden_or_not_found_as_expected(world, method, path, persona):
    expectations, body = MATRIX[(method, path)]
    ids = objects(world)
    resource = path.split("/")[3]
    if path.endswith("/complete/"):
        target = ids["approved"]
    elif path.endswith(("/approve/", "/reject/")):
        target = ids["someone_elses"]
    else:
        target = ids.get(OBJECT_OF_PATH.get(resource))
    policy_id = ids["template_policy_id"] if resource == "templates" else ids["policy_id"]
    url = (
        path.replace("{id}", str(target))
        .replace("{membership_id}", str(ids["membership_id"]))
        .replace("{policy_id}", str(policy_id))
        .replace("{replay_id}", str(ids["replay"]))
        .replace("{token_id}", str(ids["service_account_token"]))
        .replace("{delivery_id}", str(ids["delivery"]))
        .replace("{comment_id}", str(ids["comment"]))
    )
    client = api_client_for(ids["personas"][persona])
    if body == "archive":
        response = client.post(url, {"archive": archive()}, format="multipart")
    else:
        response = getattr(client, method)(url, fill(body, ids), format="json")
    expected = expectations[persona]
    assert response.status_code in STATUS[expected], (
        f"{persona} {method.upper()} {path}: expected {expected}, got {response.status_code} "
        f"{response.content[:300]!r}"
    )
