"""Builders for the Django tests: a small organisation, policies in Rego, plans."""

import secrets
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.utils import timezone
from rest_framework.test import APIClient

from policies_app.accounts import tokens
from policies_app.choices import Role
from policies_app.models import (
    ApprovalPolicy,
    Environment,
    LegacyApiToken,
    Project,
    ProjectMembership,
    Team,
    Template,
)
from policies_app.policies import authoring

User = get_user_model()


# A policy that waits for one approval, then allows.
ONE_APPROVER = """package env0

pending contains "needs one approver" if count(input.approvers) < 1
allow contains "approved" if count(input.approvers) >= 1
"""


def make_user(username: str, **extra: Any):
    return User.objects.create_user(
        username=username, email=f"{username}@example.com", password="pw", **extra
    )


def api_key_for(user) -> str:
    """A new API key for ``user``, of the older one-per-user kind that tests have always used: stored as
    a hash like every token, kept out of the user's list of named tokens, and its use not recorded, so
    that requests cost the same queries however often a test asks."""
    key = secrets.token_hex(20)
    LegacyApiToken.objects.create(
        user=user, prefix=tokens.key_prefix(key), key_hash=tokens.key_hash(key), created_at=timezone.now()
    )
    return key


def api_client_for(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_key_for(user)}")
    return client


def make_policy(name: str, source: str, rego_version: str = "v1", data: Any = None) -> ApprovalPolicy:
    return authoring.create_policy(
        name=name, rego_version=rego_version, modules=[{"filename": "main.rego", "source": source}], data=data
    )


def plan_with(*changes: tuple[str, list[str]]) -> dict:
    """A Terraform JSON plan with one resource change per (address, actions)."""
    resource_changes = []
    for address, actions in changes:
        rtype, name = address.rsplit(".", 1)[0].split(".")[-1], address.rsplit(".", 1)[1]
        resource_changes.append(
            {
                "address": address,
                "type": rtype,
                "name": name,
                "provider_name": "registry.terraform.io/hashicorp/aws",
                "change": {"actions": actions, "before": None, "after": {}},
            }
        )
    return {"format_version": "1.2", "terraform_version": "1.11.4", "resource_changes": resource_changes}


@dataclass
class World:
    admin: Any
    alice: Any
    bob: Any
    charlie: Any
    vera: Any
    sam: Any
    security: Team
    platform: Project
    payments: Project
    payments_eu: Project
    template: Template
    environment: Environment

    @classmethod
    def create(cls) -> "World":
        admin = make_user("admin", is_staff=True, is_superuser=True)
        alice, bob, charlie, vera, sam = (make_user(n) for n in ("alice", "bob", "charlie", "vera", "sam"))
        security = Team.objects.create(name="security team")
        security.members.add(sam)
        approvers = Team.objects.create(name="approvers team")
        approvers.members.add(alice)
        platform = Project.objects.create(name="Platform")
        payments = Project.objects.create(name="Payments", parent=platform)
        payments_eu = Project.objects.create(name="Payments EU", parent=payments)
        for user, role in (
            (alice, Role.APPROVER),
            (bob, Role.DEPLOYER),
            (vera, Role.VIEWER),
            (sam, Role.APPROVER),
        ):
            ProjectMembership.objects.create(project=platform, user=user, role=role)
        template = Template.objects.create(
            name="network", type="terraform", repository="", path="network", revision="main"
        )
        environment = Environment.objects.create(name="prod", project=payments_eu, template=template)
        return cls(
            admin,
            alice,
            bob,
            charlie,
            vera,
            sam,
            security,
            platform,
            payments,
            payments_eu,
            template,
            environment,
        )


# Controls set above a project admin (tests/projects/test_controls.py, tests/deployments/test_self_approval.py).
COST_LIMIT = """package env0

deny contains "monthly cost over budget" if input.costEstimation.monthlyCostDiff > 1000

allow contains "within budget" if input.costEstimation.monthlyCostDiff <= 1000
"""
NO_DELETES_OFF_MAIN = """package env0

deny contains "deletes a database off main" if {
	input.deploymentRequest.revision != "main"
	some change in input.plan.resource_changes
	"delete" in change.change.actions
}
"""


def with_controls(world: World) -> World:
    """Pat administers Payments (under Platform) and a root project Sandbox; Adam administers Platform and
    Sandbox. A cost limit is attached to Platform, a policy refusing deletes off main to the template."""
    pat = make_user("pat")
    adam = make_user("adam")
    sandbox = Project.objects.create(name="Sandbox")
    ProjectMembership.objects.create(project=world.payments, user=pat, role="admin")
    ProjectMembership.objects.create(project=sandbox, user=pat, role="admin")
    ProjectMembership.objects.create(project=world.platform, user=adam, role="admin")
    ProjectMembership.objects.create(project=sandbox, user=adam, role="admin")
    cost = make_policy("cost limit", COST_LIMIT)
    world.platform.approval_policies.add(cost)
    world.template.approval_policies.add(make_policy("no deletes off main", NO_DELETES_OFF_MAIN))
    bare = Template.objects.create(name="bare", type="terraform")
    world.pat, world.adam, world.sandbox, world.cost, world.bare = pat, adam, sandbox, cost, bare
    return world
