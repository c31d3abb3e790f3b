"""The form of a policy repository. Its secrets are write-only: their inputs are always empty, an empty
input keeps the stored secret, and a "remove" tick removes it. What is valid is decided by the API's
serializer and the use case (policies/git/repositories.py), not here."""

from __future__ import annotations

from typing import Any

from django import forms

from policies_app.choices import ReviewApi
from policies_app.policies.git.repositories import SECRET_FIELDS

SECRET_LABELS = {
    "password": "Password or token (https)",
    "ssh_private_key": "SSH private key",
    "ssh_known_hosts": "SSH known hosts",
    "webhook_secret": "Push webhook secret",
    "review_token": "Review API token",
}
SECRET_HELP = "Never shown again; leave empty to keep the one stored."


class RepositoryForm(forms.Form):
    name = forms.CharField(max_length=200)
    url = forms.CharField(
        max_length=500,
        label="URL",
        help_text="https://, ssh:// or git@host:path (hosts the egress guard allows), or a local path under "
        "the operator's local repository roots.",
    )
    username = forms.CharField(max_length=200, required=False, help_text="For https, with the password.")
    password = forms.CharField(required=False, strip=False, widget=forms.PasswordInput(render_value=False))
    ssh_private_key = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 3, "class": "code", "autocomplete": "off"}),
    )
    ssh_known_hosts = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2, "class": "code", "autocomplete": "off"})
    )
    webhook_secret = forms.CharField(
        required=False, strip=False, widget=forms.PasswordInput(render_value=False)
    )
    review_api = forms.ChoiceField(
        choices=ReviewApi.choices, required=False, label="Report pushes of other branches to"
    )
    review_api_url = forms.CharField(max_length=500, required=False, label="Review API URL")
    review_project = forms.CharField(
        max_length=300, required=False, label="Review project (owner/name or id)"
    )
    review_token = forms.CharField(
        required=False, strip=False, widget=forms.PasswordInput(render_value=False)
    )

    def __init__(self, *args: Any, stored: dict[str, bool] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        ordered: dict[str, forms.Field] = {}
        for name, field in self.fields.items():
            ordered[name] = field
            if name in SECRET_FIELDS and stored and stored.get(name):
                ordered[f"remove_{name}"] = forms.BooleanField(
                    required=False, label=f"Remove the stored {SECRET_LABELS[name].lower()}"
                )
        self.fields = ordered
        for name in SECRET_FIELDS:
            field = self.fields[name]
            field.label = SECRET_LABELS[name]
            is_set = bool(stored and stored.get(name))
            field.help_text = f"Set. {SECRET_HELP}" if is_set else "Not set."

    def payload(self) -> dict[str, Any]:
        """The API's body for these inputs: an empty secret is left out (kept), a ticked removal is ``""``."""
        data = {name: value for name, value in self.cleaned_data.items() if not name.startswith("remove_")}
        for name in SECRET_FIELDS:
            if self.cleaned_data.get(f"remove_{name}"):
                data[name] = ""
            elif not data.get(name):
                data.pop(name, None)
        return data
