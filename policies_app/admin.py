"""The administrators' console. Deployments and their trail are read-only here (they change only through
the use cases in deployments.py); a policy is edited through policies.py so that every save is checked by
the engine and becomes revision N+1."""

import json
from typing import Any

from django import forms
from django.contrib import admin
from django.db import transaction
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from policies_app.choices import RegoVersion
from policies_app.errors import Invalid
from policies_app.guards.masking import masked_input, masked_variables
from policies_app.models import (
    Approval,
    ApprovalPolicy,
    AuditEntry,
    Deployment,
    DeploymentEvent,
    Environment,
    EnvironmentState,
    Evaluation,
    OrganisationMembership,
    PolicyModule,
    PolicyRevision,
    Project,
    ProjectMembership,
    ProjectPolicy,
    Team,
    Template,
)
from policies_app.policies.authoring import create_policy, revise_policy
from policies_app.projects.tree import tree_for

DEFAULT_MODULE = "main.rego"


class ReadOnlyAdminMixin:
    """Viewable, never added, changed or deleted from the admin."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def pre(text: str) -> str:
    return format_html('<pre style="white-space: pre-wrap; margin: 0">{}</pre>', text)


def json_block(value: Any) -> str:
    return pre(json.dumps(value, indent=2, sort_keys=True))


# --- projects, teams, templates, environments ------------------------------------------------------------


class ProjectMembershipInline(admin.TabularInline):
    model = ProjectMembership
    extra = 0
    raw_id_fields = ["user"]


class ProjectPolicyInline(admin.TabularInline):
    """Policies attached here; ``authority`` is the project whose admins may detach one (empty: the organisation)."""

    model = ProjectPolicy
    fk_name = "project"
    extra = 0
    fields = ["policy", "authority", "attached_by", "attached_at"]
    readonly_fields = ["attached_by", "attached_at"]
    raw_id_fields = ["authority"]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "parent", "allow_self_approval", "created_at"]
    list_filter = ["allow_self_approval", ("parent", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["name", "description", "parent__name"]
    list_select_related = ["parent"]
    readonly_fields = ["inherited_policies", "created_at"]
    fields = [
        "name",
        "parent",
        "description",
        "allow_self_approval",
        "inherited_policies",
    ]
    inlines = [ProjectPolicyInline, ProjectMembershipInline]

    @admin.display(description="Inherited policies")
    def inherited_policies(self, project: Project) -> str:
        """What the ancestors impose on this project, on top of its own policies."""
        if project.pk is None:
            return "—"
        tree = tree_for(project)
        rows = [(item.policy.name, tree.full_name(item.source)) for item in tree.inherited_policies(project)]
        if not rows:
            return "—"
        return format_html("<ul>{}</ul>", format_html_join("", "<li>{} (from {})</li>", rows))


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "member_count", "description"]
    list_filter = [("members", admin.RelatedOnlyFieldListFilter), "memberships__role"]
    search_fields = ["name", "description", "members__username"]
    filter_horizontal = ["members"]

    @admin.display(description="Members")
    def member_count(self, team: Team) -> int:
        return team.members.count()


@admin.register(ProjectMembership)
class ProjectMembershipAdmin(admin.ModelAdmin):
    list_display = ["project", "user", "team", "role"]
    list_filter = ["role", ("project", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["project__name", "user__username", "team__name"]
    list_select_related = ["project", "user", "team"]
    raw_id_fields = ["user"]


@admin.register(Template)
class TemplateAdmin(admin.ModelAdmin):
    list_display = ["name", "type", "repository", "path", "revision"]
    list_filter = ["type"]
    search_fields = ["name", "repository", "path"]
    filter_horizontal = ["approval_policies"]


@admin.register(Environment)
class EnvironmentAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "template", "approve_plans_automatically", "created_at"]
    list_filter = [
        "approve_plans_automatically",
        "template__type",
        ("project", admin.RelatedOnlyFieldListFilter),
    ]
    search_fields = ["name", "project__name", "template__name"]
    list_select_related = ["project", "template"]
    readonly_fields = ["effective_policy_list"]

    @admin.display(description="Effective approval policies")
    def effective_policy_list(self, environment: Environment) -> str:
        if environment.pk is None:
            return "—"
        names = [policy.name for policy in tree_for(environment.project).effective_policies(environment)]
        return ", ".join(names) or "none (deployments wait for one approval unless approved automatically)"


@admin.register(EnvironmentState)
class EnvironmentStateAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["environment", "serial", "lineage", "deployment", "uploaded_by", "forced", "created_at"]
    list_filter = ["forced"]
    search_fields = ["environment__name", "environment__project__name", "lineage"]
    list_select_related = ["environment__project", "deployment", "uploaded_by"]
    exclude = ["document"]
    readonly_fields = ["document_json"]

    @admin.display(description="Document")
    def document_json(self, state: EnvironmentState) -> str:
        return json_block(state.document)


# --- policies --------------------------------------------------------------------------------------------


def _editable_module(revision: PolicyRevision | None) -> tuple[str, str]:
    """The module the admin's single text area edits: the only module, else main.rego (new if absent)."""
    if revision is None:
        return DEFAULT_MODULE, ""
    modules = list(revision.modules.all())
    if len(modules) == 1:
        return modules[0].filename, modules[0].source
    for module in modules:
        if module.filename == DEFAULT_MODULE:
            return module.filename, module.source
    return DEFAULT_MODULE, ""


