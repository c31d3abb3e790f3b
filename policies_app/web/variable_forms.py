"""The key/value editors of an environment's variables: one row per variable (name, value, a "sensitive"
tick), for each kind (environment and Terraform variables). Plain repeated inputs with a few empty rows,
so the page works without JavaScript; a script only adds rows.

Sensitive values are never put back in the page: their rows show ``MASK``, and sending the mask back keeps
the stored value (the rule of projects/environments.py, which stays the only place that decides it)."""

from __future__ import annotations

import json
from typing import Any

from django import forms

from policies_app.guards import json_limits
from policies_app.guards.masking import MASK, environment_variables_shown
from policies_app.models import Environment

EXTRA_ROWS = 3
KINDS = {"environment": "Environment variables", "terraform": "Terraform variables"}
HELP = {
    "environment": "Values are text.",
    "terraform": 'A value written as JSON (3, true, ["a", "b"], {"k": "v"}, "quoted text") is kept as that '
    "JSON value; anything else is text.",
}


class VariableRow(forms.Form):
    name = forms.CharField(max_length=200, required=False)
    value = forms.CharField(required=False, strip=False)
    sensitive = forms.BooleanField(required=False)

    def shown_value(self) -> str:
        """The value put in the page: a sensitive value typed but not saved (the page came back with a
        problem) is not sent back either; only the mask of a stored one is."""
        value = self["value"].value() or ""
        if self.is_bound and self["sensitive"].value() and value != MASK:
            return ""
        return value

    def retype(self) -> bool:
        return bool(
            self.is_bound and self["sensitive"].value() and (self["value"].value() or "") not in ("", MASK)
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if not data.get("name", "").strip() and (data.get("value") or data.get("sensitive")):
            self.add_error("name", "This value needs a name.")
        return data


class BaseVariableRows(forms.BaseFormSet):
    kind = "environment"

    def clean(self) -> None:
        seen: set[str] = set()
        for row in self.forms:
            name = (row.cleaned_data or {}).get("name", "").strip()
            if name and name in seen:
                row.add_error("name", f"{name} is given twice.")
            seen.add(name)

    def variables(self) -> dict[str, Any]:
        """The rows as a JSON object of names to values (Terraform values read as JSON when they are)."""
        return {
            row.cleaned_data["name"].strip(): self._value(row.cleaned_data["value"])
            for row in self.forms
            if row.cleaned_data.get("name", "").strip()
        }

    def sensitive(self) -> list[str]:
        return sorted(
            row.cleaned_data["name"].strip()
            for row in self.forms
            if row.cleaned_data.get("name", "").strip() and row.cleaned_data.get("sensitive")
        )

    def _value(self, text: str) -> Any:
        if self.kind != "terraform" or text == MASK:
            return text
        try:
            return json_limits.loads(text)
        except ValueError:
            return text


def _rows_class(kind: str) -> type[BaseVariableRows]:
    return forms.formset_factory(
        VariableRow,
        formset=type(f"{kind.title()}VariableRows", (BaseVariableRows,), {"kind": kind}),
        extra=EXTRA_ROWS,
        max_num=1000,
        validate_max=True,
    )


def _shown_text(kind: str, value: Any) -> str:
    if isinstance(value, str) and (kind == "environment" or value == MASK):
        return value
    if isinstance(value, str):
        # Text that would read as JSON is quoted, so that it comes back as the same text.
        try:
            json.loads(value)
        except ValueError:
            return value
    return json.dumps(value, sort_keys=True)


def initial_rows(environment: Environment | None) -> dict[str, list[dict[str, Any]]]:
    """The rows of an environment's variables as people may see them (sensitive values masked)."""
    if environment is None:
        return {kind: [] for kind in KINDS}
    shown = environment_variables_shown(environment)
    return {
        kind: [
            {
                "name": name,
                "value": _shown_text(kind, value),
                "sensitive": name in environment.sensitive_names(kind),
            }
            for name, value in sorted(shown[kind].items())
        ]
        for kind in KINDS
    }


def variable_rows(data: Any, environment: Environment | None) -> dict[str, BaseVariableRows]:
    """One bound (or, without ``data``, initial) editor per kind, prefixed with the kind's name."""
    initial = initial_rows(environment)
    return {kind: _rows_class(kind)(data, initial=initial[kind] or None, prefix=kind) for kind in KINDS}
