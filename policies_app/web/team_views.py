"""The teams page: every team the user may see, its members with where each came from (manual, SSO
group, SCIM), the roles it holds on projects the user may see, and (organisation admins) the provider
groups mapped to it."""

from django.contrib.auth.decorators import login_required
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from policies_app import access
from policies_app.accounts import teams
from policies_app.models import GroupTeamMapping, ProjectMembership, TeamMembership
from policies_app.web.common import act


def _page(
    request: HttpRequest, error: str = "", errors: dict | None = None, status: int = 200
) -> HttpResponse:
    visible = access.visible_teams(request.user).prefetch_related(
        Prefetch(
            "team_memberships", TeamMembership.objects.select_related("user").order_by("user__username")
        ),
        Prefetch(
            "memberships",
            ProjectMembership.objects.filter(project__in=access.visible_projects(request.user))
            .select_related("project")
            .order_by("project__name"),
        ),
        "group_mappings",
    )
    return render(
        request,
        "web/team_list.html",
        {"teams": visible, "maps_groups": teams.may_map_groups(request.user), "error": error},
        status=status,
    )


@login_required
@require_GET
def team_list(request: HttpRequest) -> HttpResponse:
    return _page(request)


@login_required
@require_POST
def team_group_map(request: HttpRequest) -> HttpResponse:
    team = get_object_or_404(access.visible_teams(request.user), pk=request.POST.get("team", "0") or 0)
    group = request.POST.get("group", "")
    return act(
        request,
        lambda: teams.map_group(request.user, group, team),
        done=f"Members of the group {group.strip()} join {team.name} at their next sign-in.",
        then=reverse("web:team-list"),
        page=lambda **kwargs: _page(request, **kwargs),
    )


@login_required
@require_POST
def team_group_unmap(request: HttpRequest, pk: int) -> HttpResponse:
    mapping = get_object_or_404(GroupTeamMapping.objects.select_related("team"), pk=pk)
    return act(
        request,
        lambda: teams.unmap_group(request.user, mapping),
        done=f"The group {mapping.group} no longer makes members of {mapping.team.name}.",
        then=reverse("web:team-list"),
        page=lambda **kwargs: _page(request, **kwargs),
    )