class ApprovalPolicyForm(forms.ModelForm):
    """Name and description, plus what the next revision says. Validation runs the real service (inside a
    savepoint), so a Rego syntax error comes back as a form error with its file, line and column."""

    rego_version = forms.ChoiceField(choices=RegoVersion.choices, initial=RegoVersion.V1)
    source = forms.CharField(
        label="Source of the new revision",
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 24, "cols": 100, "style": "font-family: monospace"}),
        help_text="Rego in package env0. Saving a changed source, version or data creates revision N+1; "
        "other modules of a multi-file policy are kept as they are.",
    )
    data = forms.JSONField(required=False, help_text="Optional JSON object; becomes data.* for this policy.")

    # Set by ApprovalPolicyAdmin.get_form: who is recorded as the author of a new revision.
    author: Any = None

    class Meta:
        model = ApprovalPolicy
        fields = ["name", "description"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.latest = self.instance.latest_revision if self.instance.pk else None
        self.module_filename, current_source = _editable_module(self.latest)
        self.fields["source"].label = f"Source of the new revision ({self.module_filename})"
        if self.latest is not None:
            self.fields["rego_version"].initial = self.latest.rego_version
            self.fields["source"].initial = current_source
            self.fields["data"].initial = self.latest.data
        else:
            self.fields["source"].required = True
        self.new_revision: PolicyRevision | None = None

    def _modules(self) -> list[dict[str, str]]:
        modules = {}
        if self.latest is not None:
            modules = {m.filename: m.source for m in self.latest.modules.all()}
        modules[self.module_filename] = self.cleaned_data["source"]
        return [{"filename": name, "source": source} for name, source in sorted(modules.items())]

    def _post_clean(self) -> None:
        super()._post_clean()  # builds the instance and runs the model's own validation first
        if self.errors:
            return
        cleaned = self.cleaned_data
        try:
            # A savepoint: nothing stays behind if the service refuses or a later step of the admin fails.
            with transaction.atomic():
                if self.instance.pk is None:
                    self.instance = create_policy(
                        name=cleaned["name"],
                        description=cleaned.get("description", ""),
                        rego_version=cleaned["rego_version"],
                        modules=self._modules(),
                        data=cleaned.get("data"),
                        user=self.author,
                    )
                else:
                    self.new_revision = revise_policy(
                        self.instance,
                        name=cleaned["name"],
                        description=cleaned.get("description", ""),
                        rego_version=cleaned["rego_version"],
                        modules=self._modules(),
                        data=cleaned.get("data"),
                        user=self.author,
                    )
        except Invalid as refusal:
            for key, problems in refusal.errors.items():
                field = {"modules": "source"}.get(key, key)
                self.add_error(field if field in self.fields else None, problems)


class PolicyRevisionInline(admin.TabularInline):
    """The history of a policy, never edited: a change is a new revision made from the form above."""

    model = PolicyRevision
    extra = 0
    can_delete = False
    fields = ["number", "rego_version", "created_by", "created_at", "module_sources"]
    readonly_fields = fields
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="Modules")
    def module_sources(self, revision: PolicyRevision) -> str:
        return format_html_join(
            "",
            '<p><strong>{}</strong></p><pre style="white-space: pre-wrap">{}</pre>',
            ((m.filename, m.source) for m in revision.modules.all()),
        )


