"""Projects and teams."""

from django.db.models import Prefetch
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from policies_app import access
from policies_app.accounts import teams
from policies_app.api.serializers.accounts import GroupTeamMappingSerializer, TeamSerializer
from policies_app.api.serializers.projects import (
    MembershipReadSerializer,
    MembershipSerializer,
    PolicyAttachmentSerializer,
    ProjectSerializer,
)
from policies_app.api.views.common import UpdateViewSet
from policies_app.models import GroupTeamMapping, ProjectMembership, TeamMembership
from policies_app.projects import projects


class ProjectViewSet(UpdateViewSet):
    serializer_class = ProjectSerializer
    filterset_fields = ["parent"]

    def get_queryset(self):
        return access.visible_projects(self.request.user)

    def perform_create(self, serializer):
        serializer.instance = projects.create_project(self.request.user, **serializer.validated_data)

    def perform_update(self, serializer):
        serializer.instance = projects.update_project(
            self.request.user, serializer.instance, **serializer.validated_data
        )

    @extend_schema(request=MembershipSerializer, responses=MembershipReadSerializer)
    @action(detail=True, methods=["post", "get"])
    def members(self, request: Request, pk: str | None = None) -> Response:
        project = self.get_object()
        if request.method == "GET":
            memberships = project.memberships.select_related("user")
            return Response(MembershipReadSerializer(memberships, many=True).data)
        serializer = MembershipSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        membership = projects.grant_role(
            request.user, project, data["role"], member=data.get("username"), team=data.get("team")
        )
        return Response(MembershipReadSerializer(membership).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={204: None})
    @action(detail=True, methods=["delete"], url_path=r"members/(?P<membership_id>[0-9]+)")
    def remove_member(self, request: Request, pk: str | None = None, membership_id: str = "") -> Response:
        project = self.get_object()
        projects.revoke_role(request.user, get_object_or_404(project.memberships, pk=membership_id))
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=PolicyAttachmentSerializer, responses=ProjectSerializer)
    @action(detail=True, methods=["post"], url_path="policies")
    def attach_policy(self, request: Request, pk: str | None = None) -> Response:
        """Attach a policy to the project (and so to its sub-projects)."""
        project = self.get_object()
        serializer = PolicyAttachmentSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        project = projects.attach_policy(request.user, project, serializer.validated_data["policy"])
        return Response(ProjectSerializer(project).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses=ProjectSerializer)
    @action(detail=True, methods=["delete"], url_path=r"policies/(?P<policy_id>[0-9]+)")
    def detach_policy(self, request: Request, pk: str | None = None, policy_id: str = "") -> Response:
        project = self.get_object()
        policy = get_object_or_404(access.visible_policies(request.user), pk=policy_id)
        return Response(ProjectSerializer(projects.detach_policy(request.user, project, policy)).data)


class TeamViewSet(UpdateViewSet):
    serializer_class = TeamSerializer

    def get_queryset(self):
        return access.visible_teams(self.request.user).prefetch_related(
            "members",
            Prefetch(
                "team_memberships", TeamMembership.objects.select_related("user").order_by("user__username")
            ),
            # Only the roles on projects the reader may see: a team's role elsewhere names a hidden project.
            Prefetch(
                "memberships",
                ProjectMembership.objects.filter(project__in=access.visible_projects(self.request.user))
                .select_related("project")
                .order_by("project__name"),
            ),
            "group_mappings",
        )

    def perform_create(self, serializer):
        serializer.instance = teams.save_team(self.request.user, **serializer.validated_data)

    def perform_update(self, serializer):
        serializer.instance = teams.save_team(
            self.request.user, serializer.instance, **serializer.validated_data
        )


class GroupTeamMappingViewSet(
    mixins.ListModelMixin, mixins.CreateModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet
):
    """Identity provider groups whose members belong to a team (single sign-on and SCIM): organisation
    admins only."""

    serializer_class = GroupTeamMappingSerializer

    def get_queryset(self):
        if not teams.may_map_groups(self.request.user):
            return GroupTeamMapping.objects.none()
        return GroupTeamMapping.objects.select_related("team")

    def perform_create(self, serializer):
        data = serializer.validated_data
        serializer.instance = teams.map_group(self.request.user, data["group"], data["team"])

    def perform_destroy(self, instance):
        teams.unmap_group(self.request.user, instance)
