"""Environments, with their variables shown masked where sensitive."""

from rest_framework import serializers

from policies_app import access
from policies_app.api.serializers.fields import (
    TreeListSerializer,
    TreeSerializerMixin,
    VariablesField,
    VisibleRelatedField,
)
from policies_app.deployments.evaluation import approves_automatically
from policies_app.guards.masking import environment_variables_shown
from policies_app.models import Environment, Project


class EnvironmentSerializer(TreeSerializerMixin, serializers.ModelSerializer):
    project = VisibleRelatedField(access.visible_projects)
    template = VisibleRelatedField(access.visible_templates)
    environment_variables = VariablesField(required=False)
    terraform_variables = VariablesField(required=False)
    sensitive_variables = serializers.JSONField(
        required=False, help_text='{"environment": [names], "terraform": [names]}: values shown masked.'
    )
    approval_policies_apply = serializers.BooleanField(read_only=True, default=False)

    class Meta:
        model = Environment
        fields = [
            "id",
            "name",
            "project",
            "template",
            "approve_plans_automatically",
            "environment_variables",
            "terraform_variables",
            "sensitive_variables",
            "approval_policies_apply",
            "created_at",
        ]
        read_only_fields = ["created_at"]
        validators = []  # the name's uniqueness in the project is the use case's
        list_serializer_class = TreeListSerializer

    def project_of(self, environment: Environment) -> Project:
        return environment.project

    def to_representation(self, environment: Environment) -> dict:
        data = super().to_representation(environment)
        applying = self.tree(environment).effective_policies(environment)
        data["approval_policies_apply"] = bool(applying)
        # Under any policy, automatic approval is off whatever was asked for; say so rather than pretend.
        data["approve_plans_automatically"] = approves_automatically(environment, applying)
        shown = environment_variables_shown(environment)
        data["environment_variables"] = shown["environment"]
        data["terraform_variables"] = shown["terraform"]
        return data
