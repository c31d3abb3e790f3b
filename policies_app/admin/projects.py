"""Projects (with their memberships, policies attached and inherited), templates, environments and their
Terraform states: all read-only here. Moving a project, allowing self-approval, approving plans
automatically, granting a role, attaching a policy or pointing a template at a repository are checked by
the use cases in projects/ (controls, capabilities, the file sandbox) and audited there, so each page links
to the product's page that changes it."""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from policies_app.admin.display import ChangedInTheProductMixin, ReadOnlyAdminMixin, json_block
from policies_app.guards.masking import environment_variables_shown, shown_state
from policies_app.models import (
    Environment,
    EnvironmentState,
    Project,
    ProjectMembership,
    ProjectPolicy,
    Template,
)
from policies_app.projects.tree import tree_for


class ProjectMembershipInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = ProjectMembership
    extra = 0
    raw_id_fields = ["user"]


class ProjectPolicyInline(ReadOnlyAdminMixin, admin.TabularInline):
    """Policies attached here; ``authority`` is the project whose admins may detach one (empty: the organisation)."""

    model = ProjectPolicy
    fk_name = "project"
    extra = 0
    fields = ["policy", "authority", "attached_by", "attached_at"]
    readonly_fields = fields


@admin.register(Project)
class ProjectAdmin(ChangedInTheProductMixin, admin.ModelAdmin):
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

    def product_url(self, project: Project) -> str:
        return reverse("web:project-detail", args=[project.pk])

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
class ProjectMembershipAdmin(ChangedInTheProductMixin, admin.ModelAdmin):
    list_display = ["project", "user", "team", "role"]
    list_filter = ["role", ("project", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["project__name", "user__username", "team__name"]
    list_select_related = ["project", "user", "team"]

    def product_url(self, membership: ProjectMembership) -> str:
        return reverse("web:project-detail", args=[membership.project_id])


@admin.register(Template)
class TemplateAdmin(ChangedInTheProductMixin, admin.ModelAdmin):
    list_display = ["name", "type", "repository", "path", "revision"]
    list_filter = ["type"]
    search_fields = ["name", "repository", "path"]

    def product_url(self, template: Template) -> str:
        return reverse("web:template-detail", args=[template.pk])


@admin.register(Environment)
class EnvironmentAdmin(ChangedInTheProductMixin, admin.ModelAdmin):
    list_display = ["name", "project", "template", "approve_plans_automatically", "created_at"]
    list_filter = [
        "approve_plans_automatically",
        "template__type",
        ("project", admin.RelatedOnlyFieldListFilter),
    ]
    search_fields = ["name", "project__name", "template__name"]
    list_select_related = ["project", "template"]
    # Variables are shown as everywhere else: sensitive values masked.
    exclude = ["environment_variables", "terraform_variables"]
    readonly_fields = ["effective_policy_list", "variables_json"]

    @admin.display(description="Variables")
    def variables_json(self, environment: Environment) -> str:
        return json_block(environment_variables_shown(environment))

    def product_url(self, environment: Environment) -> str:
        return reverse("web:environment-detail", args=[environment.pk])

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
