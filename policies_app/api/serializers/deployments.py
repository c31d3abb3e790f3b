"""Deployments: triggering one, its evaluations and approvals, approving, completing."""

from django.conf import settings
from rest_framework import serializers

from policies_app.choices import DeploymentType, TriggerName
from policies_app.deployments import requirements
from policies_app.deployments.lifecycle import queued_reason
from policies_app.models import Approval, Deployment, Evaluation
from policies_app.projects.tree import ProjectTree


def web_address(url: str) -> None:
    """Links are shown on the page as links: only http and https (URLField alone also takes ftp)."""
    if url and not url.lower().startswith(("https://", "http://")):
        raise serializers.ValidationError("Enter an http or https URL.")


class CostEstimationSerializer(serializers.Serializer):
    total_monthly_cost = serializers.FloatField(required=False, allow_null=True)
    monthly_cost_diff = serializers.FloatField(required=False, allow_null=True)


class DeploymentVariablesSerializer(serializers.Serializer):
    environment = serializers.DictField(required=False, default=dict)
    terraform = serializers.DictField(required=False, default=dict)


class RequestJSONField(serializers.JSONField):
    """A JSON value of the request's body. DRF's JSONField writes the value out again to check that it is
    JSON: what the API's parsers give always is, and on the trigger's path that was the whole plan written
    out for nothing. A form's text is still parsed as JSONField parses it."""

    def to_internal_value(self, data):
        if self.binary or getattr(data, "is_json_string", False):
            return super().to_internal_value(data)
        return data


class TriggerDeploymentSerializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=DeploymentType.choices, default=DeploymentType.DEPLOY)
    trigger_name = serializers.ChoiceField(choices=TriggerName.choices, default=TriggerName.USER)
    revision = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)
    plan = RequestJSONField(required=False, allow_null=True, default=None)
    plan_text = serializers.CharField(
        required=False,
        allow_blank=True,
        allow_null=True,
        default=None,
        trim_whitespace=False,
        help_text="The plan as `terraform show` prints it (shown beside the plan view, masked).",
    )
    cost_estimation = CostEstimationSerializer(required=False, default=dict)
    variables = DeploymentVariablesSerializer(required=False, default=dict)
    policy_data = RequestJSONField(required=False, allow_null=True, default=None)
    idempotency_key = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)
    commit_sha = serializers.RegexField(
        r"^[0-9a-fA-F]{7,64}$",
        required=False,
        allow_blank=True,
        default="",
        error_messages={"invalid": "A commit SHA is 7 to 64 hexadecimal characters."},
    )
    pull_request_url = serializers.URLField(
        required=False, allow_blank=True, default="", max_length=500, validators=[web_address]
    )
    ci_run_url = serializers.URLField(
        required=False, allow_blank=True, default="", max_length=500, validators=[web_address]
    )

    def validate_plan_text(self, text):
        if text and len(text) > settings.PLAN_TEXT_MAX_CHARACTERS:
            raise serializers.ValidationError(
                f"The plan text is {len(text)} characters; at most {settings.PLAN_TEXT_MAX_CHARACTERS} are kept."
            )
        return text

    def validate_plan(self, plan):
        if plan is not None and not isinstance(plan, dict):
            raise serializers.ValidationError("The plan must be a JSON object or null.")
        return plan


class ApprovalSerializer(serializers.ModelSerializer):
    user = serializers.CharField(source="user.username")

    class Meta:
        model = Approval
        # carried_over_from: the earlier deployment, with the same plan, this approval was given to.
        fields = ["id", "user", "decision", "comment", "created_at", "carried_over_from"]


