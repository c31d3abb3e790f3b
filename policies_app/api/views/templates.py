"""Templates."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from policies_app import access
from policies_app.api.serializers.projects import PolicyAttachmentSerializer
from policies_app.api.serializers.templates import TemplateSerializer
from policies_app.api.views.common import UpdateViewSet
from policies_app.projects import iac_templates


class TemplateViewSet(UpdateViewSet):
    serializer_class = TemplateSerializer
    filterset_fields = ["type"]

    def get_queryset(self):
        return access.visible_templates(self.request.user).prefetch_related("approval_policies")

    def perform_create(self, serializer):
        serializer.instance = iac_templates.save_template(self.request.user, **serializer.validated_data)

    def perform_update(self, serializer):
        serializer.instance = iac_templates.save_template(
            self.request.user, serializer.instance, **serializer.validated_data
        )

    @extend_schema(
        request={
            "multipart/form-data": {
                "type": "object",
                "properties": {"archive": {"type": "string", "format": "binary"}},
            }
        },
        responses=TemplateSerializer,
    )
    @action(detail=True, methods=["post"], parser_classes=[MultiPartParser])
    def archive(self, request: Request, pk: str | None = None) -> Response:
        """Upload the template's files as a .tar.gz or .zip instead of pointing at a repository."""
        template = iac_templates.upload_archive(request.user, self.get_object(), request.FILES.get("archive"))
        return Response(TemplateSerializer(template).data)

    @extend_schema(request=PolicyAttachmentSerializer, responses=TemplateSerializer)
    @action(detail=True, methods=["post"], url_path="policies")
    def attach_policy(self, request: Request, pk: str | None = None) -> Response:
        """Attach a policy to the template (and so to every environment of it)."""
        template = self.get_object()
        serializer = PolicyAttachmentSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        template = iac_templates.attach_policy(request.user, template, serializer.validated_data["policy"])
        return Response(TemplateSerializer(template).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses=TemplateSerializer)
    @action(detail=True, methods=["delete"], url_path=r"policies/(?P<policy_id>[0-9]+)")
    def detach_policy(self, request: Request, pk: str | None = None, policy_id: str = "") -> Response:
        template = self.get_object()
        policy = get_object_or_404(access.visible_policies(request.user), pk=policy_id)
        return Response(TemplateSerializer(iac_templates.detach_policy(request.user, template, policy)).data)
