"""Forms of the server-rendered UI; they only parse input, the services decide."""

from typing import Any

from django import forms

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
