"""Users, teams, API tokens (the key shown once) and one's own account."""

from rest_framework import serializers

from policies_app.api.serializers.fields import User
from policies_app.choices import EmailMode, OrganisationRole
from policies_app.models import ApiToken, Team


class TeamSerializer(serializers.ModelSerializer):
    members = serializers.SlugRelatedField(
        many=True, slug_field="username", queryset=User.objects.all(), required=False
    )

    class Meta:
        model = Team
        fields = ["id", "name", "description", "members"]


class AccountSerializer(serializers.ModelSerializer):
    organisation_role = serializers.SerializerMethodField()

    class Meta:
        model = User
        fields = [
            "id",
            "username",
            "email",
            "first_name",
            "last_name",
            "is_active",
            "organisation_role",
            "last_login",
        ]

    def get_organisation_role(self, account) -> str | None:
        role = getattr(account, "organisation_role", None)
        return role.role if role else None


class AccountCreateSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    email = serializers.EmailField(required=False, allow_blank=True, default="")
    first_name = serializers.CharField(required=False, allow_blank=True, default="", max_length=150)
    last_name = serializers.CharField(required=False, allow_blank=True, default="", max_length=150)
    password = serializers.CharField(
        required=False, allow_blank=True, default="", write_only=True, help_text="Empty: invite by email."
    )
    organisation_role = serializers.ChoiceField(
        choices=OrganisationRole.choices, required=False, allow_blank=True, default=""
    )


class AccountChangeSerializer(serializers.Serializer):
    is_active = serializers.BooleanField(required=False)
    email = serializers.EmailField(required=False)
    organisation_role = serializers.ChoiceField(
        choices=OrganisationRole.choices, required=False, allow_blank=True, help_text='"" takes it away.'
    )


class ApiTokenSerializer(serializers.ModelSerializer):
    expires_in_days = serializers.IntegerField(
        write_only=True, required=False, allow_null=True, default=None, help_text="Default 90 days."
    )

    class Meta:
        model = ApiToken
        fields = ["id", "name", "prefix", "created_at", "last_used_at", "expires_at", "expires_in_days"]
        read_only_fields = ["prefix", "created_at", "last_used_at", "expires_at"]
        validators = []


class ApiTokenCreatedSerializer(ApiTokenSerializer):
    key = serializers.CharField(read_only=True, help_text="Shown this once: only a hash is kept.")

    class Meta(ApiTokenSerializer.Meta):
        fields = [*ApiTokenSerializer.Meta.fields, "key"]


class MeSerializer(serializers.Serializer):
    username = serializers.CharField(read_only=True)
    email = serializers.EmailField(read_only=True)
    email_notifications = serializers.ChoiceField(choices=EmailMode.choices)
