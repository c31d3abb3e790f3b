"""A pipeline's conditional poll is authenticated and answered from one query (deployments/waiting.py,
``poll_with_key``), which checks in SQL who may read the deployment. That check must say what
access.Grants says, for every persona, kind of token and place in the project tree; and since the token
is looked up on every poll, a revoked or expired token or a deactivated user is refused at the next one."""

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from policies_app import access
from policies_app.accounts import service_accounts, tokens
from policies_app.choices import OrganisationRole, Role
from policies_app.deployments import waiting
from policies_app.models import (
    ApiToken,
    Deployment,
    Environment,
    OrganisationMembership,
    Project,
    ProjectMembership,
    Team,
)
from tests.builders import api_key_for, make_user


@pytest.fixture
def tree(world):
    """Deployments across the tree: the world's Platform > Payments > Payments EU, a second root with
    enough projects that ids share digits (a lineage "/1/" must not match "/11/"), and personas holding
    roles through a team, on a leaf only, and over the organisation."""
    other = Project.objects.create(name="Other")
    projects = [world.platform, world.payments, world.payments_eu, other]
    for n in range(12):
        projects.append(Project.objects.create(name=f"other-{n}", parent=projects[-1] if n % 3 else other))
    team = Team.objects.create(name="payments team")
    teamed, leafed, auditor = make_user("teamed"), make_user("leafed"), make_user("auditor")
    team.members.add(teamed)
    ProjectMembership.objects.create(project=world.payments, team=team, role=Role.VIEWER)
    ProjectMembership.objects.create(project=projects[-2], user=leafed, role=Role.DEPLOYER)
    OrganisationMembership.objects.create(user=auditor, role=OrganisationRole.AUDITOR)
    deployments = []
    for project in projects:
        environment = Environment.objects.create(name="poll", project=project, template=world.template)
        deployments.append(
            Deployment.objects.create(
                environment=environment,
                deployer=world.admin,
                status="pending_approval",
                decision="pending",
                messages={"deny": [], "warn": [], "pending": ["one approver"], "allow": []},
            )
        )
    users = [
        world.admin,
        world.alice,
        world.bob,
        world.charlie,
        world.vera,
        world.sam,
        teamed,
        leafed,
        auditor,
    ]
    return users, deployments, projects


def expected(key: str, deployment: Deployment) -> dict | None:
    """What the ordinary path answers: the key's user (with its token's scope), its grants."""
    user = tokens.user_for_key(key)
    if not access.visible_deployments(user).filter(pk=deployment.pk).exists():
        return None
    return waiting.slim_status(user, deployment.pk)


@pytest.mark.django_db
def test_the_one_query_reads_what_the_grants_read_for_every_persona_and_token(world, tree):
    users, deployments, projects = tree
    keys = []
    for user in users:
        keys.append(api_key_for(user))  # the older kind
        keys.append(tokens.create_token(user, "pipeline")[1])
    for project in (world.payments, projects[5]):
        account = service_accounts.create_service_account(world.admin, project, f"ci-{project.pk}")
        keys.append(service_accounts.create_account_token(world.admin, account)[1])
    seen = 0
    for key in keys:
        for deployment in deployments:
            poll = waiting.poll_with_key(key, deployment.pk)
            assert poll is not None and poll.user.pk == tokens.user_for_key(key).pk
            assert poll.shown == expected(key, deployment), (poll.user, deployment.environment.project)
            seen += poll.shown is not None
        assert waiting.poll_with_key(key, 999_999).shown is None
    assert 0 < seen < len(keys) * len(deployments), "some seen, some not"


@pytest.mark.django_db
def test_a_revoked_or_expired_token_or_a_deactivated_user_is_refused_at_the_next_poll(world, tree):
    _, deployments, _ = tree
    deployment = deployments[2]
    client = APIClient()
    path = f"/api/v1/deployments/{deployment.pk}/status/"

    token, key = tokens.create_token(world.bob, "pipeline")
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    tag = client.get(path)["ETag"]
    assert client.get(path, HTTP_IF_NONE_MATCH=tag).status_code == 304
    tokens.revoke_token(world.bob, token)
    assert waiting.poll_with_key(key, deployment.pk) is None
    assert client.get(path, HTTP_IF_NONE_MATCH=tag).status_code == 401

    token, key = tokens.create_token(world.bob, "pipeline")
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.get(path, HTTP_IF_NONE_MATCH=tag).status_code == 304
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    refused = client.get(path, HTTP_IF_NONE_MATCH=tag)
    assert (refused.status_code, refused.json()["detail"]) == (401, "Token expired.")

    key = api_key_for(world.vera)
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.get(path, HTTP_IF_NONE_MATCH=tag).status_code == 304
    world.vera.is_active = False
    world.vera.save(update_fields=["is_active"])
    assert client.get(path, HTTP_IF_NONE_MATCH=tag).status_code == 401


@pytest.mark.django_db
def test_an_outsider_with_a_valid_token_gets_404_and_a_bad_key_401(world, tree):
    _, deployments, _ = tree
    client = APIClient()
    path = f"/api/v1/deployments/{deployments[0].pk}/status/"
    client.credentials(HTTP_AUTHORIZATION=f"Token {tokens.create_token(world.charlie, 'pipeline')[1]}")
    assert client.get(path).status_code == 404
    assert client.get(path, HTTP_IF_NONE_MATCH='"x"').status_code == 404
    client.credentials(HTTP_AUTHORIZATION="Token pp_not-a-key-anyone-has")
    assert client.get(path).status_code == 401
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_key_for(world.bob)}")
    assert client.get("/api/v1/deployments/x/status/").status_code == 404
