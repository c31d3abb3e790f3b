"""Webhooks of projects: create, change, remove, send a test, read the delivery history, open a delivery
and send it again."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from policies_app.api.serializers.webhooks import (
    WebhookCreatedSerializer,
    WebhookDeliveryDetailSerializer,
    WebhookDeliverySerializer,
    WebhookSerializer,
)
from policies_app.notifications import webhook_history, webhooks


class WebhookViewSet(
    mixins.ListModelMixin,
    mixins.CreateModelMixin,
    mixins.RetrieveModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = WebhookSerializer
    filterset_fields = ["project"]

    def get_queryset(self):
        return webhooks.visible_webhooks(self.request.user)

    @extend_schema(responses={201: WebhookCreatedSerializer})
    def create(self, request: Request, *args, **kwargs) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        webhook = webhooks.create_webhook(request.user, **serializer.validated_data)
        return Response(WebhookCreatedSerializer(webhook).data, status=status.HTTP_201_CREATED)

    def perform_update(self, serializer):
        data = dict(serializer.validated_data)
        data.pop("project", None)  # a webhook stays with its project
        serializer.instance = webhooks.update_webhook(self.request.user, serializer.instance, **data)

    def perform_destroy(self, instance):
        webhooks.delete_webhook(self.request.user, instance)

    @extend_schema(request=None, responses={202: WebhookDeliverySerializer})
    @action(detail=True, methods=["post"])
    def test(self, request: Request, pk: str | None = None) -> Response:
        """Queue a test message (a worker sends it); its outcome appears in the deliveries."""
        delivery = webhooks.send_test(request.user, self.get_object())
        return Response(WebhookDeliverySerializer(delivery).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses=WebhookDeliverySerializer(many=True))
    @action(detail=True, methods=["get"])
    def deliveries(self, request: Request, pk: str | None = None) -> Response:
        page = self.paginate_queryset(self.get_object().deliveries.all())
        return self.get_paginated_response(WebhookDeliverySerializer(page, many=True).data)

    @extend_schema(responses=WebhookDeliveryDetailSerializer)
    @action(detail=True, methods=["get"], url_path=r"deliveries/(?P<delivery_id>[0-9]+)")
    def delivery(self, request: Request, pk: str | None = None, delivery_id: str | None = None) -> Response:
        """One delivery: its body, the headers of its last attempt (signature masked) and the answer."""
        delivery = get_object_or_404(self.get_object().deliveries.all(), pk=delivery_id)
        return Response(WebhookDeliveryDetailSerializer(delivery).data)

    @extend_schema(request=None, responses={202: WebhookDeliverySerializer})
    @action(detail=True, methods=["post"], url_path=r"deliveries/(?P<delivery_id>[0-9]+)/resend")
    def resend(self, request: Request, pk: str | None = None, delivery_id: str | None = None) -> Response:
        """Send a delivery again as a new delivery (a worker sends it); it appears in the deliveries."""
        delivery = get_object_or_404(self.get_object().deliveries.all(), pk=delivery_id)
        again = webhook_history.resend_delivery(request.user, delivery)
        return Response(WebhookDeliverySerializer(again).data, status=status.HTTP_202_ACCEPTED)
