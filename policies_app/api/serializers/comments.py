"""Comments on a deployment: what is read and what is posted (the rules are deployments/comments.py's)."""

from rest_framework import serializers

from policies_app.models import DeploymentComment


class CommentSerializer(serializers.ModelSerializer):
    author = serializers.CharField(source="author.get_username", read_only=True)
    removed_by = serializers.CharField(source="removed_by.get_username", read_only=True, allow_null=True)

    class Meta:
        model = DeploymentComment
        fields = ["id", "author", "body", "created_at", "removed_at", "removed_by"]
        read_only_fields = fields


class PostCommentSerializer(serializers.Serializer):
    # Kept as sent: the use case trims it and says what is wrong with it (empty, too long) on ``body``.
    body = serializers.CharField(allow_blank=True, trim_whitespace=False)
