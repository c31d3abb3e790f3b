"""Who may approve or reject a deployment now is one rule, written three ways because each use needs its
own shape: per deployment in Python (approvals.refusal_to_decide, which the use case and the pages ask), as
a query over deployments (inbox.waiting_for, the "waiting for me" queue) and as a query over users
(approval_emails.approvers_still_to_act, who is told and who is shown as still to act). They must agree,
for every persona, on every kind of deployment: pending or not, their own where self-approval is allowed
and where it is not, already decided by them, on a project two levels below their role, through a team."""

import pytest

from policies_app.access import Grants
from policies_app.choices import ApprovalDecision, DeploymentStatus, OrganisationRole, Role
from policies_app.deployments import inbox
from policies_app.deployments.approvals import refusal_to_decide
from policies_app.models import (
    Approval,
    Deployment,
    Environment,
    OrganisationMembership,
    Project,
    ProjectMembership,
)
from policies_app.notifications.approval_emails import approvers_still_to_act
from policies_app.projects.tree import tree_for
from tests.builders import make_user

pytestmark = pytest.mark.django_db


def organisation(world):
    """The personas of the world, and more: a team's approver, an inactive approver, an auditor; the
    deployments every one of them is asked about."""
    tess = make_user("tess")  # an approver only through the security team, on Payments and below
    world.security.members.add(tess)
    ProjectMembership.objects.create(project=world.payments, team=world.security, role=Role.APPROVER)
    ivan = make_user("ivan", is_active=False)
    ProjectMembership.objects.create(project=world.platform, user=ivan, role=Role.APPROVER)
    olga = make_user("olga")
    OrganisationMembership.objects.create(user=olga, role=OrganisationRole.AUDITOR)
    # Payments lets deployers approve their own deployments, and so does Payments EU below it (where
    # world.environment is); Platform itself does not.
    Project.objects.filter(pk=world.payments.pk).update(allow_self_approval=True)
    core = Environment.objects.create(name="core", project=world.platform, template=world.template)
    lab = Environment.objects.create(
        name="lab",
        project=Project.objects.create(name="Lab", parent=world.payments_eu),  # three levels below
        template=world.template,
    )
    people = [world.admin, world.alice, world.bob, world.charlie, world.vera, world.sam, tess, ivan, olga]
    deployments = []
    for environment in (world.environment, core, lab):
        for deployer in (world.bob, world.alice, world.sam, tess, world.admin):
            for status in (
                DeploymentStatus.PENDING_APPROVAL,
                DeploymentStatus.QUEUED,
                DeploymentStatus.APPROVED,
            ):
                deployments.append(
                    Deployment.objects.create(environment=environment, deployer=deployer, status=status)
                )
        decided = Deployment.objects.create(
            environment=environment, deployer=world.bob, status=DeploymentStatus.PENDING_APPROVAL
        )
        Approval.objects.create(deployment=decided, user=world.alice, decision=ApprovalDecision.APPROVE)
        Approval.objects.create(deployment=decided, user=tess, decision=ApprovalDecision.APPROVE)
        deployments.append(decided)
    return people, deployments


def refusal(user, deployment):
    project = deployment.environment.project
    acted = set(deployment.approvals.values_list("user_id", flat=True))
    return refusal_to_decide(
        user, Grants.of(user), deployment, project, tree_for(project, with_policies=False), acted
    )


def test_the_inbox_query_and_the_per_deployment_rule_agree_for_every_persona(world):
    people, deployments = organisation(world)
    refusals = {(user.pk, d.pk): refusal(user, d) for user in people for d in deployments}
    for user in people:
        allowed = {d.pk for d in deployments if refusals[user.pk, d.pk] is None}
        waiting = set(inbox.waiting_for(user).values_list("pk", flat=True))
        assert waiting == allowed, (
            f"{user.username}: only in the inbox {sorted(waiting - allowed)}, "
            f"only allowed by refusal_to_decide {sorted(allowed - waiting)}"
        )
    # Every way the rule can answer was asked, so agreeing means something.
    codes = {r.code if r is not None else "may decide" for r in refusals.values()}
    assert codes == {"may decide", "forbidden", "not_pending", "self_approval", "already_decided"}


def test_who_is_still_to_act_agrees_with_the_per_deployment_rule(world):
    people, deployments = organisation(world)
    for deployment in deployments:
        if deployment.status != DeploymentStatus.PENDING_APPROVAL:
            continue  # only a waiting deployment has anyone still to act
        project = deployment.environment.project
        acted = set(deployment.approvals.values_list("user_id", flat=True))
        still = {
            u.pk for u in approvers_still_to_act(deployment, tree_for(project, with_policies=False), acted)
        }
        allowed = {user.pk for user in people if refusal(user, deployment) is None}
        assert still == allowed, f"deployment of {deployment.environment.name} by {deployment.deployer}"