class EvaluationSerializer(serializers.ModelSerializer):
    policy_revisions = serializers.SerializerMethodField()
    explanations_pending = serializers.SerializerMethodField(
        help_text="The explanations of its deny/pending/warn outcomes are still being prepared by a worker."
    )

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
            "explanations_pending",
        ]

    def get_explanations_pending(self, evaluation: Evaluation) -> bool:
        return evaluation.explanations_due_at is not None

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
    web_url = serializers.SerializerMethodField(help_text="The deployment's page in the web UI.")
    queued_reason = serializers.SerializerMethodField(
        help_text="Why a queued deployment is not evaluated yet (an earlier release is unfinished)."
    )
    approvers_to_act = serializers.SerializerMethodField(
        help_text="Who may still approve or reject (a single deployment only; null in lists)."
    )
    requirements = serializers.SerializerMethodField(
        help_text="What its policies declare clears it (METADATA custom), each with its state: "
        'required, approved (by whom), met, summary ("2/2 approvals ✓") and who may still satisfy it '
        "(a single deployment only; null in lists)."
    )

    class Meta:
        model = Deployment
        fields = [
            "id",
            "environment",
            "type",
            "trigger_name",
            "revision",
            "commit_sha",
            "pull_request_url",
            "ci_run_url",
            "web_url",
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
            "requirements",
        ]

    def get_web_url(self, deployment: Deployment) -> str:
        from policies_app.notifications.approval_emails import deployment_url

        return deployment_url(deployment.pk)

    def get_queued_reason(self, deployment: Deployment) -> str | None:
        if deployment.status == "queued" and deployment.queued_behind_id:
            return queued_reason(deployment.queued_behind_id)
        return None

    def _still_to_act(self, deployment: Deployment) -> list:
        """Who may still act on a pending deployment, read once for both fields that show it."""
        cached = self.context.setdefault("_still_to_act", {})
        if deployment.pk not in cached:
            from policies_app.notifications.approval_emails import approvers_still_to_act

            acted = {approval.user_id for approval in deployment.approvals.all()}
            tree = ProjectTree.around([deployment.environment.project], with_policies=False)
            cached[deployment.pk] = approvers_still_to_act(deployment, tree, acted)
        return cached[deployment.pk]

    def get_approvers_to_act(self, deployment: Deployment) -> list[str] | None:
        if not self.context.get("with_progress") or deployment.status != "pending_approval":
            return None
        return [user.username for user in self._still_to_act(deployment)]

    def get_requirements(self, deployment: Deployment) -> list[dict] | None:
        if not self.context.get("with_progress"):
            return None
        pending = deployment.status == "pending_approval"
        candidates = self._still_to_act(deployment) if pending else []
        progress = requirements.progress_for(
            deployment.evaluations.all(), deployment.approvals.all(), candidates
        )
        return [item.as_dict() for item in progress]

    def get_cost_estimation(self, deployment: Deployment) -> dict:
        return {
            "total_monthly_cost": deployment.total_monthly_cost,
            "monthly_cost_diff": deployment.monthly_cost_diff,
        }


class StatusMessagesSerializer(serializers.Serializer):
    deny = serializers.ListField(child=serializers.CharField())
    warn = serializers.ListField(child=serializers.CharField())
    pending = serializers.ListField(child=serializers.CharField())


class DeploymentStatusSerializer(serializers.Serializer):
    """The slim status a waiting pipeline polls (deployments/waiting.py); read-only."""

    id = serializers.IntegerField()
    status = serializers.CharField()
    decision = serializers.CharField(allow_null=True)
    required = serializers.ListField(
        child=serializers.CharField(), help_text="What it waits for while pending approval."
    )
    messages = StatusMessagesSerializer()
    error = serializers.CharField(allow_null=True)
    approvals = serializers.IntegerField(help_text="Approvals and rejections given so far.")
    expires_at = serializers.DateTimeField(allow_null=True)
    superseded_by = serializers.IntegerField(allow_null=True)
    queued_behind = serializers.IntegerField(allow_null=True)
    queued_reason = serializers.CharField(allow_null=True)
    url = serializers.URLField(help_text="The deployment's page, where approvers decide.")


class ApprovalRequestSerializer(serializers.Serializer):
    comment = serializers.CharField(required=False, allow_blank=True, default="", max_length=10_000)


class CompleteDeploymentSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["succeeded", "failed"])
    state = serializers.JSONField(required=False, allow_null=True, default=None)

    def validate_state(self, state):
        if state is not None and not isinstance(state, dict):
            raise serializers.ValidationError("The state must be a JSON object or null.")
        return state
