"""Forms of the policy pages; they only parse input, the services decide."""

from typing import Any

from django import forms
from django.conf import settings

from policies_app.choices import Enforcement, RegoVersion
from policies_app.guards import json_limits


def _json_object(raw: str, what: str) -> Any:
    try:
        document = json_limits.loads(raw)
    except ValueError as problem:
        raise forms.ValidationError(f"Not valid JSON: {problem}") from None
    if not isinstance(document, dict):
        raise forms.ValidationError(f"{what} must be a JSON object.")
    return document


class DryRunForm(forms.Form):
    """ "Try it": a revision on a pasted input, or on the recorded input of a past deployment."""

    revision = forms.TypedChoiceField(coerce=int, label="Revision")
    deployment = forms.TypedChoiceField(
        coerce=int,
        empty_value=None,
        required=False,
        label="Recorded input of",
        help_text="A recent deployment of an environment the policy applies to.",
    )
    input_json = forms.CharField(
        label="or a pasted input (JSON)",
        required=False,
        widget=forms.Textarea(attrs={"rows": 12, "class": "code"}),
        help_text="The document the policy sees as input, e.g. an evaluation's input.",
    )

    def __init__(
        self, *args: Any, revisions: list[int] = (), deployments: list[tuple[int, str]] = (), **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.fields["revision"].choices = [(number, f"r{number}") for number in revisions]
        self.fields["deployment"].choices = [("", "— paste an input below —"), *deployments]

    def clean_input_json(self) -> Any:
        raw = self.cleaned_data["input_json"]
        return _json_object(raw, "The input") if raw.strip() else None

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if not self.errors and cleaned.get("deployment") is None and cleaned.get("input_json") is None:
            self.add_error(
                "input_json", "Paste an input, or choose a deployment whose recorded input to use."
            )
        return cleaned


class DiffForm(forms.Form):
    old = forms.TypedChoiceField(coerce=int, label="Compare")
    new = forms.TypedChoiceField(coerce=int, label="with")

    def __init__(self, *args: Any, revisions: list[int] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in ("old", "new"):
            self.fields[name].choices = [(number, f"r{number}") for number in revisions]


class ReplayForm(forms.Form):
    revision = forms.TypedChoiceField(coerce=int, label="Replay")
    limit = forms.IntegerField(
        min_value=1,
        label="over the last",
        help_text="deployments of every environment the policy applies to",
    )

    environments = forms.TypedMultipleChoiceField(
        coerce=int,
        required=False,
        label="over the environments",
        help_text="the policy applies to no environment yet: choose where to replay it",
    )

    def __init__(
        self, *args: Any, revisions: list[int] = (), environments: list[tuple[int, str]] = (), **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.fields["revision"].choices = [(number, f"r{number}") for number in revisions]
        self.fields["environments"].choices = list(environments)
        self.fields["limit"].initial = settings.POLICY_REPLAY_LIMIT
        self.fields["limit"].max_value = settings.POLICY_REPLAY_MAX_LIMIT


class PolicyEditForm(forms.Form):
    """What the editor saves besides its modules (which come as lists: filename[], source[])."""

    name = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    rego_version = forms.ChoiceField(choices=RegoVersion.choices, initial=RegoVersion.V1)
    enforcement = forms.ChoiceField(choices=Enforcement.choices, initial=Enforcement.HARD_MANDATORY)
    data = forms.CharField(
        required=False,
        label="Data (JSON)",
        widget=forms.Textarea(attrs={"rows": 6, "class": "code", "spellcheck": "false"}),
        help_text="A JSON object; it becomes data.* for this policy. Empty: none.",
    )

    def clean_data(self) -> Any:
        raw = self.cleaned_data["data"]
        return _json_object(raw, "The data") if raw.strip() else None
