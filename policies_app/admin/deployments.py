"""Deployments, their evaluations, approvals and events: read-only (they change only through the use cases
in deployments/). Variables and inputs are shown masked, as everywhere else."""

import json

from django.contrib import admin

from policies_app.admin.display import ReadOnlyAdminMixin, json_block, pre
from policies_app.deployments.plan_view import shown_plan_view
from policies_app.deployments.stored_inputs import plan_of, purged_detail, shown_input
from policies_app.guards.masking import masked_variables, shown_plan
from policies_app.models import Approval, Deployment, DeploymentEvent, Evaluation


class ApprovalInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = Approval
    fk_name = "deployment"
    extra = 0
    fields = ["user", "decision", "comment", "created_at", "carried_over_from"]
    readonly_fields = fields


class EvaluationInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = Evaluation
    extra = 0
    fields = ["request_type", "decision", "engine", "duration_ms", "created_at"]
    readonly_fields = fields
    show_change_link = True


class DeploymentEventInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = DeploymentEvent
    extra = 0
    fields = ["created_at", "kind", "actor", "detail"]
    readonly_fields = fields


@admin.register(Deployment)
class DeploymentAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = [
        "id",
        "environment",
        "type",
        "status",
        "decision",
        "deployer",
        "trigger_name",
        "created_at",
    ]
    list_filter = ["status", "decision", "type", "trigger_name", "environment__template__type"]
    search_fields = [
        "environment__name",
        "environment__project__name",
        "deployer__username",
        "revision",
        "idempotency_key",
    ]
    list_select_related = ["environment__project", "deployer"]
    date_hierarchy = "created_at"
    exclude = ["plan_document", "plan_text_document", "plan_counts", "messages", "variables", "policy_data"]
    readonly_fields = ["messages_json", "plan_json", "plan_text_shown", "variables_json", "policy_data_json"]
    inlines = [ApprovalInline, EvaluationInline, DeploymentEventInline]

    @admin.display(description="Messages")
    def messages_json(self, deployment: Deployment) -> str:
        return json_block(deployment.messages)

    @admin.display(description="Plan")
    def plan_json(self, deployment: Deployment) -> str:
        if deployment.plan_purged_at is not None:
            return pre(f"Purged on {deployment.plan_purged_at:%Y-%m-%d} (retention of policy inputs).")
        return json_block(shown_plan(plan_of(deployment), deployment.environment.sensitive_variables))

    @admin.display(description="Plan as `terraform show` printed it")
    def plan_text_shown(self, deployment: Deployment) -> str:
        text = shown_plan_view(deployment).text
        return pre(text) if text is not None else "—"

    @admin.display(description="Variables")
    def variables_json(self, deployment: Deployment) -> str:
        return json_block(
            masked_variables(deployment.variables or {}, deployment.environment.sensitive_variables)
        )

    @admin.display(description="Policy data")
    def policy_data_json(self, deployment: Deployment) -> str:
        return json_block(deployment.policy_data)


@admin.register(Evaluation)
class EvaluationAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["deployment", "request_type", "decision", "engine", "duration_ms", "created_at"]
    list_filter = ["decision", "request_type", "engine"]
    search_fields = ["deployment__environment__name", "error", "engine"]
    list_select_related = ["deployment__environment__project"]
    exclude = ["input_json", "messages", "outcomes"]
    readonly_fields = ["messages_json", "outcomes_json", "input_document"]

    @admin.display(description="Messages")
    def messages_json(self, evaluation: Evaluation) -> str:
        return json_block(evaluation.messages)

    @admin.display(description="Per-policy outcomes")
    def outcomes_json(self, evaluation: Evaluation) -> str:
        return json_block(evaluation.outcomes)

    @admin.display(description="Input")
    def input_document(self, evaluation: Evaluation) -> str:
        shown = shown_input(evaluation)
        if shown is None:
            return pre(purged_detail(evaluation))
        try:
            return json_block(json.loads(shown))
        except ValueError:
            return pre(shown)


@admin.register(Approval)
class ApprovalAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["deployment", "user", "decision", "created_at"]
    list_filter = ["decision"]
    search_fields = ["user__username", "comment", "deployment__environment__name"]
    list_select_related = ["deployment__environment__project", "user"]


@admin.register(DeploymentEvent)
class DeploymentEventAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["deployment", "kind", "actor", "detail", "created_at"]
    list_filter = ["kind"]
    search_fields = ["detail", "actor__username", "deployment__environment__name"]
    list_select_related = ["deployment__environment__project", "actor"]
