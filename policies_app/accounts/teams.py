"""Use cases of teams: organisation-wide groups of users that roles are given to. Organisation admins
and holders of the Django model permission (given in the admin) create and change them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from policies_app import access, audit
from policies_app.errors import Forbidden, Invalid
from policies_app.models import Team, TeamMembership


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
        [TeamMembership(team=team, user_id=pk, source=TeamMembership.Source.MANUAL) for pk in wanted - present]
    )


def _snapshot(team: Team) -> dict[str, Any]:
    return {
        "name": team.name,
        "description": team.description,
        "members": sorted(team.members.values_list("username", flat=True)),
    }
