"""Users, teams, API tokens (the key shown once) and one's own account."""

from rest_framework import serializers

from policies_app.api.serializers.fields import User
from policies_app.choices import EmailMode, OrganisationRole
from policies_app.models import ApiToken, GroupTeamMapping, Team, TeamMembership


class TeamMemberSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = TeamMembership
        fields = ["username", "source", "source_group", "added_at"]
        read_only_fields = fields


class TeamRoleSerializer(serializers.Serializer):
    project = serializers.IntegerField(source="project_id", read_only=True)
    project_name = serializers.CharField(source="project.name", read_only=True)
    role = serializers.CharField(read_only=True)


class TeamSerializer(serializers.ModelSerializer):
    members = serializers.SlugRelatedField(
        many=True, slug_field="username", queryset=User.objects.all(), required=False
    )
    memberships = TeamMemberSerializer(
        source="team_memberships", many=True, read_only=True, help_text="Each member and where it came from."
    )
    roles = TeamRoleSerializer(
        source="memberships", many=True, read_only=True, help_text="Where the team holds roles."
    )
    groups = serializers.SlugRelatedField(
        source="group_mappings",
        many=True,
        slug_field="group",
        read_only=True,
        help_text="Mapped provider groups.",
    )

    class Meta:
        model = Team
        fields = ["id", "name", "description", "members", "memberships", "roles", "groups"]


class GroupTeamMappingSerializer(serializers.ModelSerializer):
    team = serializers.SlugRelatedField(slug_field="name", queryset=Team.objects.all())

    class Meta:
        model = GroupTeamMapping
        fields = ["id", "group", "team", "created_at"]
        read_only_fields = ["created_at"]
        validators = []


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
