"""Attaching a policy, seen from the policy: where it is attached, where the user may attach it, and
attaching or detaching it there (projects.py and iac_templates.py hold the rules; this only routes)."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q

from policies_app import access
from policies_app.access import Grants
from policies_app.choices import Capability
from policies_app.errors import Invalid
from policies_app.models import ApprovalPolicy, Project, ProjectPolicy, Template
from policies_app.projects import iac_templates, projects
from policies_app.projects.tree import ProjectTree


@dataclass
class AttachmentChoices:
    # (target key, name, whether the user may detach it there), where the user sees it attached
    attached: list[tuple[str, str, bool]] = field(default_factory=list)
    attachable: list[tuple[str, str]] = field(default_factory=list)  # (target key, name)


def attachment_choices(user: AbstractBaseUser, policy: ApprovalPolicy) -> AttachmentChoices:
    """Targets are keyed "project:<id>" or "template:<id>"."""
    held = Grants.of(user)
    visible = access.visible_projects(user)
    attachments = {a.project_id: a for a in ProjectPolicy.objects.filter(policy=policy, project__in=visible)}
    attached_projects = list(visible.filter(pk__in=attachments))
    administered = visible.filter(held.capability_filter(Capability.ADMINISTER) or Q()).exclude(
        pk__in=[project.pk for project in attached_projects]
    )
    administered = list(administered)
    tree = ProjectTree.around([*attached_projects, *administered])
    choices = AttachmentChoices()
    choices.attached = [
        (
            f"project:{p.pk}",
            f"project {tree.full_name(p)}",
            projects.may_detach(held, attachments[p.pk], tree),
        )
        for p in attached_projects
    ]
    attached_templates = list(policy.templates.all())
    visible_templates = set(access.visible_templates(user).values_list("pk", flat=True))
    manages_templates = access.may_manage_templates(user)
    choices.attached += [
        (f"template:{t.pk}", f"template {t.name}", manages_templates)
        for t in attached_templates
        if t.pk in visible_templates
    ]
    choices.attachable = sorted(
        ((f"project:{p.pk}", f"project {tree.full_name(p)}") for p in administered), key=lambda c: c[1]
    )
    if manages_templates:
        choices.attachable += [
            (f"template:{t.pk}", f"template {t.name}")
            for t in Template.objects.exclude(pk__in=[t.pk for t in attached_templates])
        ]
    return choices


def _target(user: AbstractBaseUser, key: str) -> Project | Template:
    kind, _, pk = key.partition(":")
    if not pk.isdigit() or kind not in ("project", "template"):
        raise Invalid({"target": ["Choose a project or a template."]})
    found = (
        (access.visible_projects(user) if kind == "project" else access.visible_templates(user))
        .filter(pk=int(pk))
        .first()
    )
    if found is None:
        raise Invalid({"target": ["Choose a project or a template."]})
    return found


def attach(user: AbstractBaseUser, policy: ApprovalPolicy, key: str) -> str:
    """Attach the policy to the target; returns what it was attached to, as people read it."""
    target = _target(user, key)
    if isinstance(target, Project):
        projects.attach_policy(user, target, policy)
        return f"project {target.name}"
    iac_templates.attach_policy(user, target, policy)
    return f"template {target.name}"


def detach(user: AbstractBaseUser, policy: ApprovalPolicy, key: str) -> str:
    target = _target(user, key)
    if isinstance(target, Project):
        projects.detach_policy(user, target, policy)
        return f"project {target.name}"
    iac_templates.detach_policy(user, target, policy)
    return f"template {target.name}"
