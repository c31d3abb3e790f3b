"""Fields and list behaviour the resources' serializers share: related objects limited to what the user sees, and lists of tree-shaped objects that share one ProjectTree (a page costs the same few queries whatever its length)."""

from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Manager, QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from policies_app.models import Project
from policies_app.projects.tree import ProjectTree

User = get_user_model()


class VisibleRelatedField(serializers.PrimaryKeyRelatedField):
    """A reference to another object, accepted only when the requesting user may see it: an unseen one
    "does not exist" (400), exactly like one that does not."""

    def __init__(self, visible: Any, **kwargs: Any) -> None:
        self.visible = visible  # access.visible_* function
        super().__init__(**kwargs)

    def get_queryset(self) -> QuerySet:
        return self.visible(self.context["request"].user)


class TreeListSerializer(serializers.ListSerializer):
    """Loads the project tree around every item of the list once, for the child serializer to read."""

    def to_representation(self, data: Any) -> list:
        items = list(data.all() if isinstance(data, (Manager, QuerySet)) else data)
        self.context["tree"] = ProjectTree.around(self.child.project_of(item) for item in items)
        return super().to_representation(items)


class TreeSerializerMixin:
    def project_of(self, instance: Any) -> Project:
        raise NotImplementedError

    def tree(self, instance: Any) -> ProjectTree:
        tree = self.context.get("tree")
        if tree is None or self.project_of(instance).pk not in tree.projects:
            tree = ProjectTree.around([self.project_of(instance)])
        return tree


class VariablesField(serializers.JSONField):
    def to_internal_value(self, data: Any) -> dict:
        value = super().to_internal_value(data)
        if not isinstance(value, dict):
            raise serializers.ValidationError("Must be an object of variable names to values.")
        return value


@extend_schema_field(OpenApiTypes.INT)
class VisibleIdField(VisibleRelatedField):
    """A VisibleRelatedField outside a model serializer, typed for the schema."""
