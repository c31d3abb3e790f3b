"""The use cases called directly, without HTTP: each checks who may act and refuses with one domain
error, and each change that governs deployments is in the audit log."""

import pytest

from policies_app.accounts import teams
from policies_app.deployments import approvals, lifecycle
from policies_app.errors import Conflict, Forbidden, Invalid
from policies_app.models import AuditEntry, Deployment, OrganisationMembership, Project, ProjectMembership
from policies_app.projects import environments, iac_templates, projects, states
from tests.builders import make_user

pytestmark = pytest.mark.django_db

STATE = {
    "version": 4,
    "terraform_version": "1.11.4",
    "serial": 5,
    "lineage": "l1",
    "outputs": {},
    "resources": [],
}


@pytest.fixture
def pat(world):
    """Admin of Payments."""
    user = make_user("pat")
    ProjectMembership.objects.create(project=world.payments, user=user, role="admin")
    return user


def test_only_organisation_admins_create_root_projects(world, pat):
    with pytest.raises(Forbidden):
        projects.create_project(pat, name="Elsewhere")
    auditor = make_user("audrey")
    OrganisationMembership.objects.create(user=auditor, role="auditor")
    with pytest.raises(Forbidden):
        projects.create_project(auditor, name="Elsewhere")
    organisation_admin = make_user("olga")
    OrganisationMembership.objects.create(user=organisation_admin, role="admin")
    assert projects.create_project(organisation_admin, name="Elsewhere").lineage == "/"


def test_a_project_admin_creates_sub_projects_with_unique_names_and_the_log_says_who(world, pat):
    created = projects.create_project(pat, name="Cards", parent=world.payments)
    assert created.ancestor_ids == [world.payments.pk, world.platform.pk]
    with pytest.raises(Invalid) as refusal:
        projects.create_project(pat, name="Cards", parent=world.payments)
    assert refusal.value.errors == {"name": ["A sibling project already has this name."]}
    entry = AuditEntry.objects.get(action="project.created")
    assert (entry.actor, entry.project) == (pat, created)


def test_a_project_cannot_be_moved_under_its_own_descendant(world):
    with pytest.raises(Invalid) as refusal:
        projects.update_project(world.admin, world.payments, parent=world.payments_eu)
    assert "cycle" in refusal.value.errors["parent"][0]


def test_only_admins_give_roles_and_the_grant_is_logged(world, pat):
    with pytest.raises(Forbidden):
        projects.grant_role(world.alice, world.payments, "admin", member=world.charlie)
    projects.grant_role(pat, world.payments_eu, "deployer", member=world.charlie)
    assert ProjectMembership.objects.get(user=world.charlie).role == "deployer"
    assert AuditEntry.objects.get(action="membership.granted").after == {
        "member": "charlie",
        "role": "deployer",
    }
    with pytest.raises(Invalid):
        projects.grant_role(pat, world.payments_eu, "overlord", member=world.charlie)


def test_environments_are_created_by_project_admins_with_a_template_they_can_see(world, pat):
    with pytest.raises(Forbidden):
        environments.create_environment(
            world.bob, name="dev", project=world.payments, template=world.template
        )
    environment = environments.create_environment(
        pat, name="dev", project=world.payments, template=world.template
    )
    with pytest.raises(Invalid) as refusal:
        environments.create_environment(pat, name="dev", project=world.payments, template=world.template)
    assert "name" in refusal.value.errors
    assert AuditEntry.objects.get(action="environment.created").target_id == str(environment.pk)


def test_templates_and_teams_are_changed_by_organisation_admins_only(world, pat):
    with pytest.raises(Forbidden):
        iac_templates.save_template(pat, world.template, path="other")
    iac_templates.save_template(world.admin, world.template, path="other")
    assert AuditEntry.objects.get(action="template.changed").after["path"] == "other"
    with pytest.raises(Forbidden):
        teams.save_team(pat, world.security, members=[pat])
    teams.save_team(world.admin, world.security, members=[world.sam, pat])
    assert sorted(world.security.members.values_list("username", flat=True)) == ["pat", "sam"]


def test_a_viewer_may_not_upload_state_and_an_older_state_is_a_conflict(world):
    with pytest.raises(Forbidden):
        states.upload_state(world.vera, world.environment, STATE)
    states.upload_state(world.bob, world.environment, STATE)
    with pytest.raises(Conflict):
        states.upload_state(world.bob, world.environment, {**STATE, "serial": 4})
    with pytest.raises(Conflict):
        states.upload_state(world.bob, world.environment, {**STATE, "serial": 6, "lineage": "other"})
    assert states.upload_state(world.bob, world.environment, {**STATE, "serial": 4}, force=True).forced
    with pytest.raises(Invalid) as refusal:
        states.upload_state(world.bob, world.environment, {"not": "a state"})
    assert "state" in refusal.value.errors


