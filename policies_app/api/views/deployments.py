"""Deployments: the queue, a deployment's input, and approving, rejecting, cancelling, completing it."""

import json

from django.db.models import Prefetch
from django.http import HttpResponse
from django_filters import rest_framework as filters
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from ... import access, deployments
from ...choices import DeploymentStatus
from ...environments import masked_input
from ...models import Deployment, Evaluation, PolicyRevision
from .. import serializers as s


def with_details(deployments_queryset):
    """What DeploymentSerializer shows, prefetched: a constant number of queries for any page."""
    revisions = PolicyRevision.objects.select_related("policy")
    # An evaluation's stored input holds the whole plan (up to the request size limit) and is not shown.
    evaluations = Evaluation.objects.defer("input_json").prefetch_related(
        Prefetch("policy_revisions", queryset=revisions)
    )
    # Nor are the deployment's plan, variables and policy data, nor its environment beyond its id.
    return (
        deployments_queryset.select_related(None)
        .select_related("deployer")
        .defer("plan", "variables", "policy_data")
        .prefetch_related("approvals__user", Prefetch("evaluations", queryset=evaluations))
    )


class DeploymentFilter(filters.FilterSet):
    # A column of the row itself: no join can repeat a row, so no DISTINCT (which sorts whole rows).
    status = filters.MultipleChoiceFilter(choices=DeploymentStatus.choices, distinct=False)

    class Meta:
        model = Deployment
        fields = ["status", "environment", "type"]


class DeploymentViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = s.DeploymentSerializer
    filterset_class = DeploymentFilter

    # Actions that change a deployment need its row, not what the answer shows: that is loaded once the
    # change is made (``shown``).
    ACTIONS_ON_THE_ROW = frozenset({"approve", "reject", "cancel", "complete", "input"})

    def get_queryset(self):
        visible = access.visible_deployments(self.request.user)
        return visible if self.action in self.ACTIONS_ON_THE_ROW else with_details(visible)

    def shown(self, deployment: Deployment) -> Response:
        visible = with_details(access.visible_deployments(self.request.user))
        return Response(s.DeploymentSerializer(visible.get(pk=deployment.pk)).data)

    @extend_schema(responses=OpenApiResponse(description="The full policy input of the latest evaluation"))
    @action(detail=True, methods=["get"])
    def input(self, request: Request, pk: str | None = None) -> HttpResponse:
        deployment = self.get_object()
        evaluation = deployment.evaluations.order_by("-created_at", "-id").first()
        if evaluation is None:
            return Response(
                {"detail": "The deployment has not been evaluated yet."}, status=status.HTTP_404_NOT_FOUND
            )
        if not evaluation.sensitive_variables:
            # Served as stored: the exact bytes the engine was given.
            return HttpResponse(evaluation.input_json, content_type="application/json")
        shown = masked_input(json.loads(evaluation.input_json), evaluation.sensitive_variables)
        return HttpResponse(json.dumps(shown), content_type="application/json")

    def _decide(self, request: Request, decision: str) -> Response:
        deployment = self.get_object()
        serializer = s.ApprovalRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        deployments.record_approval(deployment, request.user, decision, serializer.validated_data["comment"])
        return self.shown(deployment)

    @extend_schema(request=s.ApprovalRequestSerializer, responses=s.DeploymentSerializer)
    @action(detail=True, methods=["post"])
    def approve(self, request: Request, pk: str | None = None) -> Response:
        return self._decide(request, "approve")

    @extend_schema(request=s.ApprovalRequestSerializer, responses=s.DeploymentSerializer)
    @action(detail=True, methods=["post"])
    def reject(self, request: Request, pk: str | None = None) -> Response:
        return self._decide(request, "reject")

    @extend_schema(request=None, responses=s.DeploymentSerializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        deployment = deployments.cancel_deployment(self.get_object(), request.user)
        return self.shown(deployment)

    @extend_schema(request=s.CompleteDeploymentSerializer, responses=s.DeploymentSerializer)
    @action(detail=True, methods=["post"])
    def complete(self, request: Request, pk: str | None = None) -> Response:
        deployment = self.get_object()
        serializer = s.CompleteDeploymentSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        deployment = deployments.complete_deployment(
            deployment, request.user, serializer.validated_data["status"], serializer.validated_data["state"]
        )
        return self.shown(deployment)
