"""Use cases of templates: organisation-wide objects that organisation admins and template managers (the
Django model permission) create and change. A template's policies apply to every environment using it.
Its files come from a remote repository or an uploaded archive; a directory of the server only as the
file sandbox allows (guards/file_sandbox.py)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from policies_app import access, audit
from policies_app.errors import Forbidden, Invalid, NotFound
from policies_app.guards import egress, file_sandbox
from policies_app.iac.provider_schemas import ProviderSchemaError, parse_provider_schemas
from policies_app.iac.sources import TemplateSourceError
from policies_app.iac.template_archives import extract_archive
from policies_app.models import ApprovalPolicy, Template
from policies_app.projects.template_views import mark_views_due

FIELDS = ("name", "type", "repository", "path", "revision", "provider_schema")
# What the template's configuration views depend on: a change to one makes them due again.
SOURCE_FIELDS = ("type", "repository", "path", "revision", "provider_schema")


def _require_manager(user: AbstractBaseUser) -> None:
    if not access.may_manage_templates(user):
        raise Forbidden("Only organisation admins and template managers may change templates.")


def _refusal_to_fetch(repository: str) -> str | None:
    """Why a remote repository may not be fetched (the egress guard, asked now; it is asked again at every
    fetch), or None. Local directories and file:// are the template file sandbox's to judge."""
    if not egress.is_network_git_url(repository):
        return None
    try:
        egress.check_git_url(repository)
    except egress.EgressRefused as refused:
        return refused.message
    return None


def _snapshot(template: Template) -> dict[str, Any]:
    return {
        **{name: getattr(template, name) for name in FIELDS if name != "provider_schema"},
        "provider_schema": template.provider_schema is not None,
        "archive": template.archive.name or None,
        "approval_policies": sorted(template.approval_policies.values_list("pk", flat=True)),
    }


def save_template(
    user: AbstractBaseUser,
    template: Template | None = None,
    *,
    approval_policies: Iterable[ApprovalPolicy] | None = None,
    **fields: Any,
) -> Template:
    """Create a template (``template`` None) or change one."""
    _require_manager(user)
    unknown = set(fields) - set(FIELDS)
    if unknown:
        raise ValueError(f"unknown template fields {sorted(unknown)}")
    name = fields.get("name", template.name if template else None)
    clash = Template.objects.filter(name=name)
    if template is not None:
        clash = clash.exclude(pk=template.pk)
    if clash.exists():
        raise Invalid({"name": ["A template of this name already exists."]})
    file_sandbox.require_template_source(fields)
    if approval_policies is not None:
        approval_policies = list(approval_policies)
        access.require_policies_visible(user, approval_policies)
    refusal = _refusal_to_fetch(fields.get("repository") or "")
    if refusal:
        raise Invalid({"repository": [refusal]})
    if fields.get("provider_schema") is not None:
        try:
            parse_provider_schemas(fields["provider_schema"])
        except ProviderSchemaError as problem:
            raise Invalid({"provider_schema": [str(problem)]}) from None
    with transaction.atomic():
        before = _snapshot(template) if template is not None else None
        template = template or Template()
        source_changed = template.pk is None or any(
            getattr(template, name) != value for name, value in fields.items() if name in SOURCE_FIELDS
        )
        for name, value in fields.items():
            setattr(template, name, value)
        template.save()
        if source_changed:
            mark_views_due(template)
        if approval_policies is not None:
            template.approval_policies.set(approval_policies)
        audit.record(
            user,
            "template.changed" if before else "template.created",
            template,
            before=before,
            after=_snapshot(template),
        )
    return template


def upload_archive(user: AbstractBaseUser, template: Template, upload: UploadedFile | None) -> Template:
    """Take the template's files from a .tar.gz or .zip instead of a repository."""
    _require_manager(user)
    if upload is None:
        raise Invalid({"archive": ["Attach the archive as the multipart field 'archive'."]})
    try:
        extract_archive(upload.read(), settings.TEMPLATE_CHECKOUT_DIR)
    except TemplateSourceError as problem:
        raise Invalid({"archive": [file_sandbox.scrub_server_paths(str(problem))]}) from None
    upload.seek(0)
    with transaction.atomic():
        before = _snapshot(template)
        template.archive.save(upload.name, upload, save=True)
        mark_views_due(template)
        audit.record(user, "template.changed", template, before=before, after=_snapshot(template))
    return template


def attach_policy(user: AbstractBaseUser, template: Template, policy: ApprovalPolicy) -> Template:
    """Attach one policy to a template: it then applies to every environment of the template."""
    attached = list(template.approval_policies.all())
    if policy in attached:
        raise Invalid({"policy": [f"{policy.name} is already attached to {template.name}."]})
    with transaction.atomic():
        template = save_template(user, template, approval_policies=[*attached, policy])
        audit.record(
            user, "policy.attached", policy, after={"template": template.pk, "template_name": template.name}
        )
    return template


def detach_policy(user: AbstractBaseUser, template: Template, policy: ApprovalPolicy) -> Template:
    attached = list(template.approval_policies.all())
    if policy not in attached:
        raise NotFound(f"{policy.name} is not attached to {template.name}.")
    with transaction.atomic():
        template = save_template(user, template, approval_policies=[p for p in attached if p != policy])
        audit.record(
            user, "policy.detached", policy, before={"template": template.pk, "template_name": template.name}
        )
    return template
