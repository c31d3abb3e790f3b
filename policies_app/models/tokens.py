from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    """One of a user's API tokens (a user may hold several, one per pipeline).

    Only a hash of the key is stored: the key is shown once, when the token is created."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(
        max_length=12, db_index=True, help_text="The key's first characters, to recognise it."
    )
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="After this the key is refused (401); empty only for tokens made before expiry existed.",
    )
    # A service account's token acts as the account's user; its scope below bounds what it may do.
    service_account = models.ForeignKey(
        "policies_app.ServiceAccount", null=True, blank=True, on_delete=models.CASCADE, related_name="tokens"
    )
    capabilities = models.JSONField(
        default=list, blank=True, help_text="Capabilities the token may use; empty: all of its user's."
    )
    scope_project = models.ForeignKey(
        "policies_app.Project",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        help_text="The subtree where the token may act; empty: wherever its user may.",
    )

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["user", "name"], name="api_token_unique_name_per_user")
        ]

    def __str__(self) -> str:
        return f"{self.user}'s token {self.name}"


class LegacyApiToken(models.Model):
    """A token of the older kind, one per user (Django REST framework's, before named tokens existed),
    still accepted until its user revokes it. Like a named token it is kept only as a hash; its key has
    no ``pp_`` prefix (40 hexadecimal characters) and its use is not recorded."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="legacy_api_tokens"
    )
    prefix = models.CharField(max_length=12, db_index=True, help_text="The key's first characters.")
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.user}'s older token"


class ServiceAccount(models.Model):
    """A machine identity owned by a project (a pipeline, the gate): it acts through its own user, which
    holds no role and signs in with no password, and only through tokens scoped to capabilities and to a
    subtree of its project (accounts/service_accounts.py)."""

    project = models.ForeignKey(
        "policies_app.Project", on_delete=models.CASCADE, related_name="service_accounts"
    )
    name = models.CharField(max_length=63)
    description = models.CharField(max_length=500, blank=True, default="")
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="service_account"
    )
    may_approve = models.BooleanField(
        default=False, help_text="Given explicitly by an admin of the project: tokens may then approve."
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project_id", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "name"], name="service_account_unique_name_per_project"
            )
        ]

    def __str__(self) -> str:
        return self.name
