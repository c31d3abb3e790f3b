"""Forms of the server-rendered UI; they only parse input, the services decide."""

from typing import Any

from django import forms

from policies_app.choices import ApprovalDecision, DeploymentStatus, DeploymentType
from policies_app.deployments.inbox import SORTS, VIEWS, QueueFilters


class QueueFilterForm(forms.Form):
    """The queue's view (waiting for me, mine, all), filters, search and sort; all optional."""

    view = forms.ChoiceField(choices=[(v, v) for v in VIEWS], required=False)
    q = forms.CharField(required=False, max_length=200, label="Search")
    # Set by links from a project's or an environment's page; names are found with the search box. Not
    # drop-down lists: an organisation has thousands of projects and tens of thousands of environments.
    project = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)
    environment = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)
    deployer = forms.CharField(required=False, max_length=150)
    type = forms.ChoiceField(choices=[("", "Any type"), *DeploymentType.choices], required=False)
    status = forms.ChoiceField(choices=[("", "Any status"), *DeploymentStatus.choices], required=False)
    since = forms.DateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, label="To", widget=forms.DateInput(attrs={"type": "date"}))
    sort = forms.ChoiceField(choices=[(key, key) for key in SORTS], required=False)

    def filters(self) -> QueueFilters:
        data = self.cleaned_data
        return QueueFilters(
            view=data["view"] or "waiting",
            project=data["project"],
            environment=data["environment"],
            deployer=data["deployer"].strip(),
            type=data["type"],
            statuses=(data["status"],) if data["status"] else (),
            since=data["since"],
            until=data["until"],
            text=data["q"].strip(),
            sort=data["sort"] or "",
        )


class ApprovalForm(forms.Form):
    decision = forms.ChoiceField(choices=ApprovalDecision.choices)
    comment = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}), max_length=5000)
    confirm_destroy = forms.BooleanField(
        required=False, label="I understand that approving this destroys the resources listed above"
    )

    def __init__(self, *args: Any, destroy: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.destroy = destroy

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if (
            self.destroy
            and data.get("decision") == ApprovalDecision.APPROVE
            and not data.get("confirm_destroy")
        ):
            raise forms.ValidationError("Confirm that approving this destroy deletes its resources.")
        return data
