"""Teams in the product: each member's source (manual, SSO group, SCIM), where the team holds roles, the
group → team mapping kept by organisation admins, and the migration that keeps existing members as
manual ones."""

import pytest

from policies_app.accounts import teams
from policies_app.choices import OrganisationRole
from policies_app.errors import Forbidden
from policies_app.models import GroupTeamMapping, OrganisationMembership, ProjectMembership, TeamMembership
from tests.builders import make_user


@pytest.fixture
def org_admin(world):
    user = make_user("olga")
    OrganisationMembership.objects.create(user=user, role=OrganisationRole.ADMIN)
    return user


def test_the_teams_api_shows_each_members_source_the_roles_and_the_mapped_groups(world, api, org_admin):
    ProjectMembership.objects.create(project=world.payments, team=world.security, role="approver")
    GroupTeamMapping.objects.create(group="sec-oncall", team=world.security)
    teams.sync_provider_teams(world.bob, ["sec-oncall"], "sso_group")

    [security] = [
        t for t in api(org_admin).get("/api/v1/teams/").json()["results"] if t["name"] == "security team"
    ]
    assert [(m["username"], m["source"], m["source_group"]) for m in security["memberships"]] == [
        ("bob", "sso_group", "sec-oncall"),
        ("sam", "manual", ""),
    ]
    assert security["roles"] == [
        {"project": world.payments.pk, "project_name": "Payments", "role": "approver"}
    ]
    assert security["groups"] == ["sec-oncall"]
    assert sorted(security["members"]) == ["bob", "sam"]


def test_a_teams_role_on_a_project_the_reader_cannot_see_is_not_shown(world, api):
    ProjectMembership.objects.create(project=world.payments, team=world.security, role="approver")
    hidden = world.platform.__class__.objects.create(name="Hidden")
    ProjectMembership.objects.create(project=hidden, team=world.security, role="admin")
    # Alice is no member of the team: she sees it through its role on Payments, and not Hidden.
    [security] = [
        t for t in api(world.alice).get("/api/v1/teams/").json()["results"] if t["name"] == "security team"
    ]
    assert [r["project_name"] for r in security["roles"]] == ["Payments"]


def test_only_organisation_admins_map_groups(world, api, org_admin):
    refused = api(world.alice).post(
        "/api/v1/group-mappings/", {"group": "g", "team": "security team"}, format="json"
    )
    assert refused.status_code == 403
    assert api(world.alice).get("/api/v1/group-mappings/").json()["results"] == []
    made = api(org_admin).post(
        "/api/v1/group-mappings/", {"group": "g", "team": "security team"}, format="json"
    )
    assert made.status_code == 201, made.content
    assert api(org_admin).get("/api/v1/group-mappings/").json()["results"][0]["group"] == "g"
    assert api(world.alice).delete(f"/api/v1/group-mappings/{made.json()['id']}/").status_code == 404
    assert api(org_admin).delete(f"/api/v1/group-mappings/{made.json()['id']}/").status_code == 204
    assert not GroupTeamMapping.objects.exists()
    with pytest.raises(Forbidden):
        teams.map_group(world.admin.__class__.objects.get(username="bob"), "g", world.security)


def test_sso_group_sync_adds_and_removes_only_its_own_memberships(world):
    GroupTeamMapping.objects.create(group="sec", team=world.security)
    teams.sync_provider_teams(world.sam, ["sec"], "sso_group")  # sam is already a manual member: stays manual
    teams.sync_provider_teams(world.bob, ["sec", "unknown"], "sso_group")
    assert TeamMembership.objects.get(user=world.sam, team=world.security).source == "manual"
    assert TeamMembership.objects.get(user=world.bob, team=world.security).source == "sso_group"
    teams.sync_provider_teams(world.bob, [], "sso_group")
    teams.sync_provider_teams(world.sam, [], "sso_group")
    assert not TeamMembership.objects.filter(user=world.bob).exists()
    assert TeamMembership.objects.filter(user=world.sam, team=world.security, source="manual").exists()
    teams.sync_provider_teams(world.bob, "sec", "sso_group")  # not a list: no groups
    assert not TeamMembership.objects.filter(user=world.bob).exists()


def test_editing_members_by_hand_keeps_the_source_of_those_who_stay(world, org_admin):
    GroupTeamMapping.objects.create(group="sec", team=world.security)
    teams.sync_provider_teams(world.bob, ["sec"], "sso_group")
    teams.save_team(org_admin, world.security, members=[world.bob, world.alice])
    assert dict(
        TeamMembership.objects.filter(team=world.security).values_list("user__username", "source")
    ) == {
        "bob": "sso_group",
        "alice": "manual",
    }


def test_the_teams_page_lists_members_sources_roles_and_lets_an_org_admin_map_a_group(
    world, client, org_admin
):
    ProjectMembership.objects.create(project=world.payments, team=world.security, role="approver")
    client.force_login(org_admin)
    answer = client.post("/teams/groups/", {"team": world.security.pk, "group": "sec-oncall"})
    assert answer.status_code == 302
    teams.sync_provider_teams(world.bob, ["sec-oncall"], "sso_group")
    page = client.get("/teams/").content.decode()
    assert "security team" in page and "SSO group" in page and "sec-oncall" in page
    assert "approver of" in page and "Payments" in page

    client.force_login(world.sam)
    page = client.get("/teams/").content.decode()
    assert "security team" in page and "Map group" not in page
    mapping = GroupTeamMapping.objects.get()
    assert client.post(f"/teams/groups/{mapping.pk}/remove/").status_code == 403
    assert GroupTeamMapping.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_migration_keeps_existing_members_as_manual():
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before = ("policies_app", "0020_branch_checks")
    after = ("policies_app", "0021_team_membership_sources_and_sso")
    executor = MigrationExecutor(connection)
    executor.migrate([before])
    old = executor.loader.project_state([before]).apps
    user = old.get_model("auth", "User").objects.create(username="kim")
    team = old.get_model("policies_app", "Team").objects.create(name="ops")
    team.members.add(user)

    executor = MigrationExecutor(connection)
    executor.migrate([after])
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    assert list(TeamMembership.objects.values_list("team__name", "user__username", "source")) == [
        ("ops", "kim", "manual")
    ]
    executor = MigrationExecutor(connection)
    executor.migrate([before])
    old = executor.loader.project_state([before]).apps
    assert list(
        old.get_model("policies_app", "Team")
        .objects.get(name="ops")
        .members.values_list("username", flat=True)
    ) == ["kim"]
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
