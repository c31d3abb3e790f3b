"""The REST API: declarations. Each write calls one use case, which checks who may do it; refusals are
translated in one place (api/exceptions.py)."""

import json

from django.db.models import Prefetch
from django.http import HttpResponse
from django_filters import rest_framework as filters
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import DjangoModelPermissions
from rest_framework.request import Request
from rest_framework.response import Response

from .. import access, deployments, environments, policies, projects, states, templates
from ..choices import DeploymentStatus
from ..environments import masked_input
from ..iac.state_view import tfstate_view
from ..models import Deployment, PolicyRevision
from ..tree import tree_for
from . import serializers as s
from .throttling import IsAuthenticated


class UpdateViewSet(
    mixins.ListModelMixin,
    mixins.CreateModelMixin,
    mixins.RetrieveModelMixin,
    mixins.UpdateModelMixin,
    viewsets.GenericViewSet,
):
    """List, create, retrieve and update; nothing here is deleted through the API."""


class ProjectViewSet(UpdateViewSet):
    serializer_class = s.ProjectSerializer
    filterset_fields = ["parent"]

    def get_queryset(self):
        return access.visible_projects(self.request.user)

    def perform_create(self, serializer):
        serializer.instance = projects.create_project(self.request.user, **serializer.validated_data)

    def perform_update(self, serializer):
        serializer.instance = projects.update_project(
            self.request.user, serializer.instance, **serializer.validated_data
        )

    @extend_schema(request=s.MembershipSerializer, responses=s.MembershipReadSerializer)
    @action(detail=True, methods=["post", "get"])
    def members(self, request: Request, pk: str | None = None) -> Response:
        project = self.get_object()
        if request.method == "GET":
            memberships = project.memberships.select_related("user")
            return Response(s.MembershipReadSerializer(memberships, many=True).data)
        serializer = s.MembershipSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        membership = projects.grant_role(
            request.user, project, data["role"], member=data.get("username"), team=data.get("team")
        )
        return Response(s.MembershipReadSerializer(membership).data, status=status.HTTP_201_CREATED)


class TemplateViewSet(UpdateViewSet):
    serializer_class = s.TemplateSerializer
    filterset_fields = ["type"]

    def get_queryset(self):
        return access.visible_templates(self.request.user).prefetch_related("approval_policies")

    def perform_create(self, serializer):
        serializer.instance = templates.save_template(self.request.user, **serializer.validated_data)

    def perform_update(self, serializer):
        serializer.instance = templates.save_template(
            self.request.user, serializer.instance, **serializer.validated_data
        )

    @extend_schema(
        request={
            "multipart/form-data": {
                "type": "object",
                "properties": {"archive": {"type": "string", "format": "binary"}},
            }
        },
        responses=s.TemplateSerializer,
    )
    @action(detail=True, methods=["post"], parser_classes=[MultiPartParser])
    def archive(self, request: Request, pk: str | None = None) -> Response:
        """Upload the template's files as a .tar.gz or .zip instead of pointing at a repository."""
        template = templates.upload_archive(request.user, self.get_object(), request.FILES.get("archive"))
        return Response(s.TemplateSerializer(template).data)


class TeamViewSet(UpdateViewSet):
    serializer_class = s.TeamSerializer
    # Organisation-wide objects, written by holders of the Django model permission.
    permission_classes = [IsAuthenticated, DjangoModelPermissions]

    def get_queryset(self):
        return access.visible_teams(self.request.user).prefetch_related("members")


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


