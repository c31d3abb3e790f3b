"""Use cases of environments: create and change one, and how sensitive variables are kept (how they are
shown is guards/masking.py).

An environment's settings decide what needs approving (automatic approval above all), so only project
admins change them, and a change that drops controls needs authority over them (controls.py).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from policies_app import access, audit
from policies_app.access import Grants
from policies_app.choices import Capability
from policies_app.errors import Invalid
from policies_app.guards.masking import MASK, environment_variables_shown
from policies_app.models import Environment, Project, Template
from policies_app.projects.controls import environment_before_and_after, require_may_weaken
from policies_app.projects.template_views import mark_views_due

VARIABLE_KINDS = ("environment", "terraform")


def _clean_sensitive(value: Any) -> dict[str, list[str]]:
    if value is None:
        return {}
    if not isinstance(value, dict) or set(value) - set(VARIABLE_KINDS):
        raise Invalid(
            {"sensitive_variables": ['Must be an object like {"environment": ["NAME"], "terraform": []}.']}
        )
    cleaned = {}
    for kind, names in value.items():
        if not isinstance(names, list) or not all(isinstance(name, str) and name for name in names):
            raise Invalid({"sensitive_variables": [f"{kind} must be a list of variable names."]})
        cleaned[kind] = sorted(set(names))
    return cleaned


def _merged_variables(
    stored: dict[str, Any], given: dict[str, Any] | None, sensitive: set[str], field: str
) -> dict[str, Any]:
    """New values, where a sensitive value sent back masked means "keep the one stored"."""
    if given is None:
        return stored
    if not isinstance(given, dict):
        raise Invalid({field: ["Must be an object of variable names to values."]})
    return {
        name: stored[name] if value == MASK and name in sensitive and name in stored else value
        for name, value in given.items()
    }


def _require_template_visible(user: AbstractBaseUser, template: Template) -> None:
    if not access.visible_templates(user).filter(pk=template.pk).exists():
        raise Invalid({"template": [f'Invalid pk "{template.pk}" - object does not exist.']})


def _require_name_free(name: str, project: Project, environment: Environment | None = None) -> None:
    clash = Environment.objects.filter(project=project, name=name)
    if environment is not None:
        clash = clash.exclude(pk=environment.pk)
    if clash.exists():
        raise Invalid({"name": ["The project already has an environment of this name."]})


def create_environment(
    user: AbstractBaseUser,
    *,
    name: str,
    project: Project,
    template: Template,
    approve_plans_automatically: bool = False,
    environment_variables: dict[str, Any] | None = None,
    terraform_variables: dict[str, Any] | None = None,
    sensitive_variables: dict[str, list[str]] | None = None,
) -> Environment:
    held = Grants.of(user)
    access.require(
        held, Capability.ADMINISTER, project, "Only admins of the project may create environments in it."
    )
    _require_template_visible(user, template)
    _require_name_free(name, project)
    environment = Environment(name=name, project=project, template=template)
    if approve_plans_automatically:
        tree, before, after = environment_before_and_after(
            environment, project=project, template=template, automatic_approval=True
        )
        require_may_weaken(held, before, after, tree)
    environment.approve_plans_automatically = approve_plans_automatically
    environment.environment_variables = _merged_variables(
        {}, environment_variables or {}, set(), "environment_variables"
    )
    environment.terraform_variables = _merged_variables(
        {}, terraform_variables or {}, set(), "terraform_variables"
    )
    environment.sensitive_variables = _clean_sensitive(sensitive_variables)
    with transaction.atomic():
        environment.save()
        mark_views_due(environment.template)  # its view, computed before its first deployment
        audit.record(user, "environment.created", environment, after=settings_of(environment))
    return environment


def update_environment(
    user: AbstractBaseUser,
    environment: Environment,
    *,
    name: str | None = None,
    project: Project | None = None,
    template: Template | None = None,
    approve_plans_automatically: bool | None = None,
    environment_variables: dict[str, Any] | None = None,
    terraform_variables: dict[str, Any] | None = None,
    sensitive_variables: dict[str, list[str]] | None = None,
) -> Environment:
    """Change an environment. Moving it, swapping its template or turning on automatic approval needs,
    beyond admin on its project (and on the new one), authority over every control the change drops."""
    held = Grants.of(user)
    access.require(
        held,
        Capability.ADMINISTER,
        environment.project,
        "Only admins of the project may change its environments.",
    )
    project = project or environment.project
    template = template or environment.template
    if project.pk != environment.project_id:
        access.require(
            held,
            Capability.ADMINISTER,
            project,
            "Only admins of the new project may move environments into it.",
        )
    if template.pk != environment.template_id:
        _require_template_visible(user, template)
    automatic = (
        environment.approve_plans_automatically
        if approve_plans_automatically is None
        else approve_plans_automatically
    )
    tree, before, after = environment_before_and_after(
        environment, project=project, template=template, automatic_approval=automatic
    )
    require_may_weaken(held, before, after, tree)
    _require_name_free(name or environment.name, project, environment)
    with transaction.atomic():
        environment = (
            Environment.objects.select_for_update()
            .select_related("project", "template")
            .get(pk=environment.pk)
        )
        old = settings_of(environment)
        old_template_id = environment.template_id
        sensitive = (
            environment.sensitive_variables
            if sensitive_variables is None
            else _clean_sensitive(sensitive_variables)
        )
        environment.environment_variables = _merged_variables(
            environment.environment_variables,
            environment_variables,
            environment.sensitive_names("environment"),
            "environment_variables",
        )
        environment.terraform_variables = _merged_variables(
            environment.terraform_variables,
            terraform_variables,
            environment.sensitive_names("terraform"),
            "terraform_variables",
        )
        environment.sensitive_variables = sensitive
        environment.name = name or environment.name
        environment.project = project
        environment.template = template
        view_changes = (
            template.pk != old_template_id
            or terraform_variables is not None
            or sensitive_variables is not None
        )
        environment.approve_plans_automatically = automatic
        environment.save()
        if view_changes:
            mark_views_due(environment.template)
        audit.record(user, "environment.changed", environment, before=old, after=settings_of(environment))
    return environment


def settings_of(environment: Environment) -> dict[str, Any]:
    """An environment's settings as the audit log keeps them (sensitive values masked)."""
    shown = environment_variables_shown(environment)
    return {
        "name": environment.name,
        "project": environment.project_id,
        "template": environment.template_id,
        "approve_plans_automatically": environment.approve_plans_automatically,
        "environment_variables": shown["environment"],
        "terraform_variables": shown["terraform"],
        "sensitive_variables": environment.sensitive_variables,
    }
