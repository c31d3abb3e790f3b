"""Serializers parse and show; the use cases decide. Lists of tree-shaped objects share one ProjectTree,
so a page of projects or environments costs the same few queries whatever its length."""

from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Count, F, Manager, OuterRef, Prefetch, QuerySet, Subquery
from django.db.models.functions import Coalesce
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from policies_app import access
from policies_app.choices import (
    DeploymentStatus,
    DeploymentType,
    EmailMode,
    Enforcement,
    OrganisationRole,
    RegoVersion,
    Role,
    TriggerName,
)
from policies_app.deployments.evaluation import approves_automatically
from policies_app.deployments.lifecycle import pending_expiry_hours, queued_reason
from policies_app.models import (
    ApiToken,
    Approval,
    ApprovalPolicy,
    AuditEntry,
    Deployment,
    Environment,
    Evaluation,
    PolicyRepository,
    PolicyRevision,
    Project,
    ProjectMembership,
    Team,
    Template,
    Webhook,
    WebhookDelivery,
)
from policies_app.policies.authoring import activation_refusal
from policies_app.projects.environments import masked
from policies_app.projects.tree import ProjectTree

User = get_user_model()


class VisibleRelatedField(serializers.PrimaryKeyRelatedField):
    """A reference to another object, accepted only when the requesting user may see it: an unseen one
    "does not exist" (400), exactly like one that does not."""

    def __init__(self, visible: Any, **kwargs: Any) -> None:
        self.visible = visible  # access.visible_* function
        super().__init__(**kwargs)

    def get_queryset(self) -> QuerySet:
        return self.visible(self.context["request"].user)


class TreeListSerializer(serializers.ListSerializer):
    """Loads the project tree around every item of the list once, for the child serializer to read."""

    def to_representation(self, data: Any) -> list:
        items = list(data.all() if isinstance(data, (Manager, QuerySet)) else data)
        self.context["tree"] = ProjectTree.around(self.child.project_of(item) for item in items)
        return super().to_representation(items)


class TreeSerializerMixin:
    def project_of(self, instance: Any) -> Project:
        raise NotImplementedError

    def tree(self, instance: Any) -> ProjectTree:
        tree = self.context.get("tree")
        if tree is None or self.project_of(instance).pk not in tree.projects:
            tree = ProjectTree.around([self.project_of(instance)])
        return tree


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


class TemplateSerializer(serializers.ModelSerializer):
    approval_policies = VisibleRelatedField(access.visible_policies, many=True, required=False)
    provider_schema = serializers.JSONField(
        required=False,
        allow_null=True,
        write_only=True,
        help_text="`terraform providers schema -json` output",
    )
    has_provider_schema = serializers.SerializerMethodField()

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
            "provider_schema",
            "has_provider_schema",
            "created_at",
        ]
        read_only_fields = ["archive", "created_at"]
        validators = []  # the name's uniqueness is the use case's

    def get_has_provider_schema(self, template: Template) -> bool:
        return template.provider_schema is not None


class VariablesField(serializers.JSONField):
    def to_internal_value(self, data: Any) -> dict:
        value = super().to_internal_value(data)
        if not isinstance(value, dict):
            raise serializers.ValidationError("Must be an object of variable names to values.")
        return value


