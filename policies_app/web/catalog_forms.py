"""The install form of a catalog entry, generated from the entry's JSON Schema: one input per parameter
(text, number, tick, choice, ticks for a list of choices, one line per item for other lists, JSON for
anything else), defaults shown in JSON's spelling, and the schema's problems put beside their field.

The form only reads what was typed into JSON values; the schema (policies/catalog) decides what is valid."""

from __future__ import annotations

import json
from typing import Any

from django import forms

from policies_app.guards import json_limits
from policies_app.policies import catalog
from policies_app.policies.catalog import CatalogEntry

POLICY_NAME_FIELD = "name"


def json_spelling(value: Any) -> str:
    """A value as JSON writes it (``true``, ``null``, ``["a"]``), not as Python does."""
    return json.dumps(value)


class NumberField(forms.CharField):
    """A JSON number: an integer when written as one, else a decimal number."""

    def to_python(self, value: Any) -> int | float | None:
        text = (super().to_python(value) or "").strip()
        if not text:
            return None
        try:
            return int(text)
        except ValueError:
            pass
        try:
            number = float(text)
        except ValueError:
            raise forms.ValidationError("A number, e.g. 250 or 99.5.") from None
        if number != number or number in (float("inf"), float("-inf")):
            raise forms.ValidationError("A finite number.")
        return number


class LinesField(forms.CharField):
    """A list typed one item per line; items of a numeric list are read as numbers."""

    widget = forms.Textarea(attrs={"rows": 3, "class": "code", "spellcheck": "false"})

    def __init__(self, *args: Any, item_type: str = "string", **kwargs: Any) -> None:
        self.item_type = item_type
        super().__init__(*args, **kwargs)

    def to_python(self, value: Any) -> list[Any] | None:
        lines = [line.strip() for line in (value or "").splitlines() if line.strip()]
        if self.item_type not in ("integer", "number"):
            return lines
        items = []
        for line in lines:
            try:
                items.append(int(line) if self.item_type == "integer" else float(line))
            except ValueError:
                raise forms.ValidationError(f"{line!r} is not a number (one per line).") from None
        return items

    def prepare_value(self, value: Any) -> Any:
        return "\n".join(str(item) for item in value) if isinstance(value, list) else value


class JsonValueField(forms.CharField):
    """Any JSON value, for the shapes the form has no input for."""

    widget = forms.Textarea(attrs={"rows": 3, "class": "code", "spellcheck": "false"})

    def to_python(self, value: Any) -> Any:
        text = (value or "").strip()
        if not text:
            return None
        try:
            return json_limits.loads(text)
        except ValueError as problem:
            raise forms.ValidationError(f"Not valid JSON: {problem}") from None

    def prepare_value(self, value: Any) -> Any:
        return value if isinstance(value, str) else json_spelling(value)


def _field_for(name: str, spec: dict[str, Any], required: bool) -> forms.Field:
    kind = spec.get("type")
    default = spec.get("default")
    help_parts = [spec.get("description", "")]
    if "default" in spec:
        help_parts.append(f"Default: {json_spelling(default)}.")
    if required:
        help_parts.append("Required.")
    options: dict[str, Any] = {
        "required": False,
        "label": name,
        "help_text": " ".join(p for p in help_parts if p),
    }
    items = spec.get("items", {}) if kind == "array" else {}
    if "enum" in spec and all(isinstance(choice, str) for choice in spec["enum"]):
        choices = [(choice, choice) for choice in spec["enum"]]
        return forms.ChoiceField(
            choices=choices if "default" in spec else [("", "(choose)"), *choices], initial=default, **options
        )
    if kind == "boolean":
        return forms.BooleanField(initial=bool(default), **options)
    if kind == "integer":
        return forms.IntegerField(initial=default, min_value=None, **options)
    if kind == "number":
        return NumberField(initial=default, **options)
    if kind == "string":
        return forms.CharField(initial=default, strip=False, **options)
    if kind == "array" and "enum" in items and all(isinstance(choice, str) for choice in items["enum"]):
        return forms.MultipleChoiceField(
            choices=[(choice, choice) for choice in items["enum"]],
            widget=forms.CheckboxSelectMultiple,
            initial=default,
            **options,
        )
    if kind == "array" and items.get("type") in ("string", "integer", "number"):
        options["help_text"] = f"One per line. {options['help_text']}"
        return LinesField(item_type=items["type"], initial=default, **options)
    return JsonValueField(initial=default, **options)


class ParametersForm(forms.Form):
    """The name of the policy to create and the entry's parameters."""

    name = forms.CharField(max_length=200, label="Name of the new policy")

    def __init__(self, *args: Any, entry: CatalogEntry, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.entry = entry
        self.fields["name"].initial = entry.title
        required = set(entry.schema.get("required", []))
        for name, spec in entry.schema.get("properties", {}).items():
            if name == POLICY_NAME_FIELD:
                raise ValueError(f"The catalog entry {entry.slug} has a parameter called {name!r}.")
            self.fields[name] = _field_for(name, spec, name in required)

    def parameter_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in self.fields if name != POLICY_NAME_FIELD]

    def parameters(self) -> dict[str, Any]:
        """The typed parameters; an empty input is left out (the schema's default then applies)."""
        values = {}
        for name, field in self.fields.items():
            value = self.cleaned_data.get(name)
            if name == POLICY_NAME_FIELD:
                continue
            if isinstance(field, forms.BooleanField | forms.MultipleChoiceField | LinesField):
                values[name] = value
            elif value not in (None, ""):
                values[name] = value
        return values

    def is_valid(self) -> bool:
        """Valid when every input reads and the schema accepts the parameters; the schema's problems are
        put beside their field (those of inputs that did not read are already there)."""
        if not self.is_bound:
            return False
        if not getattr(self, "_checked", False):
            self._checked = True
            self.full_clean()
            for name, messages in catalog.problems_by_parameter(self.entry, self.parameters()).items():
                field = name if name in self.fields and name != POLICY_NAME_FIELD else None
                if field is None or field not in self.errors:
                    self.add_error(field, messages)
        return not self.errors
