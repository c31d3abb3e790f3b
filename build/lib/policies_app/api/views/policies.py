"""Approval policies: every write a new revision, and dry runs."""

from django.db.models import Prefetch
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from ... import access, policies
from ...models import PolicyRevision
from .. import serializers as s
from .common import UpdateViewSet


class PolicyViewSet(UpdateViewSet):
    serializer_class = s.PolicySerializer
    throttle_scope: str | None = None  # the dry run (evaluate) sets its own, scarcer, rate

    def get_queryset(self):
        revisions = PolicyRevision.objects.select_related("created_by").prefetch_related("modules")
        return access.visible_policies(self.request.user).prefetch_related(
            Prefetch("revisions", queryset=revisions)
        )

    def perform_create(self, serializer):
        data = serializer.validated_data
        serializer.instance = policies.create_policy(
            name=data["name"],
            description=data.get("description", ""),
            rego_version=data["rego_version"],
            modules=data["modules"],
            data=data.get("data"),
            user=self.request.user,
        )

    def perform_update(self, serializer):
        data = serializer.validated_data
        policies.revise_policy(
            serializer.instance,
            name=data.get("name"),
            description=data.get("description"),
            rego_version=data.get("rego_version") if "rego_version" in self.request.data else None,
            modules=data.get("modules"),
            data=data["data"] if "data" in data else ...,
            user=self.request.user,
        )
        serializer.instance = self.get_queryset().get(pk=serializer.instance.pk)

    @extend_schema(responses=s.PolicyRevisionSerializer(many=True))
    @action(detail=True, methods=["get"])
    def revisions(self, request: Request, pk: str | None = None) -> Response:
        policy = self.get_object()
        revisions = policy.revisions.select_related("created_by").prefetch_related("modules")
        return Response(s.PolicyRevisionSerializer(revisions, many=True).data)

    @extend_schema(
        request=s.DryRunSerializer,
        responses=OpenApiResponse(description="{decision, deny, pending, warn, allow}"),
    )
    @action(detail=True, methods=["post"], throttle_scope="dry_run")
    def evaluate(self, request: Request, pk: str | None = None) -> Response:
        policy = self.get_object()
        serializer = s.DryRunSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return Response(policies.dry_run_policy(policy, serializer.validated_data["input"]))
