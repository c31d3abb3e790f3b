"""Projects and teams."""

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from ... import access, projects, teams
from .. import serializers as s
from .common import UpdateViewSet


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


class TeamViewSet(UpdateViewSet):
    serializer_class = s.TeamSerializer

    def get_queryset(self):
        return access.visible_teams(self.request.user).prefetch_related("members")

    def perform_create(self, serializer):
        serializer.instance = teams.save_team(self.request.user, **serializer.validated_data)

    def perform_update(self, serializer):
        serializer.instance = teams.save_team(
            self.request.user, serializer.instance, **serializer.validated_data
        )
