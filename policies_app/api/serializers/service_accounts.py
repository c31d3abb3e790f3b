"""Service accounts and their tokens (the key shown once, when a token is made or rotated)."""

from rest_framework import serializers

from policies_app import access
from policies_app.api.serializers.fields import VisibleIdField, VisibleRelatedField
from policies_app.models import ApiToken, ServiceAccount

CAPABILITIES = ["read", "deploy", "approve"]


class ServiceAccountTokenSerializer(serializers.ModelSerializer):
    project = serializers.PrimaryKeyRelatedField(source="scope_project", read_only=True)

    class Meta:
        model = ApiToken
        fields = [
            "id",
            "name",
            "prefix",
            "capabilities",
            "project",
            "created_at",
            "expires_at",
            "last_used_at",
        ]
        read_only_fields = fields


class ServiceAccountTokenCreatedSerializer(ServiceAccountTokenSerializer):
    key = serializers.CharField(read_only=True, help_text="Shown this once: only a hash is kept.")

    class Meta(ServiceAccountTokenSerializer.Meta):
        fields = [*ServiceAccountTokenSerializer.Meta.fields, "key"]
        read_only_fields = fields


class ServiceAccountTokenCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")
    capabilities = serializers.ListField(
        child=serializers.ChoiceField(choices=CAPABILITIES),
        required=False,
        help_text="Default read and deploy; approve only if the account may approve.",
    )
    project = VisibleIdField(
        access.visible_projects,
        required=False,
        allow_null=True,
        default=None,
        help_text="The subtree the token acts in; default the account's project.",
    )
    expires_in_days = serializers.IntegerField(
        required=False, allow_null=True, default=None, help_text="Default API_TOKEN_DEFAULT_DAYS (90)."
    )


class TokenRotateSerializer(serializers.Serializer):
    expires_in_days = serializers.IntegerField(required=False, allow_null=True, default=None)


class ServiceAccountSerializer(serializers.ModelSerializer):
    project = VisibleRelatedField(access.visible_projects)
    username = serializers.CharField(source="user.username", read_only=True)
    tokens = ServiceAccountTokenSerializer(many=True, read_only=True)

    class Meta:
        model = ServiceAccount
        fields = ["id", "project", "name", "description", "may_approve", "username", "created_at", "tokens"]
        read_only_fields = ["username", "created_at", "tokens"]
        validators = []


class ServiceAccountChangeSerializer(serializers.Serializer):
    description = serializers.CharField(max_length=500, required=False, allow_blank=True)
    may_approve = serializers.BooleanField(required=False)