class EnvironmentViewSet(UpdateViewSet):
    serializer_class = s.EnvironmentSerializer
    filterset_fields = ["project", "template"]

    def get_queryset(self):
        return access.visible_environments(self.request.user).prefetch_related("template__approval_policies")

    def perform_create(self, serializer):
        serializer.instance = environments.create_environment(self.request.user, **serializer.validated_data)

    def perform_update(self, serializer):
        serializer.instance = environments.update_environment(
            self.request.user, serializer.instance, **serializer.validated_data
        )

    @extend_schema(responses=s.PolicySerializer(many=True))
    @action(detail=True, methods=["get"], url_path="effective-policies")
    def effective_policies(self, request: Request, pk: str | None = None) -> Response:
        environment = self.get_object()
        applying = tree_for(environment.project).effective_policies(environment)
        revisions = PolicyRevision.objects.select_related("created_by").prefetch_related("modules")
        # Whoever sees an environment sees the policies that apply to it (access.visible_policies).
        loaded = access.visible_policies(request.user).prefetch_related(
            Prefetch("revisions", queryset=revisions)
        )
        by_pk = loaded.in_bulk([policy.pk for policy in applying])
        return Response([s.PolicySerializer(by_pk[policy.pk]).data for policy in applying])

    @extend_schema(request=s.TriggerDeploymentSerializer, responses={201: s.DeploymentSerializer})
    @action(detail=True, methods=["post", "get"], url_path="deployments")
    def deployments(self, request: Request, pk: str | None = None) -> Response:
        environment = self.get_object()
        if request.method == "GET":
            page = self.paginate_queryset(_with_details(environment.deployments.select_related("deployer")))
            return self.get_paginated_response(s.DeploymentSerializer(page, many=True).data)
        deployments.check_may_trigger(environment, request.user)
        serializer = s.TriggerDeploymentSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        deployment, created = deployments.trigger_deployment(
            environment,
            request.user,
            type=data["type"],
            trigger_name=data["trigger_name"],
            revision=data["revision"],
            plan=data["plan"],
            total_monthly_cost=data["cost_estimation"].get("total_monthly_cost"),
            monthly_cost_diff=data["cost_estimation"].get("monthly_cost_diff"),
            variables=data["variables"],
            policy_data=data["policy_data"],
            idempotency_key=data["idempotency_key"],
        )
        deployment = _with_details(Deployment.objects.select_related("deployer")).get(pk=deployment.pk)
        return Response(
            s.DeploymentSerializer(deployment).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )

    @extend_schema(
        request=None, responses=OpenApiResponse(description="The current state and its tfstate/v1 view")
    )
    @action(detail=True, methods=["put", "get"], url_path="state")
    def state(self, request: Request, pk: str | None = None) -> Response:
        environment = self.get_object()
        if request.method == "GET":
            current = environment.current_state
            if current is None:
                return Response(
                    {"detail": "This environment has no state yet."}, status=status.HTTP_404_NOT_FOUND
                )
            return Response(
                {
                    "serial": current.serial,
                    "lineage": current.lineage,
                    "created_at": current.created_at,
                    "state": current.document,
                    "view": tfstate_view(current.document),
                }
            )
        force = request.query_params.get("force", "").lower() in ("1", "true", "yes")
        stored = states.upload_state(request.user, environment, request.data, force=force)
        return Response({"serial": stored.serial, "lineage": stored.lineage, "created_at": stored.created_at})


def _with_details(deployments_queryset):
    """What DeploymentSerializer shows, prefetched: a constant number of queries for any page."""
    revisions = PolicyRevision.objects.select_related("policy")
    return deployments_queryset.prefetch_related(
        "approvals__user", Prefetch("evaluations__policy_revisions", queryset=revisions)
    )


class DeploymentFilter(filters.FilterSet):
    status = filters.MultipleChoiceFilter(choices=DeploymentStatus.choices)

    class Meta:
        model = Deployment
        fields = ["status", "environment", "type"]


class DeploymentViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = s.DeploymentSerializer
    filterset_class = DeploymentFilter

    def get_queryset(self):
        return _with_details(access.visible_deployments(self.request.user))

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
        return Response(s.DeploymentSerializer(self.get_queryset().get(pk=deployment.pk)).data)

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
        return Response(s.DeploymentSerializer(self.get_queryset().get(pk=deployment.pk)).data)

    @extend_schema(request=s.CompleteDeploymentSerializer, responses=s.DeploymentSerializer)
    @action(detail=True, methods=["post"])
    def complete(self, request: Request, pk: str | None = None) -> Response:
        deployment = self.get_object()
        serializer = s.CompleteDeploymentSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        deployment = deployments.complete_deployment(
            deployment, request.user, serializer.validated_data["status"], serializer.validated_data["state"]
        )
        return Response(s.DeploymentSerializer(self.get_queryset().get(pk=deployment.pk)).data)
