"""Service accounts of the projects one administers, and their tokens: made, rotated, revoked."""

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.generics import get_object_or_404
from rest_framework.request import Request
from rest_framework.response import Response

from policies_app.accounts import service_accounts
from policies_app.api.serializers.service_accounts import (
    ServiceAccountChangeSerializer,
    ServiceAccountSerializer,
    ServiceAccountTokenCreatedSerializer,
    ServiceAccountTokenCreateSerializer,
    ServiceAccountTokenSerializer,
    TokenRotateSerializer,
)
from policies_app.models import ServiceAccount


class ServiceAccountViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet
):
    serializer_class = ServiceAccountSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return ServiceAccount.objects.none()
        return service_accounts.visible_service_accounts(self.request.user).prefetch_related("tokens")

    def create(self, request: Request) -> Response:
        serializer = ServiceAccountSerializer(data=request.data, context=self.get_serializer_context())
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        account = service_accounts.create_service_account(
            request.user,
            data["project"],
            data["name"],
            description=data.get("description", ""),
            may_approve=data.get("may_approve", False),
        )
        return Response(ServiceAccountSerializer(account).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=ServiceAccountChangeSerializer, responses=ServiceAccountSerializer)
    def partial_update(self, request: Request, pk: str | None = None) -> Response:
        account = self.get_object()
        serializer = ServiceAccountChangeSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        account = service_accounts.change_service_account(request.user, account, **serializer.validated_data)
        return Response(ServiceAccountSerializer(account).data)

    def perform_destroy(self, instance: ServiceAccount) -> None:
        service_accounts.delete_service_account(self.request.user, instance)

    @extend_schema(
        request=ServiceAccountTokenCreateSerializer,
        responses={200: ServiceAccountTokenSerializer(many=True), 201: ServiceAccountTokenCreatedSerializer},
    )
    @action(detail=True, methods=["get", "post"])
    def tokens(self, request: Request, pk: str | None = None) -> Response:
        """The account's tokens with their last use; POST makes one (its key shown once)."""
        account = self.get_object()
        if request.method == "GET":
            return Response(ServiceAccountTokenSerializer(account.tokens.all(), many=True).data)
        serializer = ServiceAccountTokenCreateSerializer(
            data=request.data, context=self.get_serializer_context()
        )
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        token, key = service_accounts.create_account_token(
            request.user,
            account,
            capabilities=data.get("capabilities"),
            project=data["project"],
            name=data["name"],
            expires_in_days=data["expires_in_days"],
        )
        token.key = key
        return Response(ServiceAccountTokenCreatedSerializer(token).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={204: None})
    @action(detail=True, methods=["delete"], url_path=r"tokens/(?P<token_id>\d+)")
    def revoke_token(self, request: Request, pk: str | None = None, token_id: str = "") -> Response:
        token = get_object_or_404(self.get_object().tokens, pk=token_id)
        service_accounts.revoke_account_token(request.user, token)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=TokenRotateSerializer, responses={201: ServiceAccountTokenCreatedSerializer})
    @action(detail=True, methods=["post"], url_path=r"tokens/(?P<token_id>\d+)/rotate")
    def rotate_token(self, request: Request, pk: str | None = None, token_id: str = "") -> Response:
        """A new token with the same scope; the old one keeps working until it is revoked."""
        token = get_object_or_404(self.get_object().tokens.select_related("scope_project"), pk=token_id)
        serializer = TokenRotateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        new, key = service_accounts.rotate_token(
            request.user, token, serializer.validated_data["expires_in_days"]
        )
        new.key = key
        return Response(ServiceAccountTokenCreatedSerializer(new).data, status=status.HTTP_201_CREATED)
