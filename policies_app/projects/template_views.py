"""The configuration views of a template's environments, computed by a worker when the template's files
change (an archive uploaded, the repository, path, revision or provider schema changed, a new commit
seen on its revision by the periodic template sync or by a deployment's evaluation), so that the first
deployment after the change finds its view kept instead of computing it on the trigger's path.

The work owed is recorded on the template (``views_due_at``) in the transaction that changes it;
wakeups.py wakes a worker once it commits, and ``resend_due_template_views`` (periodic) wakes one
again for templates whose views are still due long after (the broker was down, the worker died).
Computing twice is harmless (configuration_cache.py computes each view once and reads it after).
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from policies_app import wakeups
from policies_app.choices import TERRAFORM_LIKE_TYPES
from policies_app.guards import file_sandbox
from policies_app.iac.sources import TemplateSourceError
from policies_app.models import Environment, Template
from policies_app.projects.configuration_cache import environment_configuration_view

logger = logging.getLogger(__name__)


def has_views(template: Template) -> bool:
    """Whether the template's configuration is evaluated for policies (Terraform-like, with files)."""
    return template.type in TERRAFORM_LIKE_TYPES and bool(template.repository or template.archive)


def mark_views_due(template: Template) -> None:
    """Record, in the caller's transaction, that the template's views are to be computed, and wake a
    worker for them once it commits."""
    if not has_views(template):
        return
    now = timezone.now()
    Template.objects.filter(pk=template.pk).update(views_due_at=now, views_enqueued_at=now)
    template.views_due_at = template.views_enqueued_at = now
    wakeups.wake("policies_app.tasks.compute_template_views_task", template.pk)


def note_commit_seen(template: Template, commit: str) -> None:
    """A deployment's evaluation read the template's revision at ``commit``: when the views were computed
    at another commit, the other environments' views are due."""
    if commit and commit != template.views_commit and has_views(template):
        Template.objects.filter(pk=template.pk).update(views_commit=commit)
        template.views_commit = commit
        mark_views_due(template)


def sync_template_views() -> list[int]:
    """Periodic: look at the revision of every repository template that has environments; the ones whose
    revision moved to a commit their views were not computed at are due (a worker computes them).
    Returns their ids."""
    moved = []
    templates = Template.objects.exclude(repository="").filter(archive="", environments__isnull=False)
    for template in templates.distinct().order_by("pk"):
        if not has_views(template):
            continue
        try:
            files = file_sandbox.template_files(template, template.revision or None)
        except TemplateSourceError as problem:
            logger.warning("template %s: files not readable for its views: %s", template.pk, problem)
            continue
        if files.commit and files.commit != template.views_commit:
            note_commit_seen(template, files.commit)
            moved.append(template.pk)
    return moved


def compute_template_views(template_id: int) -> int:
    """Compute the view of every environment of the template, at the template's revision with the
    environment's Terraform variables (what a deployment that states none of its own reads). Returns
    how many environments have their view; the work is no longer due unless it became due again."""
    template = Template.objects.filter(pk=template_id).first()
    if template is None or template.views_due_at is None:
        return 0
    due_at = template.views_due_at
    computed = 0
    environments = list(
        Environment.objects.filter(template=template).select_related("template").order_by("pk")
    )
    if environments and has_views(template):
        try:
            files = file_sandbox.template_files(template, template.revision or None)
        except TemplateSourceError as problem:
            # A deployment would read the same failure: nothing to compute ahead.
            logger.warning("template %s: files not readable for its views: %s", template.pk, problem)
        else:
            for environment in environments:
                environment_configuration_view(environment, files, dict(environment.terraform_variables))
                computed += 1
            if files.commit:
                Template.objects.filter(pk=template_id).update(views_commit=files.commit)
    Template.objects.filter(pk=template_id, views_due_at=due_at).update(views_due_at=None)
    return computed


def resend_due_template_views() -> list[int]:
    """Periodic: wake a worker again for the templates whose views are still due long after their task
    was sent. Returns their ids."""
    now = timezone.now()
    resend_before = now - timedelta(seconds=settings.EVALUATION_RESEND_AFTER_SECONDS)
    lost = Template.objects.filter(views_due_at__isnull=False).filter(
        Q(views_enqueued_at__isnull=True) | Q(views_enqueued_at__lt=resend_before)
    )
    resent = list(lost.order_by("pk").values_list("pk", flat=True)[: settings.EVALUATION_RESEND_BATCH])
    for template_id in resent:
        Template.objects.filter(pk=template_id).update(views_enqueued_at=now)
        wakeups.wake("policies_app.tasks.compute_template_views_task", template_id)
    if resent:
        logger.warning("resent the configuration views of %d templates: %s", len(resent), resent)
    return resent
