"""A role given on a project holds on every sub-project, at any depth: one, two and three levels below
where it was given, whether given to the user or to a team, for every question the platform asks (what
a user may do, who may approve, what they see, what waits for them) and never above or beside it.

The tree: Platform / Payments / Payments EU / Cards, and Retail beside Payments. Dana is given her role
on Payments (one level below the root), the personas of the world theirs on Platform."""

import pytest

from policies_app import access
from policies_app.choices import Capability
from policies_app.deployments import approvals, inbox
from policies_app.errors import Forbidden
from policies_app.models import Deployment, Environment, Project, ProjectMembership, Team
from tests.builders import make_user

pytestmark = pytest.mark.django_db

C = Capability
EXPECTED = {
    "viewer": {C.READ},
    "deployer": {C.READ, C.DEPLOY},
    "approver": {C.READ, C.DEPLOY, C.APPROVE},
    "admin": {C.READ, C.DEPLOY, C.APPROVE, C.ADMINISTER},
}


@pytest.fixture
def deep(world):
    world.cards = Project.objects.create(name="Cards", parent=world.payments_eu)
    world.retail = Project.objects.create(name="Retail", parent=world.platform)
    world.cards_environment = Environment.objects.create(
        name="cards", project=world.cards, template=world.template
    )
    world.retail_environment = Environment.objects.create(
        name="shop", project=world.retail, template=world.template
    )
    return world


def levels_below(world, project):
    """The projects one, two and three levels below ``project`` (as many as the tree has)."""
    chain = [world.platform, world.payments, world.payments_eu, world.cards]
    return chain[chain.index(project) + 1 :]


@pytest.mark.parametrize("role", sorted(EXPECTED))
@pytest.mark.parametrize("granted_to", ["user", "team"])
def test_a_role_holds_one_two_and_three_levels_below_and_nowhere_above_or_beside(deep, role, granted_to):
    dana = make_user("dana")
    if granted_to == "user":
        ProjectMembership.objects.create(project=deep.platform, user=dana, role=role)
    else:
        team = Team.objects.create(name="dana's team")
        team.members.add(dana)
        ProjectMembership.objects.create(project=deep.platform, team=team, role=role)
    below = levels_below(deep, deep.platform)
    assert len(below) == 3
    for project in [deep.platform, *below, deep.retail]:
        project.refresh_from_db()
        assert access.grants(dana).capabilities(project) == EXPECTED[role], project.name
        for capability in C.values:
            assert access.can(dana, capability, project) == (capability in EXPECTED[role])


@pytest.mark.parametrize("role", sorted(EXPECTED))
def test_a_role_given_below_the_root_holds_two_levels_further_down_only(deep, role):
    dana = make_user("dana")
    ProjectMembership.objects.create(project=deep.payments, user=dana, role=role)
    held = access.grants(dana)
    for project in levels_below(deep, deep.payments):
        project.refresh_from_db()
        assert held.capabilities(project) == EXPECTED[role], project.name
    for project in (deep.platform, deep.retail):
        assert held.capabilities(project) == frozenset(), project.name
    visible = set(access.visible_projects(dana).values_list("name", flat=True))
    assert visible == {"Payments", "Payments EU", "Cards"}
    assert set(access.visible_environments(dana).values_list("name", flat=True)) == {"prod", "cards"}


def test_who_may_approve_three_levels_down_includes_roles_and_teams_given_at_every_level(deep):
    dana, erin, fred = make_user("dana"), make_user("erin"), make_user("fred")
    ProjectMembership.objects.create(project=deep.payments, user=dana, role="approver")
    ProjectMembership.objects.create(project=deep.payments_eu, team=deep.security, role="viewer")
    deep.security.members.add(erin)
    reviewers = Team.objects.create(name="reviewers")
    reviewers.members.add(fred)
    ProjectMembership.objects.create(project=deep.payments, team=reviewers, role="approver")
    deep.cards.refresh_from_db()
    approvers = set(access.users_with(C.APPROVE, deep.cards).values_list("username", flat=True))
    # Alice and Sam approve on Platform (three levels up), Dana and Fred's team on Payments (two up);
    # Erin's team only views; the admin is a superuser.
    assert approvers == {"admin", "alice", "sam", "dana", "fred"}
    deep.retail.refresh_from_db()
    assert set(access.users_with(C.APPROVE, deep.retail).values_list("username", flat=True)) == {
        "admin",
        "alice",
        "sam",
    }
    deployers = set(access.users_with(C.DEPLOY, deep.cards).values_list("username", flat=True))
    assert deployers == {"admin", "alice", "sam", "dana", "fred", "bob"}


def test_deployments_three_levels_below_an_approver_wait_for_them_and_they_may_approve(deep, run):
    dana = make_user("dana")
    ProjectMembership.objects.create(project=deep.payments, user=dana, role="approver")
    cards = Deployment.objects.create(
        environment=deep.cards_environment, deployer=deep.bob, status="pending_approval"
    )
    prod = Deployment.objects.create(
        environment=deep.environment, deployer=deep.bob, status="pending_approval"
    )
    shop = Deployment.objects.create(
        environment=deep.retail_environment, deployer=deep.bob, status="pending_approval"
    )
    assert set(inbox.waiting_for(dana).values_list("pk", flat=True)) == {cards.pk, prod.pk}
    assert set(inbox.waiting_for(deep.alice).values_list("pk", flat=True)) == {cards.pk, prod.pk, shop.pk}
    assert set(access.visible_deployments(dana).values_list("pk", flat=True)) == {cards.pk, prod.pk}
    run(approvals.record_approval, cards, dana, "approve")
    assert Deployment.objects.get(pk=cards.pk).approvals.filter(user=dana).exists()
    with pytest.raises(Forbidden):
        approvals.record_approval(shop, dana, "approve")


def test_a_role_given_or_taken_within_a_request_is_seen_by_the_rest_of_that_request(deep):
    """Within a request grants are loaded once; giving or taking a role forgets them."""
    from policies_app.projects import projects

    dana = make_user("dana")
    with access.grants_cached():
        assert not access.can(dana, C.DEPLOY, deep.cards)
        membership = projects.grant_role(deep.admin, deep.payments, "deployer", member=dana)
        assert access.can(dana, C.DEPLOY, deep.cards)
        projects.revoke_role(deep.admin, membership)
        assert not access.can(dana, C.READ, deep.cards)
