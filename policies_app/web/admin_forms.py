"""Forms of the administration pages; they parse input, the use cases decide and check."""

from __future__ import annotations

from typing import Any

from django import forms

from policies_app.choices import (
    DeploymentStatus,
    EmailMode,
    OrganisationRole,
    Role,
    TemplateType,
    WebhookFormat,
)


def choices_of(items: list[tuple[Any, str]], empty: str | None = None) -> list[tuple[Any, str]]:
    return [("", empty), *items] if empty is not None else list(items)


class ProjectForm(forms.Form):
    name = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    parent = forms.TypedChoiceField(coerce=int, required=False, empty_value=None)
    allow_self_approval = forms.BooleanField(
        required=False, label="Let deployers approve their own deployments (here and below)"
    )
    pending_expiry_hours = forms.IntegerField(
        required=False,
        min_value=1,
        label="Expire waiting deployments after (hours)",
        help_text="Empty: inherited from the parent project, else the platform's default.",
    )
    release_expiry_hours = forms.IntegerField(
        required=False,
        min_value=1,
        label="Expire releases the pipeline has not completed after (hours)",
        help_text="Empty: inherited from the parent project, else the platform's default.",
    )
    approval_carry_over_hours = forms.IntegerField(
        required=False,
        min_value=0,
        label="Carry approvals over to an identical re-plan for (hours)",
        help_text="0: never. Empty: inherited from the parent project, else the platform's default (off).",
    )

    def __init__(self, *args: Any, parents: list[tuple[int, str]] = (), root: bool = False, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.fields["parent"].choices = choices_of(parents, "(none: a root project)" if root else None)
        self.fields["parent"].required = not root


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150, required=False)
    team = forms.TypedChoiceField(coerce=int, required=False, empty_value=None)
    role = forms.ChoiceField(choices=Role.choices)

    def __init__(self, *args: Any, teams: list[tuple[int, str]] = (), **kwargs: Any):
        kwargs.setdefault("auto_id", "member_%s")  # shares its page with other forms
        super().__init__(*args, **kwargs)
        self.fields["team"].choices = choices_of(teams, "(no team)")


class PolicyChoiceForm(forms.Form):
    policy = forms.TypedChoiceField(coerce=int)

    def __init__(self, *args: Any, policies: list[tuple[int, str]] = (), **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.fields["policy"].choices = policies


class EnvironmentForm(forms.Form):
    name = forms.CharField(max_length=200)
    template = forms.TypedChoiceField(coerce=int)
    approve_plans_automatically = forms.BooleanField(
        required=False, help_text="Only while no approval policy applies to the environment."
    )

    def __init__(self, *args: Any, templates: list[tuple[int, str]] = (), **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.fields["template"].choices = templates


class TemplateForm(forms.Form):
    name = forms.CharField(max_length=200)
    type = forms.ChoiceField(choices=TemplateType.choices)
    repository = forms.CharField(
        max_length=500,
        required=False,
        help_text="A remote git URL (https://, ssh://, git@host:path); or leave it empty and upload an archive.",
    )
    path = forms.CharField(max_length=500, required=False)
    revision = forms.CharField(max_length=200, required=False)


class ArchiveForm(forms.Form):
    archive = forms.FileField(help_text="The template's files as a .tar.gz or .zip.")


class WebhookForm(forms.Form):
    name = forms.CharField(max_length=200)
    url = forms.URLField(max_length=1000, label="URL", assume_scheme="https")
    secret = forms.CharField(
        max_length=200,
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="Signs each message (Standard Webhooks: whsec_ and base64). Empty: a new webhook gets a "
        "random one, shown once; an existing one keeps its own.",
    )
    format = forms.ChoiceField(choices=WebhookFormat.choices)
    statuses = forms.MultipleChoiceField(
        choices=DeploymentStatus.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Send only changes to these statuses; none ticked: every change.",
    )
    active = forms.BooleanField(required=False, initial=True)

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs.setdefault("auto_id", "webhook_%s")  # shares its page with other forms
        super().__init__(*args, **kwargs)


class UserForm(forms.Form):
    username = forms.CharField(max_length=150)
    email = forms.EmailField(required=False)
    first_name = forms.CharField(max_length=150, required=False)
    last_name = forms.CharField(max_length=150, required=False)
    password = forms.CharField(
        required=False,
        widget=forms.PasswordInput,
        help_text="Empty: the user is invited by email to choose one.",
    )
    organisation_role = forms.ChoiceField(
        choices=choices_of(OrganisationRole.choices, "(none: roles on projects only)"), required=False
    )


class UserChangeForm(forms.Form):
    is_active = forms.BooleanField(required=False, label="Active (may sign in and use API tokens)")
    organisation_role = forms.ChoiceField(
        choices=choices_of(OrganisationRole.choices, "(none: roles on projects only)"), required=False
    )


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What uses it, e.g. the pipeline's name.")


class NotificationForm(forms.Form):
    email = forms.ChoiceField(
        choices=EmailMode.choices, widget=forms.RadioSelect, label="When a deployment waits for me"
    )


class AuditFilterForm(forms.Form):
    actor = forms.CharField(required=False, max_length=150, label="Who")
    action = forms.CharField(
        required=False, max_length=60, help_text='e.g. "policy." for every policy change'
    )
    target_type = forms.CharField(required=False, max_length=40, label="Target type")
    project = forms.TypedChoiceField(coerce=int, required=False, empty_value=None)
    since = forms.DateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, label="To", widget=forms.DateInput(attrs={"type": "date"}))
    text = forms.CharField(required=False, max_length=200, label="Search")

    def __init__(self, *args: Any, projects: list[tuple[int, str]] = (), **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.fields["project"].choices = choices_of(projects, "Any project")
