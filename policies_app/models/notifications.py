from django.conf import settings
from django.db import models

from policies_app.choices import DeliveryStatus, EmailMode


class NotificationPreference(models.Model):
    """How a user wants to hear that deployments wait for them; without a row, at once."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_preference"
    )
    email = models.CharField(max_length=20, choices=EmailMode.choices, default=EmailMode.IMMEDIATELY)
    last_digest_sent_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.user}: {self.email}"


class ApprovalRequestEmail(models.Model):
    """The outbox of "a deployment waits for you" emails: written in the transaction that makes the
    deployment wait, sent after commit, and sent again by the periodic sweep if that send was lost.
    Digest rows wait for the user's daily digest."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    deployment = models.ForeignKey("Deployment", on_delete=models.CASCADE, related_name="approval_emails")
    digest = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True, db_index=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["user", "deployment"], name="approval_email_once_per_user")
        ]

    def __str__(self) -> str:
        return f"deployment #{self.deployment_id} to {self.user}"


class InvitationEmail(models.Model):
    """The outbox of invitations (an account made without a password): written with the account, sent
    after commit, and sent again by the periodic sweep if that send was lost or the mail server was down."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True, db_index=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"invitation of {self.user}"


class SlackApprovalMessage(models.Model):
    """The outbox of Slack approval messages (notifications/slack.py): written in the transaction that makes
    the deployment wait, posted after commit with ``chat.postMessage`` (retried by the periodic sweep), then
    the channel and ``ts`` Slack gave it, so the message can be updated in place."""

    deployment = models.OneToOneField("Deployment", on_delete=models.CASCADE, related_name="slack_message")
    channel = models.CharField(max_length=40)
    ts = models.CharField(max_length=40, blank=True)
    status = models.CharField(max_length=10, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    # The failure's class (a Slack error code such as ``channel_not_found``, or "unreachable"), never a token.
    error = models.CharField(max_length=200, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)
    posted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"slack message for deployment #{self.deployment_id}: {self.status}"
