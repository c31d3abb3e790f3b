"""Who a user is at the organisation's identity provider, and which provider groups make team members."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from policies_app.models.projects import Team


class SsoIdentity(models.Model):
    """The account at the identity provider (issuer and subject, stable and never reassigned) that
    signs in as this user. Single sign-on finds users by this, never by a name or address the
    provider's users may change themselves."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identities"
    )
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)
    last_sign_in_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="sso_identity_once")]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"


class GroupTeamMapping(models.Model):
    """A group of the identity provider (as its groups claim or SCIM names it) whose members belong to
    a platform team. Kept by organisation admins (API and the teams page)."""

    group = models.CharField(max_length=255)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="group_mappings")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["group", "team__name"]
        constraints = [models.UniqueConstraint(fields=["group", "team"], name="group_team_mapping_once")]

    def __str__(self) -> str:
        return f"{self.group} → {self.team}"


def _new_scim_id() -> str:
    return str(uuid.uuid4())


class ScimUser(models.Model):
    """A user as the identity provider's SCIM client provisions it: its id there (ours, a UUID) and the
    client's own identifiers. The platform user is made and changed through it."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="scim")
    scim_id = models.CharField(max_length=64, unique=True, default=_new_scim_id)
    scim_external_id = models.CharField(max_length=255, blank=True)
    scim_username = models.CharField(max_length=255, unique=True)

    def __str__(self) -> str:
        return self.scim_username


class ScimGroup(models.Model):
    """A group pushed by SCIM. It grants nothing by itself: its members join the teams its name is mapped
    to (GroupTeamMapping), with source SCIM. Kept apart from Django's auth groups, which carry permissions."""

    scim_id = models.CharField(max_length=64, unique=True, default=_new_scim_id)
    scim_external_id = models.CharField(max_length=255, blank=True)
    name = models.CharField(max_length=255)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="scim_groups")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
