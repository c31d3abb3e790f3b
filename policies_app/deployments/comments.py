"""Comments on a deployment: the thread approvers and deployers talk in, beside the plan.

The rules, each stated once here:
- Reading (``thread``): whoever may see the deployment reads its whole thread (viewers and organisation
  auditors included); whoever may not see it finds no thread either (the callers look the deployment up
  through ``access.visible_deployments``, so another project's deployment is "not found").
- Writing (``refusal_to_comment``): the deploy capability on the deployment's project: deployers,
  approvers and admins of it or a parent project (their own role or a team's), organisation admins, and
  tokens scoped to deploy there. Viewers and auditors read only: a thread on a change is for the people
  who make or judge changes. Any status: a finished deployment may still be discussed.
- Removing (``refusal_to_remove``): the author, while they may still write there, or an organisation
  admin. A removed comment keeps its row (who removed it, when) and loses its text, so the thread shows
  that something was removed and nobody can read it again, however it is reached.
- The body is plain text, 1 to ``MAX_BODY`` characters after trimming; pages escape it (autoescape) and
  keep its line breaks, nothing renders HTML or Markdown.
- Posting and removing are in the audit log (the comment's size and author, never its text: a comment
  removed because someone pasted a secret must not live on in the log), and a new comment goes to the
  webhooks of the project and its ancestors that send every event (``statuses`` empty) as
  ``deployment.commented``; a webhook narrowed to some statuses asked for those only.
"""

from __future__ import annotations

import json

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from policies_app import audit
from policies_app.access import Grants
from policies_app.choices import Capability
from policies_app.errors import Conflict, DomainError, Forbidden, Invalid, NotFound
from policies_app.models import Deployment, DeploymentComment
from policies_app.notifications import webhooks
from policies_app.notifications.approval_emails import deployment_url
from policies_app.projects.tree import tree_for

MAX_BODY = 4000
COMMENTED = "deployment.commented"
WHO_MAY_COMMENT = "Only deployers, approvers and admins of this project may comment on its deployments."


def thread(deployment: Deployment) -> QuerySet[DeploymentComment]:
    """The deployment's comments, oldest first, with their authors and removers: one query. The caller
    found ``deployment`` among the user's visible deployments."""
    return deployment.comments.select_related("author", "removed_by")


def refusal_to_comment(held: Grants, deployment: Deployment) -> DomainError | None:
    """Why the holder of ``held`` may not comment on ``deployment`` (None: they may)."""
    if not held.can(Capability.DEPLOY, deployment.environment.project):
        return Forbidden(WHO_MAY_COMMENT, code="may_not_comment")
    return None


def may_comment(user: AbstractBaseUser, deployment: Deployment) -> bool:
    return refusal_to_comment(Grants.of(user), deployment) is None


def refusal_to_remove(user: AbstractBaseUser, comment: DeploymentComment) -> DomainError | None:
    """Why ``user`` may not remove ``comment`` (None: they may)."""
    held = Grants.of(user)
    if comment.removed_at is not None:
        return Conflict("The comment has already been removed.", code="comment_removed")
    if held.is_organisation_admin:
        return None
    if comment.author_id != user.pk:
        return Forbidden(
            "Only its author and organisation admins may remove a comment.", code="not_own_comment"
        )
    return refusal_to_comment(held, comment.deployment)


def may_remove(user: AbstractBaseUser, comment: DeploymentComment) -> bool:
    return refusal_to_remove(user, comment) is None


def validated_body(body: object) -> str:
    """The body as kept: a string, trimmed, neither empty nor longer than MAX_BODY."""
    if not isinstance(body, str):
        raise Invalid({"body": ["Must be text."]})
    text = body.strip().replace("\r\n", "\n")
    if not text:
        raise Invalid({"body": ["Write something: a comment cannot be empty."]})
    if len(text) > MAX_BODY:
        raise Invalid({"body": [f"At most {MAX_BODY} characters ({len(text)} given)."]})
    if "\x00" in text:
        raise Invalid({"body": ["Must not contain NUL characters."]})
    return text


def post_comment(user: AbstractBaseUser, deployment: Deployment, body: object) -> DeploymentComment:
    """``user`` comments on ``deployment`` (found among their visible deployments)."""
    refusal = refusal_to_comment(Grants.of(user), deployment)
    if refusal is not None:
        raise refusal
    text = validated_body(body)
    with transaction.atomic():
        comment = DeploymentComment.objects.create(deployment=deployment, author=user, body=text)
        audit.record(user, "deployment.commented", deployment, after=_snapshot(comment))
        _notify(comment)
    return comment


def remove_comment(user: AbstractBaseUser, comment: DeploymentComment) -> DeploymentComment:
    """``user`` removes ``comment`` (found in the thread of a deployment they may see): its text is gone."""
    refusal = refusal_to_remove(user, comment)
    if refusal is not None:
        raise refusal
    with transaction.atomic():
        removed = DeploymentComment.objects.filter(pk=comment.pk, removed_at__isnull=True).update(
            removed_at=timezone.now(), removed_by=user, body=""
        )
        if not removed:
            raise Conflict("The comment has already been removed.", code="comment_removed")
        before = _snapshot(comment)
        comment.refresh_from_db()
        audit.record(
            user,
            "deployment.comment_removed",
            comment.deployment,
            before=before,
            after={**before, "removed_by": user.get_username()},
        )
    return comment


def comment_in(deployment: Deployment, comment_id: int) -> DeploymentComment:
    """A comment of ``deployment``'s thread; one of another deployment does not exist here."""
    if not 0 < comment_id < 2**63:  # no row has it (and the database's integer would overflow)
        raise NotFound("No such comment on this deployment.")
    found = thread(deployment).filter(pk=comment_id).first()
    if found is None:
        raise NotFound("No such comment on this deployment.")
    return found


def _snapshot(comment: DeploymentComment) -> dict:
    return {
        "comment": comment.pk,
        "author": comment.author.get_username(),
        "characters": len(comment.body),
    }


def _notify(comment: DeploymentComment) -> list[int]:
    deployment = comment.deployment
    project = deployment.environment.project
    tree = tree_for(project, with_policies=False)
    full_name = tree.full_name(project)
    url = deployment_url(deployment.pk)
    author = comment.author.get_username()
    text = (
        f"{author} commented on deployment #{deployment.pk} of {full_name} / {deployment.environment.name}: "
    )
    document = json.dumps(
        {
            "event": COMMENTED,
            "occurred_at": comment.created_at.isoformat(),
            "deployment": {
                "id": deployment.pk,
                "url": url,
                "status": deployment.status,
                "environment": {"id": deployment.environment_id, "name": deployment.environment.name},
                "project": {"id": project.pk, "full_name": full_name},
            },
            "comment": {"id": comment.pk, "author": author, "body": comment.body},
        },
        sort_keys=True,
    )
    # Comments go only to the webhooks that send every event: one limited to some statuses asked for those.
    return webhooks.queue_event(
        tree,
        project,
        COMMENTED,
        document,
        f"{text}{comment.body} {url}",
        deployment=deployment,
        only_to_every_event=True,
    )
