"""Projects, their members and the policies attached to them."""

from rest_framework import serializers

from policies_app import access
from policies_app.api.serializers.fields import (
    TreeListSerializer,
    TreeSerializerMixin,
    User,
    VisibleIdField,
    VisibleRelatedField,
)
from policies_app.choices import Role
from policies_app.models import Project, ProjectMembership, Team
from policies_app.projects.windows import (
    approval_carry_over_hours,
    pending_expiry_hours,
    release_expiry_hours,
)


class ProjectSerializer(TreeSerializerMixin, serializers.ModelSerializer):
    parent = VisibleRelatedField(access.visible_projects, required=False, allow_null=True)
    approval_policies = VisibleRelatedField(access.visible_policies, many=True, required=False)
    full_name = serializers.CharField(read_only=True)
    inherited_policies = serializers.ListField(child=serializers.IntegerField(), read_only=True)
    self_approval_allowed = serializers.BooleanField(
        read_only=True,
        help_text="Whether this project or a parent lets deployers approve their own deployments.",
    )
    pending_expiry_hours = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        help_text="Hours a deployment may wait for approval; null inherits the parent's or the default.",
    )
    effective_pending_expiry_hours = serializers.FloatField(read_only=True)
    release_expiry_hours = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        help_text="Hours a released deployment may wait for the pipeline to complete it before it expires "
        "and frees its environment; null inherits the parent's or the default.",
    )
    effective_release_expiry_hours = serializers.FloatField(read_only=True)
    approval_carry_over_hours = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        help_text="Hours during which approvals carry over to a new deployment with the same plan, policy "
        "revisions and policy data (0: never); null inherits the parent's or the default (off).",
    )
    effective_approval_carry_over_hours = serializers.FloatField(read_only=True)

    class Meta:
        model = Project
        fields = [
            "id",
            "name",
            "full_name",
            "description",
            "parent",
            "approval_policies",
            "inherited_policies",
            "allow_self_approval",
            "self_approval_allowed",
            "pending_expiry_hours",
            "effective_pending_expiry_hours",
            "release_expiry_hours",
            "effective_release_expiry_hours",
            "approval_carry_over_hours",
            "effective_approval_carry_over_hours",
            "created_at",
        ]
        read_only_fields = ["created_at"]
        validators = []  # uniqueness among siblings is the use case's, with a field-level message
        list_serializer_class = TreeListSerializer

    def project_of(self, project: Project) -> Project:
        return project

    def to_representation(self, project: Project) -> dict:
        tree = self.tree(project)
        return {
            "id": project.pk,
            "name": project.name,
            "full_name": tree.full_name(project),
            "description": project.description,
            "parent": project.parent_id,
            "approval_policies": sorted(a.policy_id for a in tree.own_attachments(project)),
            "inherited_policies": sorted(
                inherited.policy.pk for inherited in tree.inherited_policies(project)
            ),
            "allow_self_approval": project.allow_self_approval,
            "self_approval_allowed": tree.self_approval_allowed(project),
            "pending_expiry_hours": project.pending_expiry_hours,
            "effective_pending_expiry_hours": pending_expiry_hours(tree, project),
            "release_expiry_hours": project.release_expiry_hours,
            "effective_release_expiry_hours": release_expiry_hours(tree, project),
            "approval_carry_over_hours": project.approval_carry_over_hours,
            "effective_approval_carry_over_hours": approval_carry_over_hours(tree, project),
            "created_at": serializers.DateTimeField().to_representation(project.created_at),
        }


class MembershipSerializer(serializers.Serializer):
    username = serializers.CharField(required=False)
    team = serializers.PrimaryKeyRelatedField(queryset=Team.objects.all(), required=False)
    role = serializers.ChoiceField(choices=Role.choices)

    def validate_username(self, value: str):
        user = User.objects.filter(username=value).first()
        if user is None:
            raise serializers.ValidationError(f"No user is named {value!r}.")
        return user

    def validate(self, attrs: dict) -> dict:
        if ("username" in attrs) == ("team" in attrs):
            raise serializers.ValidationError({"username": "Give either a username or a team."})
        return attrs


class MembershipReadSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", default=None)

    class Meta:
        model = ProjectMembership
        fields = ["id", "project", "username", "team", "role"]


class PolicyAttachmentSerializer(serializers.Serializer):
    policy = VisibleIdField(access.visible_policies, help_text="The id of the policy to attach.")