def test_a_deployment_is_triggered_by_deployers_with_a_plan_that_fits_the_template(world):
    with pytest.raises(Forbidden):
        lifecycle.trigger_deployment(world.environment, world.vera)
    with pytest.raises(Invalid) as refusal:
        lifecycle.trigger_deployment(
            world.environment, world.bob, plan={"format_version": "1.2", "resource_changes": 3}
        )
    assert "plan" in refusal.value.errors
    assert Deployment.objects.count() == 0
    deployment, created = lifecycle.trigger_deployment(world.environment, world.bob, idempotency_key="k")
    assert created and deployment.evaluation_due_at is not None
    again, created = lifecycle.trigger_deployment(world.environment, world.bob, idempotency_key="k")
    assert (again.pk, created) == (deployment.pk, False)
    with pytest.raises(Conflict) as refusal:
        lifecycle.trigger_deployment(world.environment, world.bob, type="destroy", idempotency_key="k")
    assert refusal.value.code == "idempotency_conflict"


def test_cancel_and_complete_say_why_they_refuse(world):
    deployment = Deployment.objects.create(environment=world.environment, deployer=world.bob, status="denied")
    with pytest.raises(Forbidden):
        approvals.cancel_deployment(deployment, world.vera)
    with pytest.raises(Conflict) as refusal:
        approvals.cancel_deployment(deployment, world.bob)
    assert "denied" in refusal.value.message
    with pytest.raises(Conflict):
        lifecycle.complete_deployment(deployment, world.bob, "succeeded")
    with pytest.raises(Invalid):
        lifecycle.complete_deployment(deployment, world.bob, "exploded")


def test_approvals_are_logged_with_their_comment(world, django_capture_on_commit_callbacks):
    deployment = Deployment.objects.create(
        environment=world.environment, deployer=world.bob, status="pending_approval"
    )
    with django_capture_on_commit_callbacks(execute=False):
        approvals.record_approval(deployment, world.alice, "approve", "looks fine")
    entry = AuditEntry.objects.get(action="deployment.approved")
    assert (entry.actor, entry.after, entry.project) == (
        world.alice,
        {"comment": "looks fine"},
        world.payments_eu,
    )
    with pytest.raises(Invalid):
        approvals.record_approval(deployment, world.sam, "maybe")


def test_moving_a_project_moves_its_whole_subtree_in_the_tree(world):
    sandbox = Project.objects.create(name="Sandbox")
    projects.update_project(world.admin, world.payments, parent=sandbox)
    world.payments_eu.refresh_from_db()
    assert world.payments_eu.lineage == f"/{sandbox.pk}/{world.payments.pk}/"
    assert Project.objects.get(pk=world.payments.pk).lineage == f"/{sandbox.pk}/"


def test_a_tree_loaded_without_its_policies_refuses_to_say_which_apply(world):
    from policies_app.projects.tree import tree_for
    from tests.builders import make_policy

    world.platform.approval_policies.add(make_policy("cost", 'package env0\n\ndeny contains "no" if true\n'))
    light = tree_for(world.payments_eu, with_policies=False)
    assert light.full_name(world.payments_eu) == "Platform / Payments / Payments EU"
    assert not light.self_approval_allowed(world.payments_eu)
    # "No policy applies" would release every deployment: the light tree cannot be asked.
    with pytest.raises(LookupError):
        light.effective_policies(world.environment)
    assert [p.name for p in tree_for(world.payments_eu).effective_policies(world.environment)] == ["cost"]


def test_a_policy_attached_at_several_ancestors_is_inherited_once_from_the_nearest(world):
    from policies_app.projects.tree import tree_for
    from tests.builders import make_policy

    policy = make_policy("cost", 'package env0\n\ndeny contains "no" if true\n')
    world.platform.approval_policies.add(policy)
    world.payments.approval_policies.add(policy)
    inherited = tree_for(world.payments_eu).inherited_policies(world.payments_eu)
    assert [(each.policy.name, each.source.name) for each in inherited] == [("cost", "Payments")]


def test_each_user_sees_their_own_teams_and_those_holding_roles_where_they_see(world):
    from django.contrib.auth.models import AnonymousUser, Permission

    from policies_app import access
    from policies_app.models import Team

    outsiders = Team.objects.create(name="outsiders")
    outsiders.members.add(world.charlie)
    world.platform.memberships.create(team=world.security, role="approver")
    elsewhere = Team.objects.create(name="elsewhere team")
    ProjectMembership.objects.create(
        project=Project.objects.create(name="Elsewhere"), team=elsewhere, role="viewer"
    )

    def names(user):
        return set(access.visible_teams(user).values_list("name", flat=True))

    assert names(world.vera) == {"security team"}
    assert names(world.alice) == {"security team", "approvers team"}
    assert names(world.charlie) == {"outsiders"}
    assert names(AnonymousUser()) == set()
    every = {"security team", "approvers team", "outsiders", "elsewhere team"}
    assert names(world.admin) == every
    # The Django model permissions given in the admin: teams seen, templates managed.
    team_manager, template_manager = make_user("tess"), make_user("tom")
    team_manager.user_permissions.add(Permission.objects.get(codename="change_team"))
    template_manager.user_permissions.add(Permission.objects.get(codename="change_template"))
    User = type(world.admin)
    assert names(User.objects.get(pk=team_manager.pk)) == every  # a fresh instance: permissions are cached
    assert access.may_manage_templates(User.objects.get(pk=template_manager.pk))
    assert not access.may_manage_templates(world.alice)
