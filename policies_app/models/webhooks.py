from django.conf import settings
from django.db import models

from policies_app.choices import DeliveryStatus, WebhookFormat
from policies_app.guards.encryption import EncryptedTextField


class Webhook(models.Model):
    """An address told of every status change of the deployments of a project and its sub-projects.

    Each request is signed with the secret as Standard Webhooks says (``webhook-signature``: HMAC-SHA256
    of the message id, timestamp and body), so the receiver can tell it comes from the platform, now."""

    project = models.ForeignKey("Project", on_delete=models.CASCADE, related_name="webhooks")
    name = models.CharField(max_length=200)
    url = models.URLField(max_length=1000)
    # ``whsec_`` and base64 of the key (Standard Webhooks), encrypted at rest.
    secret = EncryptedTextField()
    format = models.CharField(max_length=10, choices=WebhookFormat.choices, default=WebhookFormat.JSON)
    # Deployment statuses to send; empty: every change of status.
    statuses = models.JSONField(default=list, blank=True)
    active = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="webhook_unique_name_in_project")
        ]

    def __str__(self) -> str:
        return f"webhook {self.name} of {self.project}"


class WebhookDelivery(models.Model):
    """One message to a webhook: the outbox row written with the status change, and its history.

    ``body`` is kept as sent, so every retry sends (and signs) the same bytes."""

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    deployment = models.ForeignKey(
        "Deployment", null=True, blank=True, on_delete=models.SET_NULL, related_name="webhook_deliveries"
    )
    event = models.CharField(max_length=40)
    body = models.TextField()
    status = models.CharField(max_length=10, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    response_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    # When the last attempt was made (the first is after ``created_at``; retries double the wait).
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    # A delivery an admin sent again: the new one sends the same body, signed anew.
    resent_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="resends"
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "webhook deliveries"

    def __str__(self) -> str:
        return f"{self.event} to {self.webhook.name}: {self.status}"
