"""Waivers: list those of visible environments and projects, grant one, revoke one."""

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from policies_app.api.serializers.waivers import GrantWaiverSerializer, WaiverSerializer
from policies_app.deployments import waivers


class WaiverViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = WaiverSerializer
    filterset_fields = ["policy", "environment", "project"]

    def get_queryset(self):
        return waivers.visible_waivers(self.request.user)

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "now": timezone.now()}

    @extend_schema(request=GrantWaiverSerializer, responses={201: WaiverSerializer})
    def create(self, request: Request) -> Response:
        grant = GrantWaiverSerializer(data=request.data, context=self.get_serializer_context())
        grant.is_valid(raise_exception=True)
        waiver = waivers.grant_waiver(request.user, **grant.validated_data)
        return Response(self.get_serializer(waiver).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: WaiverSerializer})
    @action(detail=True, methods=["post"])
    def revoke(self, request: Request, pk: str | None = None) -> Response:
        """End the waiver now; what was decided under it stays decided."""
        waiver = waivers.revoke_waiver(request.user, self.get_object())
        return Response(self.get_serializer(waiver).data)