@admin.register(ApprovalPolicy)
class ApprovalPolicyAdmin(admin.ModelAdmin):
    form = ApprovalPolicyForm
    fields = ["name", "description", "rego_version", "source", "data"]
    list_display = ["name", "latest_revision_number", "attached_projects", "attached_templates", "created_at"]
    list_filter = [
        ("projects", admin.RelatedOnlyFieldListFilter),
        ("templates", admin.RelatedOnlyFieldListFilter),
    ]
    search_fields = ["name", "description"]
    inlines = [PolicyRevisionInline]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # A policy's revisions judged past deployments and may rule pending ones: detach it instead.
        return False

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        form.author = request.user
        return form

    def get_inline_instances(self, request: HttpRequest, obj: Any = None) -> list:
        # The revision inline only displays history. Leaving it out of a POST means no formset can fail
        # validation after the form's service call has already stored the new revision.
        if request.method == "POST":
            return []
        return super().get_inline_instances(request, obj)

    def get_queryset(self, request: HttpRequest) -> Any:
        return super().get_queryset(request).prefetch_related("projects", "templates", "revisions")

    def save_model(self, request: HttpRequest, obj: ApprovalPolicy, form: Any, change: bool) -> None:
        # The policy and its revision were stored by the service during validation; only a rename is left.
        obj.save(update_fields=["name", "description"])

    @admin.display(description="Latest revision")
    def latest_revision_number(self, policy: ApprovalPolicy) -> str:
        numbers = [r.number for r in policy.revisions.all()]
        return f"r{max(numbers)}" if numbers else "—"

    @admin.display(description="Projects")
    def attached_projects(self, policy: ApprovalPolicy) -> str:
        return ", ".join(p.name for p in policy.projects.all())

    @admin.display(description="Templates")
    def attached_templates(self, policy: ApprovalPolicy) -> str:
        return ", ".join(t.name for t in policy.templates.all())


class PolicyModuleInline(admin.StackedInline):
    model = PolicyModule
    extra = 0
    can_delete = False
    fields = ["filename", "source_text"]
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="Source")
    def source_text(self, module: PolicyModule) -> str:
        return pre(module.source)


@admin.register(PolicyRevision)
class PolicyRevisionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["policy", "number", "rego_version", "created_by", "created_at"]
    list_filter = ["rego_version"]
    search_fields = ["policy__name", "modules__source"]
    list_select_related = ["policy", "created_by"]
    inlines = [PolicyModuleInline]


@admin.register(PolicyModule)
class PolicyModuleAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["filename", "revision"]
    list_filter = ["filename", "revision__rego_version"]
    search_fields = ["filename", "revision__policy__name", "source"]
    list_select_related = ["revision__policy"]
    exclude = ["source"]
    readonly_fields = ["source_text"]

    @admin.display(description="Source")
    def source_text(self, module: PolicyModule) -> str:
        return pre(module.source)


# --- deployments (read-only: they change only through deployments.py) ----------------------------------


class ApprovalInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = Approval
    extra = 0
    fields = ["user", "decision", "comment", "created_at"]
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
    exclude = ["plan", "messages", "variables", "policy_data"]
    readonly_fields = ["messages_json", "plan_json", "variables_json", "policy_data_json"]
    inlines = [ApprovalInline, EvaluationInline, DeploymentEventInline]

    @admin.display(description="Messages")
    def messages_json(self, deployment: Deployment) -> str:
        return json_block(deployment.messages)

    @admin.display(description="Plan")
    def plan_json(self, deployment: Deployment) -> str:
        return json_block(deployment.plan)

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
        try:
            return json_block(masked_input(json.loads(evaluation.input_json), evaluation.sensitive_variables))
        except ValueError:
            return pre(evaluation.input_json)


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


@admin.register(OrganisationMembership)
class OrganisationMembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "role"]
    list_filter = ["role"]
    search_fields = ["user__username"]
    raw_id_fields = ["user"]


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["created_at", "actor", "action", "target_repr", "project"]
    list_filter = ["action", "target_type"]
    search_fields = ["target_repr", "actor__username", "action"]
    list_select_related = ["actor", "project"]
    date_hierarchy = "created_at"
