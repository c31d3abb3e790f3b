from django.conf import settings
from django.http import HttpResponse
from django_filters import rest_framework as filters
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import APIException, PermissionDenied, ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import DjangoModelPermissions, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from .. import access, deployments, policies, rego, states
from ..choices import DeploymentStatus
from ..iac.plan_formats import PlanFormatError, check_plan
from ..iac.sources import TemplateSourceError, extract_archive
from ..models import Deployment, Team, Template
from . import serializers as s


class EngineUnavailable(APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "engine_unavailable"


ACTION_ERROR_STATUS = {
    "forbidden": status.HTTP_403_FORBIDDEN,
    "self_approval": status.HTTP_403_FORBIDDEN,
    "not_pending": status.HTTP_409_CONFLICT,
    "already_decided": status.HTTP_409_CONFLICT,
    "idempotency_conflict": status.HTTP_409_CONFLICT,
    "invalid": status.HTTP_400_BAD_REQUEST,
}


def action_error_response(problem: deployments.DeploymentActionError) -> Response:
    return Response(
        {"detail": problem.message, "code": problem.code}, status=ACTION_ERROR_STATUS[problem.code]
    )


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
        return access.visible_projects(self.request.user).prefetch_related("approval_policies")

    def perform_create(self, serializer):
        if not access.may_place_project_under(self.request.user, serializer.validated_data.get("parent")):
            raise PermissionDenied(
                "Only admins of the parent project (superusers, for a root project) may create projects."
            )
        serializer.save()

    def perform_update(self, serializer):
        project = serializer.instance
        if not access.can_administer(self.request.user, project):
            raise PermissionDenied("Only admins of this project may change it.")
        new_parent = serializer.validated_data.get("parent", project.parent)
        # Moving a project changes which policies it inherits: it takes authority over both places.
        if new_parent != project.parent and not (
            access.may_place_project_under(self.request.user, project.parent)
            and access.may_place_project_under(self.request.user, new_parent)
        ):
            raise PermissionDenied("Moving a project needs admin rights on its old and its new parent.")
        serializer.save()

    @extend_schema(request=s.MembershipSerializer, responses=s.MembershipReadSerializer)
    @action(detail=True, methods=["post", "get"])
    def members(self, request: Request, pk: str | None = None) -> Response:
        project = self.get_object()
        if request.method == "GET":
            memberships = project.memberships.select_related("user")
            return Response(s.MembershipReadSerializer(memberships, many=True).data)
        if not access.can_administer(request.user, project):
            raise PermissionDenied("Only admins of this project may add members.")
        serializer = s.MembershipSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        membership = access.grant_role(
            project, data["role"], user=data.get("username"), team=data.get("team")
        )
        return Response(s.MembershipReadSerializer(membership).data, status=status.HTTP_201_CREATED)


class TemplateViewSet(UpdateViewSet):
    queryset = Template.objects.prefetch_related("approval_policies")
    serializer_class = s.TemplateSerializer
    # Organisation-wide objects: everyone signed in reads; writing needs the Django model permission.
    permission_classes = [DjangoModelPermissions]
    filterset_fields = ["type"]

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
        template = self.get_object()
        upload = request.FILES.get("archive")
        if upload is None:
            raise ValidationError({"archive": ["Attach the archive as the multipart field 'archive'."]})
        try:
            extract_archive(upload.read(), settings.TEMPLATE_CHECKOUT_DIR)
        except TemplateSourceError as problem:
            raise ValidationError({"archive": [str(problem)]}) from None
        upload.seek(0)
        template.archive.save(upload.name, upload, save=True)
        return Response(s.TemplateSerializer(template).data)


class TeamViewSet(UpdateViewSet):
    queryset = Team.objects.prefetch_related("members")
    serializer_class = s.TeamSerializer
    # Organisation-wide objects: everyone signed in reads; writing needs the Django model permission.
    permission_classes = [DjangoModelPermissions]


class PolicyViewSet(UpdateViewSet):
    serializer_class = s.PolicySerializer
    # Organisation-wide objects: everyone signed in reads; writing needs the Django model permission.
    permission_classes = [DjangoModelPermissions]

    def get_queryset(self):
        return access.visible_policies(self.request.user)

    def _call(self, function, **kwargs):
        try:
            return function(**kwargs)
        except policies.PolicyValidationError as problem:
            raise ValidationError(problem.errors) from None
        except rego.EngineUnavailableError as problem:
            raise EngineUnavailable(f"The policy engine cannot check the policy now: {problem}") from None

    def perform_create(self, serializer):
        data = serializer.validated_data
        serializer.instance = self._call(
            policies.create_policy,
            name=data["name"],
            description=data.get("description", ""),
            rego_version=data["rego_version"],
            modules=data["modules"],
            data=data.get("data"),
            user=self.request.user,
        )

    def perform_update(self, serializer):
        data = serializer.validated_data
        self._call(
            policies.revise_policy,
            policy=serializer.instance,
            name=data.get("name"),
            description=data.get("description"),
            rego_version=data.get("rego_version") if "rego_version" in self.request.data else None,
            modules=data.get("modules"),
            data=data["data"] if "data" in data else ...,
            user=self.request.user,
        )

    @extend_schema(responses=s.PolicyRevisionSerializer(many=True))
    @action(detail=True, methods=["get"])
    def revisions(self, request: Request, pk: str | None = None) -> Response:
        policy = self.get_object()
        return Response(s.PolicyRevisionSerializer(policy.revisions.all(), many=True).data)

    @extend_schema(
        request=s.DryRunSerializer,
        responses=OpenApiResponse(description="{decision, deny, pending, warn, allow}"),
    )
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def evaluate(self, request: Request, pk: str | None = None) -> Response:
        policy = self.get_object()
        serializer = s.DryRunSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return Response(policies.dry_run_policy(policy, serializer.validated_data["input"]))


def _check_plan_size(request: Request) -> Response | None:
    if int(request.META.get("CONTENT_LENGTH") or 0) > settings.PLAN_SIZE_LIMIT_BYTES:
        limit_mb = settings.PLAN_SIZE_LIMIT_BYTES / (1024 * 1024)
        return Response(
            {"plan": [f"The request is larger than the plan size limit of {limit_mb:g} MB."]},
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    return None


class EnvironmentViewSet(UpdateViewSet):
    serializer_class = s.EnvironmentSerializer
    filterset_fields = ["project", "template"]

    def get_queryset(self):
        return access.visible_environments(self.request.user)

    def perform_create(self, serializer):
        # Admins only: an environment's settings (automatic approval above all) decide what needs approving.
        if not access.can_administer(self.request.user, serializer.validated_data["project"]):
            raise PermissionDenied("Only admins of the project may create environments in it.")
        serializer.save()

    def perform_update(self, serializer):
        project = serializer.validated_data.get("project", serializer.instance.project)
        if not (
            access.can_administer(self.request.user, serializer.instance.project)
            and access.can_administer(self.request.user, project)
        ):
            raise PermissionDenied("Only admins of the project may change its environments.")
        serializer.save()

    @extend_schema(responses=s.PolicySerializer(many=True))
    @action(detail=True, methods=["get"], url_path="effective-policies")
    def effective_policies(self, request: Request, pk: str | None = None) -> Response:
        from ..evaluation import effective_policies

        environment = self.get_object()
        return Response(s.PolicySerializer(effective_policies(environment), many=True).data)

    @extend_schema(request=s.TriggerDeploymentSerializer, responses={201: s.DeploymentSerializer})
    @action(detail=True, methods=["post", "get"], url_path="deployments")
    def deployments(self, request: Request, pk: str | None = None) -> Response:
        environment = self.get_object()
        if request.method == "GET":
            page = self.paginate_queryset(environment.deployments.all())
            return self.get_paginated_response(s.DeploymentSerializer(page, many=True).data)
        try:
            deployments.check_may_trigger(environment, request.user)
        except deployments.DeploymentActionError as problem:
            return action_error_response(problem)
        too_large = _check_plan_size(request)
        if too_large is not None:
            return too_large
        serializer = s.TriggerDeploymentSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            check_plan(environment.template.type, data["type"], data["plan"])
        except PlanFormatError as problem:
            raise ValidationError({"plan": [str(problem)]}) from None
        try:
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
        except deployments.DeploymentActionError as problem:
            return action_error_response(problem)
        deployment.refresh_from_db()
        return Response(
            s.DeploymentSerializer(deployment).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )

    @extend_schema(
        request=None, responses=OpenApiResponse(description="The current state and its tfstate/v1 view")
    )
    @action(detail=True, methods=["put", "get"], url_path="state")
    def state(self, request: Request, pk: str | None = None) -> Response:
        from ..iac.state_view import tfstate_view

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
        if not access.can_deploy(request.user, environment.project):
            raise PermissionDenied("Only deployers of the project may upload its state.")
        if not isinstance(request.data, dict):
            raise ValidationError({"state": ["The state must be a JSON object."]})
        force = request.query_params.get("force", "").lower() in ("1", "true", "yes")
        try:
            stored = states.store_state(environment, dict(request.data), user=request.user, force=force)
        except states.StateFormatError as problem:
            raise ValidationError({"state": [str(problem)]}) from None
        except states.StateConflictError as problem:
            return Response({"detail": str(problem)}, status=status.HTTP_409_CONFLICT)
        return Response({"serial": stored.serial, "lineage": stored.lineage, "created_at": stored.created_at})


class DeploymentFilter(filters.FilterSet):
    status = filters.MultipleChoiceFilter(choices=DeploymentStatus.choices)

    class Meta:
        model = Deployment
        fields = ["status", "environment", "type"]


class DeploymentViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = s.DeploymentSerializer
    filterset_class = DeploymentFilter

    def get_queryset(self):
        return access.visible_deployments(self.request.user).prefetch_related(
            "approvals__user", "evaluations__policy_revisions__policy"
        )

    @extend_schema(responses=OpenApiResponse(description="The full policy input of the latest evaluation"))
    @action(detail=True, methods=["get"])
    def input(self, request: Request, pk: str | None = None) -> HttpResponse:
        deployment = self.get_object()
        evaluation = deployment.evaluations.order_by("-created_at", "-id").first()
        if evaluation is None:
            return Response(
                {"detail": "The deployment has not been evaluated yet."}, status=status.HTTP_404_NOT_FOUND
            )
        # Served as stored: the exact bytes the engine was given.
        return HttpResponse(evaluation.input_json, content_type="application/json")

    def _decide(self, request: Request, decision: str) -> Response:
        deployment = self.get_object()
        serializer = s.ApprovalRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            deployments.record_approval(
                deployment, request.user, decision, serializer.validated_data["comment"]
            )
        except deployments.DeploymentActionError as problem:
            return action_error_response(problem)
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
        deployment = self.get_object()
        try:
            deployment = deployments.cancel_deployment(deployment, request.user)
        except deployments.DeploymentActionError as problem:
            return action_error_response(problem)
        return Response(s.DeploymentSerializer(deployment).data)

    @extend_schema(request=s.CompleteDeploymentSerializer, responses=s.DeploymentSerializer)
    @action(detail=True, methods=["post"])
    def complete(self, request: Request, pk: str | None = None) -> Response:
        deployment = self.get_object()
        serializer = s.CompleteDeploymentSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            deployment = deployments.complete_deployment(
                deployment,
                request.user,
                serializer.validated_data["status"],
                serializer.validated_data["state"],
            )
        except deployments.DeploymentActionError as problem:
            return action_error_response(problem)
        except states.StateFormatError as problem:
            raise ValidationError({"state": [str(problem)]}) from None
        return Response(s.DeploymentSerializer(deployment).data)
