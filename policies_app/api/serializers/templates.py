"""Templates: organisation-wide IaC sources and the policies attached to them."""

from rest_framework import serializers

from policies_app import access
from policies_app.api.serializers.fields import VisibleRelatedField
from policies_app.models import Template


class TemplateSerializer(serializers.ModelSerializer):
    approval_policies = VisibleRelatedField(access.visible_policies, many=True, required=False)
    provider_schema = serializers.JSONField(
        required=False,
        allow_null=True,
        write_only=True,
        help_text="`terraform providers schema -json` output",
    )
    has_provider_schema = serializers.SerializerMethodField()

    class Meta:
        model = Template
        fields = [
            "id",
            "name",
            "type",
            "repository",
            "path",
            "revision",
            "archive",
            "approval_policies",
            "provider_schema",
            "has_provider_schema",
            "created_at",
        ]
        read_only_fields = ["archive", "created_at"]
        validators = []  # the name's uniqueness is the use case's

    def get_has_provider_schema(self, template: Template) -> bool:
        return template.provider_schema is not None
