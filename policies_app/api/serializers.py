from django.contrib.auth import get_user_model
from rest_framework import serializers

from ..choices import DeploymentType, RegoVersion, Role, TriggerName
from ..evaluation import approves_automatically, effective_policies, inherited_policies
from ..models import (
    Approval,
    ApprovalPolicy,
    Deployment,
    Environment,
    Evaluation,
    PolicyRevision,
    Project,
    ProjectMembership,
    Team,
    Template,
)
from ..models.projects import CYCLE_MESSAGE

User = get_user_model()


class ProjectSerializer(serializers.ModelSerializer):
    approval_policies = serializers.PrimaryKeyRelatedField(
        many=True, queryset=ApprovalPolicy.objects.all(), required=False
    )
    inherited_policies = serializers.SerializerMethodField()

    class Meta:
        model = Project
        fields = [
            "id",
            "name",
            "description",
            "parent",
            "approval_policies",
            "inherited_policies",
            "allow_self_approval",
            "created_at",
        ]
        read_only_fields = ["created_at"]
        validators = []  # uniqueness among siblings is checked in validate() with a field-level message

    def get_inherited_policies(self, project: Project) -> list[int]:
        return sorted(policy.pk for policy, _ in inherited_policies(project))

    def validate(self, attrs: dict) -> dict:
        parent = attrs.get("parent", getattr(self.instance, "parent", None))
        name = attrs.get("name", getattr(self.instance, "name", None))
        siblings = Project.objects.filter(parent=parent, name=name)
        if self.instance is not None:
            siblings = siblings.exclude(pk=self.instance.pk)
            if self.instance.makes_cycle_under(parent):
                raise serializers.ValidationError({"parent": CYCLE_MESSAGE})
        if siblings.exists():
            raise serializers.ValidationError({"name": "A sibling project already has this name."})
        return attrs


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


class TemplateSerializer(serializers.ModelSerializer):
    approval_policies = serializers.PrimaryKeyRelatedField(
        many=True, queryset=ApprovalPolicy.objects.all(), required=False
    )

    class Meta:
        model = Template
        fields = [
            "id",
            "name",
            "type",
            "repository",
            "path",
            "revision",
            "archive",
            "approval_policies",
            "created_at",
        ]
        read_only_fields = ["archive", "created_at"]


class EnvironmentSerializer(serializers.ModelSerializer):
    approval_policies_apply = serializers.BooleanField(read_only=True, default=False)

    class Meta:
        model = Environment
        fields = [
            "id",
            "name",
            "project",
            "template",
            "approve_plans_automatically",
            "approval_policies_apply",
            "environment_variables",
            "terraform_variables",
            "created_at",
        ]
        read_only_fields = ["created_at"]

    def to_representation(self, environment: Environment) -> dict:
        data = super().to_representation(environment)
        applying = effective_policies(environment)
        data["approval_policies_apply"] = bool(applying)
        # Under any policy, automatic approval is off whatever was asked for; say so rather than pretend.
        data["approve_plans_automatically"] = approves_automatically(environment, applying)
        return data

    def validate_environment_variables(self, value):
        return _string_keyed_object(value)

    def validate_terraform_variables(self, value):
        return _string_keyed_object(value)


def _string_keyed_object(value):
    if not isinstance(value, dict):
        raise serializers.ValidationError("Must be an object of variable names to values.")
    return value


class PolicyModuleSerializer(serializers.Serializer):
    filename = serializers.CharField(max_length=200)
    source = serializers.CharField(trim_whitespace=False)


class PolicyRevisionSerializer(serializers.ModelSerializer):
    modules = PolicyModuleSerializer(many=True, read_only=True)
    created_by = serializers.CharField(source="created_by.username", default=None, read_only=True)

    class Meta:
        model = PolicyRevision
        fields = ["id", "number", "rego_version", "data", "modules", "created_by", "created_at"]


class PolicySerializer(serializers.ModelSerializer):
    """Create or revise a policy: every write becomes a new immutable revision."""

    rego_version = serializers.ChoiceField(
        choices=RegoVersion.choices, default=RegoVersion.V1, write_only=True
    )
    modules = PolicyModuleSerializer(many=True, write_only=True, required=False)
    data = serializers.JSONField(required=False, allow_null=True, write_only=True)
    latest_revision = PolicyRevisionSerializer(read_only=True)
    revision_count = serializers.IntegerField(source="revisions.count", read_only=True)

    class Meta:
        model = ApprovalPolicy
        fields = [
            "id",
            "name",
            "description",
            "rego_version",
            "modules",
            "data",
            "latest_revision",
            "revision_count",
            "created_at",
        ]
        read_only_fields = ["created_at"]
        extra_kwargs = {"name": {"validators": []}}

    def validate_data(self, value):
        if value is not None and not isinstance(value, dict):
            raise serializers.ValidationError("Policy data must be a JSON object (it becomes data.*).")
        return value

    def validate(self, attrs: dict) -> dict:
        if self.instance is None and not attrs.get("modules"):
            raise serializers.ValidationError({"modules": "At least one Rego module is required."})
        return attrs


