"""User accounts (organisation admins), one's own API tokens, and one's own notification settings."""

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from policies_app.accounts import tokens, users
from policies_app.api.serializers.accounts import (
    AccountChangeSerializer,
    AccountCreateSerializer,
    AccountSerializer,
    ApiTokenCreatedSerializer,
    ApiTokenSerializer,
    MeSerializer,
)
from policies_app.models import ApiToken
from policies_app.notifications import approval_emails


class AccountViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = AccountSerializer
    filterset_fields = ["is_active"]

    def get_queryset(self):
        return users.visible_users(self.request.user)

    @extend_schema(request=AccountCreateSerializer, responses={201: AccountSerializer})
    def create(self, request: Request) -> Response:
        """Create an account; without a password, the user is invited by email to choose one."""
        serializer = AccountCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        account, _ = users.create_user(request.user, **serializer.validated_data)
        return Response(AccountSerializer(account).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=AccountChangeSerializer, responses=AccountSerializer)
    def partial_update(self, request: Request, pk: str | None = None) -> Response:
        """Deactivate or reactivate, change the email or the organisation role."""
        account = self.get_object()
        serializer = AccountChangeSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        account = users.change_user(request.user, account, **serializer.validated_data)
        return Response(AccountSerializer(account).data)


class ApiTokenViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet
):
    """The requesting user's own tokens: nobody sees or revokes another's."""

    serializer_class = ApiTokenSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the schema generator asks without a user
            return ApiToken.objects.none()
        # A service account's tokens are its project admins' to manage (/service-accounts/), not its own.
        return ApiToken.objects.filter(user=self.request.user, service_account__isnull=True)

    @extend_schema(request=ApiTokenSerializer, responses={201: ApiTokenCreatedSerializer})
    def create(self, request: Request) -> Response:
        serializer = ApiTokenSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        token, key = tokens.create_token(
            request.user, serializer.validated_data["name"], serializer.validated_data["expires_in_days"]
        )
        token.key = key
        return Response(ApiTokenCreatedSerializer(token).data, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance):
        tokens.revoke_token(self.request.user, instance)


class MeView(APIView):
    """The requesting user, and how they hear of deployments waiting for them."""

    @extend_schema(responses=MeSerializer)
    def get(self, request: Request) -> Response:
        return Response(self._shown(request.user))

    @extend_schema(request=MeSerializer, responses=MeSerializer)
    def patch(self, request: Request) -> Response:
        serializer = MeSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        approval_emails.set_email_mode(request.user, serializer.validated_data["email_notifications"])
        return Response(self._shown(request.user))

    def _shown(self, user) -> dict:
        return {
            "username": user.get_username(),
            "email": user.email,
            "email_notifications": approval_emails.email_mode(user),
        }