class EnvironmentSerializer(TreeSerializerMixin, serializers.ModelSerializer):
    project = VisibleRelatedField(access.visible_projects)
    template = VisibleRelatedField(access.visible_templates)
    environment_variables = VariablesField(required=False)
    terraform_variables = VariablesField(required=False)
    sensitive_variables = serializers.JSONField(
        required=False, help_text='{"environment": [names], "terraform": [names]}: values shown masked.'
    )
    approval_policies_apply = serializers.BooleanField(read_only=True, default=False)

    class Meta:
        model = Environment
        fields = [
            "id",
            "name",
            "project",
            "template",
            "approve_plans_automatically",
            "environment_variables",
            "terraform_variables",
            "sensitive_variables",
            "approval_policies_apply",
            "created_at",
        ]
        read_only_fields = ["created_at"]
        validators = []  # the name's uniqueness in the project is the use case's
        list_serializer_class = TreeListSerializer

    def project_of(self, environment: Environment) -> Project:
        return environment.project

    def to_representation(self, environment: Environment) -> dict:
        data = super().to_representation(environment)
        applying = self.tree(environment).effective_policies(environment)
        data["approval_policies_apply"] = bool(applying)
        # Under any policy, automatic approval is off whatever was asked for; say so rather than pretend.
        data["approve_plans_automatically"] = approves_automatically(environment, applying)
        data["environment_variables"] = masked(
            environment.environment_variables, environment.sensitive_names("environment")
        )
        data["terraform_variables"] = masked(
            environment.terraform_variables, environment.sensitive_names("terraform")
        )
        return data


class PolicyModuleSerializer(serializers.Serializer):
    filename = serializers.CharField(max_length=500, help_text="A path such as main.rego or lib/cost.rego.")
    source = serializers.CharField(trim_whitespace=False)


class PolicyRevisionSerializer(serializers.ModelSerializer):
    """A revision, with whether it is the one in force and, if it could not be, why."""

    modules = PolicyModuleSerializer(many=True, read_only=True)
    created_by = serializers.CharField(source="created_by.username", default=None, read_only=True)

    class Meta:
        model = PolicyRevision
        fields = [
            "id",
            "number",
            "rego_version",
            "enforcement",
            "data",
            "modules",
            "draft",
            "commit",
            "tests_status",
            "tests_report",
            "created_by",
            "created_at",
        ]

    def to_representation(self, revision: PolicyRevision) -> dict:
        data = super().to_representation(revision)
        data["active"] = revision.pk == self.context.get("active_revision_id")
        data["not_activated_because"] = activation_refusal(revision) or None
        return data


