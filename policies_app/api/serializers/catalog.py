"""The catalog of ready policies and installing one."""

from typing import Any

from rest_framework import serializers


class InstallSerializer(serializers.Serializer):
    entry = serializers.CharField(help_text="The catalog entry's slug, e.g. require-approvers.")
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True)
    parameters = serializers.JSONField(required=False, default=dict)


def catalog_entry_view(entry: Any) -> dict[str, Any]:
    return {
        "entry": entry.slug,
        "title": entry.title,
        "description": entry.description,
        "parameters_schema": entry.schema,
        "defaults": entry.defaults(),
        "modules": [filename for filename, _ in entry.modules],
    }
