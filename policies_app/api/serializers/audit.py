"""The audit log and its filters."""

from rest_framework import serializers

from policies_app.models import AuditEntry


class AuditEntrySerializer(serializers.ModelSerializer):
    actor = serializers.CharField(source="actor.username", default=None)
    target = serializers.CharField(source="target_repr")

    class Meta:
        model = AuditEntry
        fields = [
            "id",
            "created_at",
            "actor",
            "action",
            "target_type",
            "target_id",
            "target",
            "project",
            "before",
            "after",
            "sequence",
            "previous_hash",
            "entry_hash",
        ]


class AuditFilterSerializer(serializers.Serializer):
    actor = serializers.CharField(required=False, allow_blank=True, default="")
    action = serializers.CharField(required=False, allow_blank=True, default="")
    target_type = serializers.CharField(required=False, allow_blank=True, default="")
    project = serializers.IntegerField(required=False, allow_null=True, default=None)
    since = serializers.DateField(required=False, allow_null=True, default=None)
    until = serializers.DateField(required=False, allow_null=True, default=None)
    text = serializers.CharField(required=False, allow_blank=True, default="")
