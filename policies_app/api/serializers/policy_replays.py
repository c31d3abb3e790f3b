"""Replays of a revision over recorded deployments."""

from django.conf import settings
from rest_framework import serializers

from policies_app.api.serializers.policies import PolicyModuleSerializer
from policies_app.choices import RegoVersion
from policies_app.models import PolicyReplay


class ReplayRequestSerializer(serializers.Serializer):
    revision = serializers.IntegerField(required=False, help_text="An existing revision (usually a draft).")
    modules = PolicyModuleSerializer(many=True, required=False, help_text="Saved first as a draft revision.")
    rego_version = serializers.ChoiceField(choices=RegoVersion.choices, required=False)
    data = serializers.JSONField(required=False, allow_null=True)
    limit = serializers.IntegerField(
        required=False,
        min_value=1,
        help_text=f"Deployments to replay (default {settings.POLICY_REPLAY_LIMIT}).",
    )
    environments = serializers.ListField(
        child=serializers.IntegerField(min_value=1),
        required=False,
        max_length=100,
        help_text="Replay over these environments instead of those the policy applies to (a policy "
        "attached nowhere yet).",
    )


class PolicyReplaySerializer(serializers.ModelSerializer):
    revision = serializers.IntegerField(source="revision.number", read_only=True)
    draft = serializers.BooleanField(source="revision.draft", read_only=True)
    requested_by = serializers.CharField(source="requested_by.username", default=None, read_only=True)

    class Meta:
        model = PolicyReplay
        fields = [
            "id",
            "revision",
            "draft",
            "status",
            "limit",
            "environment_ids",
            "total",
            "replayed",
            "error",
            "requested_by",
            "created_at",
            "started_at",
            "finished_at",
            "result",
        ]

    def to_representation(self, replay: PolicyReplay) -> dict:
        data = super().to_representation(replay)
        if not self.context.get("with_result", True):
            result = data.pop("result") or {}
            data["changed_count"] = result.get("changed_count")
            data["counts"] = result.get("counts")
        return data
