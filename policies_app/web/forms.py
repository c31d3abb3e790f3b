"""Forms of the server-rendered UI; they only parse input, the services decide."""

from typing import Any

from django import forms

from .. import json_limits
from ..choices import ApprovalDecision, DeploymentStatus


class DeploymentFilterForm(forms.Form):
    """The queue's filters; an empty status means every status."""

    status = forms.ChoiceField(
        choices=[("", "Any status"), *DeploymentStatus.choices],
        required=False,
        initial=DeploymentStatus.PENDING_APPROVAL,
    )
    environment = forms.TypedChoiceField(coerce=int, required=False, empty_value=None)

    def __init__(self, *args: Any, environments: list[tuple[int, str]] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["environment"].choices = [("", "Any environment"), *environments]


class ApprovalForm(forms.Form):
    decision = forms.ChoiceField(choices=ApprovalDecision.choices)
    comment = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}), max_length=5000)


class DryRunForm(forms.Form):
    """An input document to try a policy revision on, without recording anything."""

    revision = forms.TypedChoiceField(coerce=int, label="Revision")
    input_json = forms.CharField(
        label="Input (JSON)",
        widget=forms.Textarea(attrs={"rows": 16, "class": "code"}),
        help_text="The document the policy sees as input, e.g. an evaluation's input.",
    )

    def __init__(self, *args: Any, revisions: list[int] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["revision"].choices = [(number, f"r{number}") for number in revisions]

    def clean_input_json(self) -> Any:
        raw = self.cleaned_data["input_json"]
        try:
            document = json_limits.loads(raw)
        except ValueError as problem:
            raise forms.ValidationError(f"Not valid JSON: {problem}") from None
        if not isinstance(document, dict):
            raise forms.ValidationError("The input must be a JSON object.")
        return document
