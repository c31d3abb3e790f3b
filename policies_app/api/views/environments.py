"""Environments: their settings, effective policies, deployments and state."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from policies_app import access
from policies_app.api.serializers.deployments import DeploymentSerializer, TriggerDeploymentSerializer
from policies_app.api.serializers.environments import EnvironmentSerializer
from policies_app.api.serializers.policies import PolicySerializer
from policies_app.api.views.common import UpdateViewSet
from policies_app.api.views.deployments import one_with_details, with_details
from policies_app.deployments import lifecycle
from policies_app.guards.masking import shown_state, shown_state_view
from policies_app.iac.state_view import tfstate_view
from policies_app.models import Deployment
from policies_app.projects import environment_paths, environments, states
from policies_app.projects.tree import effective_policies_query, in_effective_order


class EnvironmentViewSet(UpdateViewSet):
    serializer_class = EnvironmentSerializer
    filterset_fields = ["project", "template"]

    def get_queryset(self):
        visible = access.visible_environments(self.request.user)
        if self.action in ("deployments", "state", "effective_policies"):
            # The environment's row (with its project and template) is enough: its template's policies
            # are not shown, or are found with the others (effective_policies).
            return visible
        return visible.prefetch_related("template__approval_policies")

    def get_object(self):
        """By id, or by path (``project/environment``) where a pipeline names the environment."""
        key = self.kwargs.get(self.lookup_field, "")
        if key.isdigit():
            return super().get_object()
        environment = environment_paths.find_visible_environment(self.request.user, key)
        self.check_object_permissions(self.request, environment)
        return environment

    def perform_create(self, serializer):
        serializer.instance = environments.create_environment(self.request.user, **serializer.validated_data)

    def perform_update(self, serializer):
        serializer.instance = environments.update_environment(
            self.request.user, serializer.instance, **serializer.validated_data
        )

    @extend_schema(responses=PolicySerializer(many=True))
    @action(detail=True, methods=["get"], url_path="effective-policies")
    def effective_policies(self, request: Request, pk: str | None = None) -> Response:
        environment = self.get_object()
        # Whoever sees an environment sees the policies that apply to it (access.visible_policies): they
        # are shown without asking again. Found and loaded together, with no project tree.
        applying = in_effective_order(PolicySerializer.loading(effective_policies_query(environment)))
        return Response(PolicySerializer(applying, many=True).data)

    @extend_schema(request=TriggerDeploymentSerializer, responses={201: DeploymentSerializer})
    @action(detail=True, methods=["post", "get"], url_path="deployments")
    def deployments(self, request: Request, pk: str | None = None) -> Response:
        environment = self.get_object()
        if request.method == "GET":
            page = self.paginate_queryset(with_details(environment.deployments.select_related("deployer")))
            return self.get_paginated_response(DeploymentSerializer(page, many=True).data)
        lifecycle.require_may_trigger(environment, request.user)
        serializer = TriggerDeploymentSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        deployment, created = lifecycle.trigger_deployment(
            environment,
            request.user,
            type=data["type"],
            trigger_name=data["trigger_name"],
            revision=data["revision"],
            plan=data["plan"],
            plan_text=data["plan_text"],
            total_monthly_cost=data["cost_estimation"].get("total_monthly_cost"),
            monthly_cost_diff=data["cost_estimation"].get("monthly_cost_diff"),
            variables=data["variables"],
            policy_data=data["policy_data"],
            idempotency_key=data["idempotency_key"],
            links={name: data[name] for name in lifecycle.CHANGE_LINKS},
        )
        # Answered as a single deployment is shown: with who may act on it and its requirements, which a
        # pipeline prints when the verdict is already in.
        deployment = one_with_details(Deployment.objects.select_related("deployer")).get(pk=deployment.pk)
        return Response(
            DeploymentSerializer(deployment, context={"with_progress": True}).data,
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
                    "state": shown_state(current.document),
                    "view": shown_state_view(tfstate_view(current.document), current.document),
                }
            )
        force = request.query_params.get("force", "").lower() in ("1", "true", "yes")
        stored = states.upload_state(request.user, environment, request.data, force=force)
        return Response({"serial": stored.serial, "lineage": stored.lineage, "created_at": stored.created_at})
