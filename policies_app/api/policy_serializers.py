"""Serializers of policies as code: repositories (whose secrets are write-only), syncs, tests,
replays, publishing, the editor's check and the catalog. They parse; the use cases decide."""

from typing import Any

from django.conf import settings
from rest_framework import serializers

from policies_app.api.serializers import PolicyModuleSerializer
from policies_app.choices import RegoVersion
from policies_app.models import PolicyReplay, PolicyRepository
from policies_app.policies.git.sources import SECRET_FIELDS


class PolicyRepositorySerializer(serializers.ModelSerializer):
    """A repository; its secrets can be set or removed (empty), never read back."""

    password = serializers.CharField(required=False, allow_blank=True, write_only=True, trim_whitespace=False)
    ssh_private_key = serializers.CharField(
        required=False, allow_blank=True, write_only=True, trim_whitespace=False
    )
    ssh_known_hosts = serializers.CharField(required=False, allow_blank=True, write_only=True)
    webhook_secret = serializers.CharField(
        required=False, allow_blank=True, write_only=True, trim_whitespace=False
    )

    class Meta:
        model = PolicyRepository
        fields = ["id", "name", "url", "username", *SECRET_FIELDS, "created_at"]
        read_only_fields = ["created_at"]
        extra_kwargs = {"name": {"validators": []}, "url": {"required": False}}

    def to_representation(self, repository: PolicyRepository) -> dict:
        data = super().to_representation(repository)
        for name in SECRET_FIELDS:
            data[f"has_{name}"] = bool(getattr(repository, name))
        return data


class SyncRequestSerializer(serializers.Serializer):
    revision = serializers.CharField(
        required=False,
        allow_blank=True,
        help_text="Sync this branch, tag or commit instead of the policy's, as a draft of this policy.",
    )
    draft = serializers.BooleanField(
        required=False, default=False, help_text="Do not activate the new revision."
    )


class PolicyTestRunSerializer(serializers.Serializer):
    revision = serializers.IntegerField(required=False, help_text="Default: the newest revision.")


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


class PublishSerializer(serializers.Serializer):
    revision = serializers.IntegerField()


class CheckSerializer(serializers.Serializer):
    """What the editor holds: checked as one types, never stored."""

    rego_version = serializers.ChoiceField(choices=RegoVersion.choices, default=RegoVersion.V1)
    modules = serializers.ListField(child=serializers.DictField(), allow_empty=True)
    data = serializers.JSONField(required=False, allow_null=True)


class InstallSerializer(serializers.Serializer):
    entry = serializers.CharField(help_text="The catalog entry's slug, e.g. require-approvers.")
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True)
    parameters = serializers.JSONField(required=False, default=dict)


def catalog_entry_view(entry: Any) -> dict[str, Any]:
    return {
        "entry": entry.slug,
        "title": entry.title,
        "description": entry.description,
        "parameters_schema": entry.schema,
        "defaults": entry.defaults(),
        "modules": [filename for filename, _ in entry.modules],
    }