class PolicySerializer(serializers.ModelSerializer):
    """Create or revise a policy: every write becomes a new immutable revision, active when its tests
    pass (unless saved as a draft). A policy follows either inline modules or a repository folder."""

    rego_version = serializers.ChoiceField(
        choices=RegoVersion.choices, default=RegoVersion.V1, write_only=True
    )
    enforcement = serializers.ChoiceField(choices=Enforcement.choices, required=False, write_only=True)
    modules = PolicyModuleSerializer(many=True, write_only=True, required=False)
    data = serializers.JSONField(required=False, allow_null=True, write_only=True)
    draft = serializers.BooleanField(
        required=False,
        default=False,
        write_only=True,
        help_text="Save without activating (to try or replay).",
    )
    repository = serializers.PrimaryKeyRelatedField(
        queryset=PolicyRepository.objects.all(), required=False, write_only=True
    )
    repository_path = serializers.CharField(required=False, allow_blank=True, write_only=True)
    repository_revision = serializers.CharField(required=False, allow_blank=True, write_only=True)
    declared_name = serializers.CharField(required=False, allow_blank=True, write_only=True)
    latest_revision = PolicyRevisionSerializer(read_only=True)
    revision_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = ApprovalPolicy
        fields = [
            "id",
            "name",
            "description",
            "rego_version",
            "enforcement",
            "modules",
            "data",
            "draft",
            "repository",
            "repository_path",
            "repository_revision",
            "declared_name",
            "latest_revision",
            "revision_count",
            "created_at",
        ]
        read_only_fields = ["created_at"]
        extra_kwargs = {"name": {"validators": []}}

    @staticmethod
    def loading(policies: QuerySet[ApprovalPolicy]) -> QuerySet[ApprovalPolicy]:
        """``policies`` with what is shown of them, in a constant number of queries however many
        revisions each has: how many, the active one's number, and only the newest with its modules."""
        of_the_policy = PolicyRevision.objects.filter(policy=OuterRef("policy"))
        newest = PolicyRevision.objects.filter(
            number=Subquery(of_the_policy.order_by("-number").values("number")[:1])
        )
        counted = (
            PolicyRevision.objects.filter(policy=OuterRef("pk")).values("policy").annotate(n=Count("pk"))
        )
        return (
            policies.select_related("repository")
            .annotate(
                revision_count=Coalesce(Subquery(counted.values("n")), 0),
                active_number=F("active_revision__number"),
            )
            .prefetch_related(
                Prefetch(
                    "revisions",
                    queryset=newest.select_related("created_by").prefetch_related("modules"),
                    to_attr="newest_revisions",
                )
            )
        )

    def to_representation(self, policy: ApprovalPolicy) -> dict:
        # Read from what ``loading`` added, never with a query per policy.
        newest = policy.newest_revisions[0] if policy.newest_revisions else None
        context = {"active_revision_id": policy.active_revision_id}
        source: dict[str, Any] = {"kind": "inline"}
        if policy.repository_id is not None:
            source = {
                "kind": "repository",
                "repository": {
                    "id": policy.repository_id,
                    "name": policy.repository.name,
                    "url": policy.repository.url,
                },
                "path": policy.repository_path,
                "revision": policy.repository_revision,
                "declared_name": policy.declared_name,
                "synced_commit": policy.synced_commit,
                "synced_at": serializers.DateTimeField().to_representation(policy.synced_at)
                if policy.synced_at
                else None,
                "sync_error": policy.sync_error or None,
            }
        return {
            "id": policy.pk,
            "name": policy.name,
            "description": policy.description,
            "active_revision": policy.active_number,
            "latest_revision": PolicyRevisionSerializer(newest, context=context).data if newest else None,
            "revision_count": policy.revision_count,
            "source": source,
            "catalog_entry": policy.catalog_entry or None,
            "created_at": serializers.DateTimeField().to_representation(policy.created_at),
        }

    def validate_data(self, value):
        if value is not None and not isinstance(value, dict):
            raise serializers.ValidationError("Policy data must be a JSON object (it becomes data.*).")
        return value

    def validate(self, attrs: dict) -> dict:
        if self.instance is None and bool(attrs.get("modules")) == ("repository" in attrs):
            raise serializers.ValidationError(
                {
                    "modules": "Give either modules or a repository (with repository_path and repository_revision)."
                }
            )
        return attrs


class DryRunSerializer(serializers.Serializer):
    """An input to try a policy on: pasted, or the recorded input of a past deployment."""

    input = serializers.JSONField(required=False)
    deployment = serializers.IntegerField(
        required=False, help_text="Use the recorded input of this deployment's latest evaluation instead."
    )
    revision = serializers.IntegerField(
        required=False, help_text="The revision to try (default: the active one, else the newest)."
    )
    explain = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Also name the rules that fired (fired: [{rule, file, line}]).",
    )

    def validate_input(self, value):
        if not isinstance(value, dict):
            raise serializers.ValidationError(
                "The input must be a JSON object, like a deployment's policy input."
            )
        return value

    def validate(self, attrs: dict) -> dict:
        if ("input" in attrs) == ("deployment" in attrs):
            raise serializers.ValidationError({"input": "Give either an input or a deployment."})
        return attrs


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
        # .all(): the viewset prefetches the revisions with their policies.
        return [
            {"policy": r.policy_id, "name": r.policy.name, "revision": r.number}
            for r in evaluation.policy_revisions.all()
        ]


