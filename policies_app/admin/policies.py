"""Approval policies, edited through the use cases of policies/authoring.py: a save is checked by the engine
and becomes revision N+1; revisions and their modules are read-only history."""

from typing import Any

from django import forms
from django.contrib import admin
from django.db import transaction
from django.http import HttpRequest
from django.utils.html import format_html_join

from policies_app.admin.display import ReadOnlyAdminMixin, pre
from policies_app.choices import RegoVersion
from policies_app.errors import Invalid
from policies_app.models import ApprovalPolicy, PolicyModule, PolicyRevision
from policies_app.policies.authoring import create_policy, revise_policy

DEFAULT_MODULE = "main.rego"


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
