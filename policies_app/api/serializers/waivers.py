"""Waivers (deployments/waivers.py): what one says, and what granting one takes."""

from rest_framework import serializers

from policies_app import access
from policies_app.api.serializers.fields import VisibleRelatedField
from policies_app.deployments.waivers import MAX_REASON
from policies_app.models import Waiver


class WaiverSerializer(serializers.ModelSerializer):
    policy_name = serializers.CharField(source="policy.name", read_only=True)
    granted_by = serializers.CharField(source="granted_by.username", read_only=True)
    revoked_by = serializers.CharField(source="revoked_by.username", read_only=True, default=None)
    in_force = serializers.SerializerMethodField()

    class Meta:
        model = Waiver
        fields = [
            "id",
            "policy",
            "policy_name",
            "environment",
            "project",
            "reason",
            "granted_by",
            "starts_at",
            "expires_at",
            "revoked_at",
            "revoked_by",
            "in_force",
        ]
        read_only_fields = fields

    def get_in_force(self, waiver: Waiver) -> bool:
        now = self.context["now"]
        return waiver.revoked_at is None and waiver.starts_at <= now < waiver.expires_at


class GrantWaiverSerializer(serializers.Serializer):
    """Exactly one of environment and project; exactly one of hours and expires_at (checked by the use
    case, which names the field)."""

    policy = VisibleRelatedField(access.visible_policies)
    environment = VisibleRelatedField(access.visible_environments, required=False, allow_null=True)
    project = VisibleRelatedField(access.visible_projects, required=False, allow_null=True)
    # Checked by the use case (required, one line), so that a missing reason is answered like a blank one.
    reason = serializers.CharField(
        required=False, allow_blank=True, max_length=MAX_REASON, trim_whitespace=False
    )
    hours = serializers.FloatField(
        required=False, allow_null=True, help_text="How long it holds (at most WAIVER_MAX_HOURS)."
    )
    expires_at = serializers.DateTimeField(required=False, allow_null=True)
