"""Use cases of the project tree: create, change (rename, move, attach policies, self-approval, expiry of
waiting deployments and of releases, carry-over of approvals) and give or take roles. Each checks who may do it; controls.py says who may drop
which control."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from policies_app import access, audit
from policies_app.access import Grants
from policies_app.choices import Capability, Role
from policies_app.errors import Forbidden, Invalid, NotFound
from policies_app.models import ApprovalPolicy, Project, ProjectMembership, ProjectPolicy, Team
from policies_app.models.projects import refusal_to_place_under
from policies_app.projects.controls import project_controls, require_may_weaken
from policies_app.projects.tree import ProjectTree
from policies_app.projects.windows import approval_carry_over_hours, inherited_carry_over_hours


def may_create_projects(user: AbstractBaseUser) -> bool:
    """Whether there is any place the user may create a project: anywhere for organisation admins, else
    under the projects they administer (``_require_may_place_under`` says where)."""
    held = Grants.of(user)
    return held.is_organisation_admin or held.administers_some_project


def _require_may_place_under(held: Grants, parent: Project | None, what: str) -> None:
    if parent is None:
        if not held.is_organisation_admin:
            raise Forbidden(f"Only organisation admins may {what} a root project.")
    elif not held.can(Capability.ADMINISTER, parent):
        raise Forbidden(f"Only admins of the parent project may {what} a project under it.")


def _require_name_free(name: str, parent: Project | None, project: Project | None = None) -> None:
    siblings = Project.objects.filter(parent=parent, name=name)
    if project is not None:
        siblings = siblings.exclude(pk=project.pk)
    if siblings.exists():
        raise Invalid({"name": ["A sibling project already has this name."]})


def create_project(
    user: AbstractBaseUser,
    *,
    name: str,
    parent: Project | None = None,
    description: str = "",
    allow_self_approval: bool = False,
    approval_policies: Iterable[ApprovalPolicy] = (),
    pending_expiry_hours: int | None = None,
    release_expiry_hours: int | None = None,
    approval_carry_over_hours: int | None = None,
) -> Project:
    held = Grants.of(user)
    _require_may_place_under(held, parent, "create")
    if not name or not name.strip():
        raise Invalid({"name": ["A name is required."]})
    _require_name_free(name, parent)
    _require_valid_hours("pending_expiry_hours", pending_expiry_hours)
    _require_valid_hours("release_expiry_hours", release_expiry_hours)
    _require_valid_hours("approval_carry_over_hours", approval_carry_over_hours, minimum=0)
    refusal = refusal_to_place_under(None, parent)
    if refusal is not None:
        raise refusal
    approval_policies = list(approval_policies)
    access.require_policies_visible(user, approval_policies)
    with transaction.atomic():
        project = Project.objects.create(
            name=name,
            parent=parent,
            description=description,
            pending_expiry_hours=pending_expiry_hours,
            release_expiry_hours=release_expiry_hours,
        )
        tree = ProjectTree.around([project])
        if approval_carry_over_hours is not None:
            _set_carry_over(held, tree, project, approval_carry_over_hours)
        if allow_self_approval:
            _set_self_approval(held, tree, project, True)
        _attach(held, user, tree, project, approval_policies)
        audit.record(user, "project.created", project, after={"name": name, "parent": parent and parent.pk})
    return project


def update_project(
    user: AbstractBaseUser,
    project: Project,
    *,
    name: str | None = None,
    description: str | None = None,
    parent: Project | None | type(...) = ...,
    allow_self_approval: bool | None = None,
    approval_policies: Iterable[ApprovalPolicy] | None = None,
    pending_expiry_hours: int | None | type(...) = ...,
    release_expiry_hours: int | None | type(...) = ...,
    approval_carry_over_hours: int | None | type(...) = ...,
) -> Project:
    """Change a project; every weakening of its controls is checked against who may drop them."""
    held = Grants.of(user)
    access.require(held, Capability.ADMINISTER, project, "Only admins of this project may change it.")
    if pending_expiry_hours is not ...:
        _require_valid_hours("pending_expiry_hours", pending_expiry_hours)
    if release_expiry_hours is not ...:
        _require_valid_hours("release_expiry_hours", release_expiry_hours)
    if approval_carry_over_hours is not ...:
        _require_valid_hours("approval_carry_over_hours", approval_carry_over_hours, minimum=0)
    with transaction.atomic():
        project = Project.objects.select_for_update().get(pk=project.pk)
        before = _snapshot(project)
        new_parent = project.parent if parent is ... else parent
        if new_parent != project.parent:
            _move(held, project, new_parent)
        if name is not None and name != project.name:
            _require_name_free(name, project.parent, project)
            project.name = name
        if description is not None:
            project.description = description
        if pending_expiry_hours is not ...:
            project.pending_expiry_hours = pending_expiry_hours
        if release_expiry_hours is not ...:
            project.release_expiry_hours = release_expiry_hours
        project.save()
        tree = ProjectTree.around([project])
        if approval_carry_over_hours is not ...:
            _set_carry_over(held, tree, project, approval_carry_over_hours)
        if allow_self_approval is not None and allow_self_approval != project.allow_self_approval:
            _set_self_approval(held, tree, project, allow_self_approval)
        if approval_policies is not None:
            approval_policies = list(approval_policies)
            current = {attachment.policy_id: attachment for attachment in tree.own_attachments(project)}
            access.require_policies_visible(user, [p for p in approval_policies if p.pk not in current])
            _detach(
                held,
                user,
                tree,
                [a for pk, a in current.items() if pk not in {p.pk for p in approval_policies}],
            )
            _attach(held, user, tree, project, [p for p in approval_policies if p.pk not in current])
        project.refresh_from_db()
        audit.record(user, "project.changed", project, before=before, after=_snapshot(project))
    return project


MAX_EXPIRY_HOURS = 24 * 366


def _require_valid_hours(field: str, hours: int | None, minimum: int = 1) -> None:
    if hours is not None and (
        isinstance(hours, bool) or not isinstance(hours, int) or not minimum <= hours <= MAX_EXPIRY_HOURS
    ):
        raise Invalid(
            {field: [f"A whole number of hours from {minimum} to {MAX_EXPIRY_HOURS}, or empty to inherit."]}
        )


def _set_carry_over(held: Grants, tree: ProjectTree, project: Project, hours: int | None) -> None:
    """Carrying approvals over for longer than the project inherits lets deployments through without a
    fresh approval: like self-approval, only admins of every project above it may lengthen it."""
    inherited = inherited_carry_over_hours(tree, project)
    before = approval_carry_over_hours(tree, project)
    after = inherited if hours is None else hours
    if after > before and not held.administers_all_of(tree.chain(project)):
        root = tree.chain(project)[-1]
        raise Forbidden(
            f"Carrying approvals over for {after:g} hours weakens the controls inherited from above; only "
            f"admins of every project above it (admins of {tree.full_name(root)}) or organisation admins "
            "may do that.",
            code="drops_controls",
        )
    Project.objects.filter(pk=project.pk).update(approval_carry_over_hours=hours)
    project.approval_carry_over_hours = hours


def _snapshot(project: Project) -> dict:
    return {
        "name": project.name,
        "parent": project.parent_id,
        "allow_self_approval": project.allow_self_approval,
        "pending_expiry_hours": project.pending_expiry_hours,
        "release_expiry_hours": project.release_expiry_hours,
        "approval_carry_over_hours": project.approval_carry_over_hours,
        "approval_policies": sorted(project.policy_attachments.values_list("policy_id", flat=True)),
    }


def _move(held: Grants, project: Project, new_parent: Project | None) -> None:
    """Moving changes what the project inherits: it needs authority over both places and over every
    control of the old place that the new one does not have."""
    refusal = refusal_to_place_under(project, new_parent)
    if refusal is not None:
        raise refusal
    _require_may_place_under(held, project.parent, "move")
    _require_may_place_under(held, new_parent, "move")
    tree = ProjectTree.around([p for p in (project, project.parent, new_parent) if p is not None])
    old_parent = tree.projects[project.parent_id] if project.parent_id else None
    new = tree.projects[new_parent.pk] if new_parent is not None else None
    before = project_controls(tree, project, parent=old_parent, self_approval=project.allow_self_approval)
    after = project_controls(tree, project, parent=new, self_approval=project.allow_self_approval)
    require_may_weaken(held, before, after, tree)
    _require_name_free(project.name, new_parent, project)
    project.parent = new_parent


def _set_self_approval(held: Grants, tree: ProjectTree, project: Project, allowed: bool) -> None:
    if allowed:
        parent = tree.projects.get(project.parent_id) if project.parent_id else None
        before = project_controls(tree, project, parent=parent, self_approval=False)
        after = project_controls(tree, project, parent=parent, self_approval=True)
        require_may_weaken(held, before, after, tree)
    Project.objects.filter(pk=project.pk).update(allow_self_approval=allowed)
    project.allow_self_approval = allowed


def _attach(
    held: Grants, user: AbstractBaseUser, tree: ProjectTree, project: Project, policies: list[ApprovalPolicy]
) -> None:
    # Organisation admins attach for the organisation; others for the highest project they administer,
    # whose admins alone may detach it again.
    authority = None if held.is_organisation_admin else held.highest_administered(tree.chain(project))
    ProjectPolicy.objects.bulk_create(
        ProjectPolicy(project=project, policy=policy, authority=authority, attached_by=user)
        for policy in policies
    )
    for policy in policies:
        audit.record(
            user,
            "policy.attached",
            policy,
            after={
                "project": project.pk,
                "project_name": project.name,
                "authority": authority and authority.pk,
            },
            project=project,
        )


def may_detach(held: Grants, attachment: ProjectPolicy, tree: ProjectTree) -> bool:
    """Only admins of the project a policy was attached from (organisation admins for the
    organisation's attachments) may detach it."""
    if held.is_organisation_admin:
        return True
    if attachment.authority_id is None:
        return False
    owner = (
        tree.projects.get(attachment.authority_id)
        or Project.objects.filter(pk=attachment.authority_id).first()
    )
    return owner is not None and held.can(Capability.ADMINISTER, owner)


def _detach(
    held: Grants, user: AbstractBaseUser, tree: ProjectTree, attachments: list[ProjectPolicy]
) -> None:
    for attachment in attachments:
        if not may_detach(held, attachment, tree):
            owner = tree.projects.get(attachment.authority_id) if attachment.authority_id else None
            where = (
                "the organisation"
                if attachment.authority_id is None
                else f"project {owner.name if owner else attachment.authority_id}"
            )
            raise Forbidden(
                f"Policy {attachment.policy.name} was attached from {where}; only its admins may detach it.",
                code="drops_controls",
            )
    ProjectPolicy.objects.filter(pk__in=[a.pk for a in attachments]).delete()
    for attachment in attachments:
        audit.record(
            user,
            "policy.detached",
            attachment.policy,
            before={"project": attachment.project_id, "authority": attachment.authority_id},
            project=tree.projects.get(attachment.project_id),
        )


def attach_policy(user: AbstractBaseUser, project: Project, policy: ApprovalPolicy) -> Project:
    """Attach one policy to a project (and so to its sub-projects)."""
    attached = list(ApprovalPolicy.objects.filter(project_attachments__project=project))
    if policy in attached:
        raise Invalid({"policy": [f"{policy.name} is already attached to {project.name}."]})
    return update_project(user, project, approval_policies=[*attached, policy])


def detach_policy(user: AbstractBaseUser, project: Project, policy: ApprovalPolicy) -> Project:
    """Detach one policy from a project; only the admins of the project it was attached from may."""
    attached = list(ApprovalPolicy.objects.filter(project_attachments__project=project))
    if policy not in attached:
        raise NotFound(f"{policy.name} is not attached to {project.name}.")
    return update_project(user, project, approval_policies=[p for p in attached if p != policy])


def grant_role(
    user: AbstractBaseUser,
    project: Project,
    role: str,
    *,
    member: AbstractBaseUser | None = None,
    team: Team | None = None,
) -> ProjectMembership:
    """Give a user or a team a role on a project (and so on its sub-projects), replacing any earlier one."""
    access.require(user, Capability.ADMINISTER, project, "Only admins of this project may add members.")
    if role not in Role.values:
        raise Invalid({"role": [f"Must be one of {', '.join(Role.values)}."]})
    if (member is None) == (team is None):
        raise Invalid({"username": ["Give either a username or a team."]})
    with transaction.atomic():
        previous = (
            ProjectMembership.objects.filter(project=project, user=member, team=team)
            .values_list("role", flat=True)
            .first()
        )
        membership, _ = ProjectMembership.objects.update_or_create(
            project=project, user=member, team=team, defaults={"role": role}
        )
        access.forget_cached_grants()
        audit.record(
            user,
            "membership.granted",
            project,
            before={"role": previous} if previous else None,
            after={"member": str(member or team), "role": role},
        )
    return membership


def revoke_role(user: AbstractBaseUser, membership: ProjectMembership) -> None:
    """Take a user's or a team's role on a project away."""
    access.require(
        user, Capability.ADMINISTER, membership.project, "Only admins of this project may remove members."
    )
    with transaction.atomic():
        audit.record(
            user,
            "membership.revoked",
            membership.project,
            before={"member": str(membership.user or membership.team), "role": membership.role},
        )
        membership.delete()
        access.forget_cached_grants()