class DeploymentSerializer(serializers.ModelSerializer):
    deployer = serializers.CharField(source="deployer.username")
    cost_estimation = serializers.SerializerMethodField()
    evaluations = EvaluationSerializer(many=True, read_only=True)
    approvals = ApprovalSerializer(many=True, read_only=True)
    queued_reason = serializers.SerializerMethodField(
        help_text="Why a queued deployment is not evaluated yet (an earlier release is unfinished)."
    )
    approvers_to_act = serializers.SerializerMethodField(
        help_text="Who may still approve or reject (a single deployment only; null in lists)."
    )

    class Meta:
        model = Deployment
        fields = [
            "id",
            "environment",
            "type",
            "trigger_name",
            "revision",
            "template_commit",
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
            "pending_since",
            "expires_at",
            "released_at",
            "completed_at",
            "superseded_by",
            "queued_behind",
            "queued_reason",
            "approvers_to_act",
        ]

    def get_queued_reason(self, deployment: Deployment) -> str | None:
        if deployment.status == "queued" and deployment.queued_behind_id:
            return queued_reason(deployment.queued_behind_id)
        return None

    def get_approvers_to_act(self, deployment: Deployment) -> list[str] | None:
        if not self.context.get("with_progress") or deployment.status != "pending_approval":
            return None
        from policies_app.notifications.approval_emails import approvers_still_to_act

        acted = {approval.user_id for approval in deployment.approvals.all()}
        tree = ProjectTree.around([deployment.environment.project], with_policies=False)
        return [user.username for user in approvers_still_to_act(deployment, tree, acted)]

    def get_cost_estimation(self, deployment: Deployment) -> dict:
        return {
            "total_monthly_cost": deployment.total_monthly_cost,
            "monthly_cost_diff": deployment.monthly_cost_diff,
        }


class ApprovalRequestSerializer(serializers.Serializer):
    comment = serializers.CharField(required=False, allow_blank=True, default="", max_length=10_000)


class CompleteDeploymentSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["succeeded", "failed"])
    state = serializers.JSONField(required=False, allow_null=True, default=None)

    def validate_state(self, state):
        if state is not None and not isinstance(state, dict):
            raise serializers.ValidationError("The state must be a JSON object or null.")
        return state


@extend_schema_field(OpenApiTypes.INT)
class VisibleIdField(VisibleRelatedField):
    """A VisibleRelatedField outside a model serializer, typed for the schema."""


class PolicyAttachmentSerializer(serializers.Serializer):
    policy = VisibleIdField(access.visible_policies, help_text="The id of the policy to attach.")


class WebhookSerializer(serializers.ModelSerializer):
    project = VisibleRelatedField(access.visible_projects)
    secret = serializers.CharField(
        write_only=True,
        required=False,
        allow_blank=True,
        max_length=200,
        help_text="Signs each body (HMAC-SHA256). Empty on create: one is made; on update: kept.",
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
            "body",
        ]


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
    class Meta:
        model = ApiToken
        fields = ["id", "name", "prefix", "created_at", "last_used_at"]
        read_only_fields = ["prefix", "created_at", "last_used_at"]
        validators = []


class ApiTokenCreatedSerializer(ApiTokenSerializer):
    key = serializers.CharField(read_only=True, help_text="Shown this once: only a hash is kept.")

    class Meta(ApiTokenSerializer.Meta):
        fields = [*ApiTokenSerializer.Meta.fields, "key"]


class MeSerializer(serializers.Serializer):
    username = serializers.CharField(read_only=True)
    email = serializers.EmailField(read_only=True)
    email_notifications = serializers.ChoiceField(choices=EmailMode.choices)


class AuditEntrySerializer(serializers.ModelSerializer):
    actor = serializers.CharField(source="actor.username", default=None)
    target = serializers.CharField(source="target_repr")

    class Meta:
        model = AuditEntry
        fields = [
            "id",
            "created_at",
            "actor",
            "action",
            "target_type",
            "target_id",
            "target",
            "project",
            "before",
            "after",
        ]


class AuditFilterSerializer(serializers.Serializer):
    actor = serializers.CharField(required=False, allow_blank=True, default="")
    action = serializers.CharField(required=False, allow_blank=True, default="")
    target_type = serializers.CharField(required=False, allow_blank=True, default="")
    project = serializers.IntegerField(required=False, allow_null=True, default=None)
    since = serializers.DateField(required=False, allow_null=True, default=None)
    until = serializers.DateField(required=False, allow_null=True, default=None)
    text = serializers.CharField(required=False, allow_blank=True, default="")
