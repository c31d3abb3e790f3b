"""Policy repositories (whose secrets are write-only) and sync requests."""

from rest_framework import serializers

from policies_app.models import PolicyRepository
from policies_app.policies.git.repositories import REVIEW_FIELDS, SECRET_FIELDS


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
    review_token = serializers.CharField(
        required=False,
        allow_blank=True,
        write_only=True,
        help_text="A GitHub or GitLab token that may post commit statuses and pull request comments.",
    )

    class Meta:
        model = PolicyRepository
        fields = ["id", "name", "url", "username", *REVIEW_FIELDS, *SECRET_FIELDS, "created_at"]
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
