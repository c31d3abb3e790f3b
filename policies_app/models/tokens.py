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
