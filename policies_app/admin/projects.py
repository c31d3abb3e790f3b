"""Projects (with their memberships, policies attached and inherited), templates, environments and their
Terraform states (read-only)."""

from django.contrib import admin
from django.utils.html import format_html, format_html_join

from policies_app.admin.display import ReadOnlyAdminMixin, json_block
from policies_app.guards.masking import shown_state
from policies_app.models import (
    Environment,
    EnvironmentState,
    Project,
    ProjectMembership,
    ProjectPolicy,
    Template,
)
from policies_app.projects.tree import tree_for


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
        return json_block(shown_state(state.document))
