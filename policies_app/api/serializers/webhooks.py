"""Project webhooks (their secret shown once, at creation) and their deliveries."""

from rest_framework import serializers

from policies_app import access
from policies_app.api.serializers.fields import VisibleRelatedField
from policies_app.choices import DeploymentStatus
from policies_app.models import Webhook, WebhookDelivery
from policies_app.notifications import webhook_history


class WebhookSerializer(serializers.ModelSerializer):
    project = VisibleRelatedField(access.visible_projects)
    secret = serializers.CharField(
        write_only=True,
        required=False,
        allow_blank=True,
        max_length=200,
        help_text="Signs each request as Standard Webhooks says: whsec_ and base64 of 24 to 64 bytes. "
        "Empty on create: one is made (and shown once, in the answer); on update: kept.",
    )
    statuses = serializers.ListField(
        child=serializers.ChoiceField(choices=DeploymentStatus.choices), required=False
    )

    class Meta:
        model = Webhook
        fields = ["id", "project", "name", "url", "secret", "format", "statuses", "active", "created_at"]
        read_only_fields = ["created_at"]
        validators = []


class WebhookCreatedSerializer(WebhookSerializer):
    """The answer to a create: the only time the secret is shown."""

    secret = serializers.CharField(read_only=True)


class WebhookDeliverySerializer(serializers.ModelSerializer):
    class Meta:
        model = WebhookDelivery
        fields = [
            "id",
            "event",
            "deployment",
            "status",
            "attempts",
            "response_code",
            "error",
            "next_attempt_at",
            "created_at",
            "delivered_at",
            "last_attempt_at",
            "resent_from",
            "body",
        ]


class WebhookDeliveryDetailSerializer(WebhookDeliverySerializer):
    """One delivery opened: also the headers of its last attempt (the signature masked)."""

    request_headers = serializers.SerializerMethodField()

    class Meta(WebhookDeliverySerializer.Meta):
        fields = [*WebhookDeliverySerializer.Meta.fields, "request_headers"]

    def get_request_headers(self, delivery: WebhookDelivery) -> dict[str, str]:
        return webhook_history.shown_request_headers(delivery)