class DryRunSerializer(serializers.Serializer):
    input = serializers.JSONField()

    def validate_input(self, value):
        if not isinstance(value, dict):
            raise serializers.ValidationError(
                "The input must be a JSON object, like a deployment's policy input."
            )
        return value


class TeamSerializer(serializers.ModelSerializer):
    members = serializers.SlugRelatedField(
        many=True, slug_field="username", queryset=User.objects.all(), required=False
    )

    class Meta:
        model = Team
        fields = ["id", "name", "description", "members"]


class CostEstimationSerializer(serializers.Serializer):
    total_monthly_cost = serializers.FloatField(required=False, allow_null=True)
    monthly_cost_diff = serializers.FloatField(required=False, allow_null=True)


class DeploymentVariablesSerializer(serializers.Serializer):
    environment = serializers.DictField(required=False, default=dict)
    terraform = serializers.DictField(required=False, default=dict)


class TriggerDeploymentSerializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=DeploymentType.choices, default=DeploymentType.DEPLOY)
    trigger_name = serializers.ChoiceField(choices=TriggerName.choices, default=TriggerName.USER)
    revision = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)
    plan = serializers.JSONField(required=False, allow_null=True, default=None)
    cost_estimation = CostEstimationSerializer(required=False, default=dict)
    variables = DeploymentVariablesSerializer(required=False, default=dict)
    policy_data = serializers.JSONField(required=False, allow_null=True, default=None)
    idempotency_key = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)

    def validate_plan(self, plan):
        if plan is not None and not isinstance(plan, dict):
            raise serializers.ValidationError("The plan must be a JSON object or null.")
        return plan


class ApprovalSerializer(serializers.ModelSerializer):
    user = serializers.CharField(source="user.username")

    class Meta:
        model = Approval
        fields = ["id", "user", "decision", "comment", "created_at"]


class EvaluationSerializer(serializers.ModelSerializer):
    policy_revisions = serializers.SerializerMethodField()

    class Meta:
        model = Evaluation
        fields = [
            "id",
            "request_type",
            "decision",
            "messages",
            "outcomes",
            "error",
            "engine",
            "duration_ms",
            "policy_revisions",
            "created_at",
        ]

    def get_policy_revisions(self, evaluation: Evaluation) -> list[dict]:
        return [
            {"policy": r.policy_id, "name": r.policy.name, "revision": r.number}
            for r in evaluation.policy_revisions.select_related("policy")
        ]


class DeploymentSerializer(serializers.ModelSerializer):
    deployer = serializers.CharField(source="deployer.username")
    cost_estimation = serializers.SerializerMethodField()
    evaluations = EvaluationSerializer(many=True, read_only=True)
    approvals = ApprovalSerializer(many=True, read_only=True)

    class Meta:
        model = Deployment
        fields = [
            "id",
            "environment",
            "type",
            "trigger_name",
            "revision",
            "status",
            "decision",
            "messages",
            "error",
            "deployer",
            "cost_estimation",
            "idempotency_key",
            "evaluations",
            "approvals",
            "created_at",
            "released_at",
            "completed_at",
        ]

    def get_cost_estimation(self, deployment: Deployment) -> dict:
        return {
            "total_monthly_cost": deployment.total_monthly_cost,
            "monthly_cost_diff": deployment.monthly_cost_diff,
        }


class ApprovalRequestSerializer(serializers.Serializer):
    comment = serializers.CharField(required=False, allow_blank=True, default="")


class CompleteDeploymentSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["succeeded", "failed"])
    state = serializers.JSONField(required=False, allow_null=True, default=None)

    def validate_state(self, state):
        if state is not None and not isinstance(state, dict):
            raise serializers.ValidationError("The state must be a JSON object or null.")
        return state


class StateUploadSerializer(serializers.Serializer):
    state = serializers.JSONField()
    force = serializers.BooleanField(default=False)

    def validate_state(self, state):
        if not isinstance(state, dict):
            raise serializers.ValidationError("The state must be a JSON object.")
        return state
