"""Use cases of teams: organisation-wide groups of users that roles are given to. Organisation admins
and holders of the Django model permission (given in the admin) create and change them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from policies_app import access, audit
from policies_app.errors import Forbidden, Invalid
from policies_app.models import GroupTeamMapping, Team, TeamMembership


def save_team(
    user: AbstractBaseUser,
    team: Team | None = None,
    *,
    members: Iterable[AbstractBaseUser] | None = None,
    **fields: Any,
) -> Team:
    """Create a team (``team`` None) or change one; members replace the current ones when given."""
    if not access.may_manage_teams(user):
        raise Forbidden("Only organisation admins and team managers may change teams.")
    name = fields.get("name", team.name if team else None)
    clash = Team.objects.filter(name=name)
    if team is not None:
        clash = clash.exclude(pk=team.pk)
    if clash.exists():
        raise Invalid({"name": ["A team of this name already exists."]})
    with transaction.atomic():
        before = _snapshot(team) if team is not None else None
        team = team or Team()
        for key, value in fields.items():
            setattr(team, key, value)
        team.save()
        if members is not None:
            _set_members(team, members)
            access.forget_cached_grants()
        audit.record(
            user, "team.changed" if before else "team.created", team, before=before, after=_snapshot(team)
        )
    return team


def _set_members(team: Team, members: Iterable[AbstractBaseUser]) -> None:
    """The team's members become ``members``: those who stay keep their source (an SSO group or SCIM
    member stays one), those added are manual."""
    wanted = {member.pk for member in members}
    team.team_memberships.exclude(user_id__in=wanted).delete()
    present = set(team.team_memberships.values_list("user_id", flat=True))
    TeamMembership.objects.bulk_create(
        [
            TeamMembership(team=team, user_id=pk, source=TeamMembership.Source.MANUAL)
            for pk in wanted - present
        ]
    )


def _snapshot(team: Team) -> dict[str, Any]:
    return {
        "name": team.name,
        "description": team.description,
        "members": sorted(team.members.values_list("username", flat=True)),
    }


def may_map_groups(user: AbstractBaseUser) -> bool:
    """Mapping an identity provider group to a team hands the team's roles to everyone the provider
    puts in that group: organisation admins only (not team managers)."""
    return user.is_authenticated and access.Grants.of(user).is_organisation_admin


def map_group(user: AbstractBaseUser, group: str, team: Team) -> GroupTeamMapping:
    """Members of ``group`` at the identity provider become members of ``team`` (source SSO group) at
    their next single sign-on, and through SCIM when the provider pushes the group."""
    if not may_map_groups(user):
        raise Forbidden("Only organisation admins may map identity provider groups to teams.")
    group = group.strip()
    if not group or len(group) > 255:
        raise Invalid({"group": ["Name the provider's group (at most 255 characters)."]})
    if GroupTeamMapping.objects.filter(group=group, team=team).exists():
        raise Invalid({"group": ["This group is already mapped to this team."]})
    with transaction.atomic():
        mapping = GroupTeamMapping.objects.create(group=group, team=team)
        audit.record(user, "team.group_mapped", team, after={"group": group, "team": team.name})
    return mapping


def unmap_group(user: AbstractBaseUser, mapping: GroupTeamMapping) -> None:
    """The group no longer makes team members; those it made lose the team at their next sign-in."""
    if not may_map_groups(user):
        raise Forbidden("Only organisation admins may map identity provider groups to teams.")
    with transaction.atomic():
        audit.record(
            user,
            "team.group_unmapped",
            mapping.team,
            before={"group": mapping.group, "team": mapping.team.name},
        )
        mapping.delete()


def sync_provider_teams(user: AbstractBaseUser, groups: Any, source: str) -> None:
    """The user's memberships of ``source`` (SSO group or SCIM) become those the group → team mapping
    makes of ``groups``: added for mapped groups, removed for groups the provider no longer lists.
    Memberships of any other source are left alone (a manual member stays manual)."""
    names = {str(group) for group in groups} if isinstance(groups, list | set | tuple) else set()
    wanted: dict[int, str] = {}
    for mapping in GroupTeamMapping.objects.filter(group__in=names).order_by("group"):
        wanted.setdefault(mapping.team_id, mapping.group)
    held = {m.team_id: m for m in TeamMembership.objects.filter(user=user).select_related("team")}
    stale = [m.pk for team_id, m in held.items() if m.source == source and team_id not in wanted]
    added = [
        TeamMembership(user=user, team_id=team_id, source=source, source_group=group)
        for team_id, group in wanted.items()
        if team_id not in held
    ]
    if not (stale or added):
        return
    TeamMembership.objects.filter(pk__in=stale).delete()
    TeamMembership.objects.bulk_create(added)
    after = sorted(TeamMembership.objects.filter(user=user).values_list("team__name", flat=True))
    audit.record(
        None,
        f"{source}.teams_synced",
        user,
        before={"teams": sorted(m.team.name for m in held.values())},
        after={"teams": after},
    )
    access.forget_cached_grants()
