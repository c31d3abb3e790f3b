"""SCIM 2.0 provisioning (django-scim2 at ``/scim/v2/``): the identity provider creates, changes and
deactivates users, and pushes groups whose membership becomes team membership (source SCIM) through
the group → team mapping organisation admins keep.

django-scim2 gives the routes, the filter parser and the error format; these adapters hold what the
platform does, because its users are Django's own (SCIM's identifiers live in ScimUser) and because
Okta and Azure AD send PATCH shapes the library's defaults do not handle (``members[value eq "id"]``,
``"active": "False"`` as a string, attributes we do not keep). Attributes the platform does not keep are
accepted and ignored, as both providers expect.

Who may call it: only a request with ``Authorization: Bearer <SCIM_BEARER_TOKEN>``; unset, /scim/v2/ is
404. What a SCIM client may do: create, change, deactivate users and push groups. It never makes a
superuser, staff or an organisation role, never touches a superuser or staff account (linking refuses
them), and its groups grant only what the mapping says. Deactivating (``active: false``, or DELETE)
ends the user's sessions and deletes their API tokens."""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django_scim import constants, exceptions
from django_scim.adapters import SCIMMixin

from policies_app import audit
from policies_app.accounts import teams, users
from policies_app.models import ScimGroup, ScimUser, TeamMembership

_USERNAME_UNSAFE = re.compile(r"[^\w.@+-]")
_MEMBER_FILTER = re.compile(r'^members\[value eq "([^"]+)"\]$', re.IGNORECASE)


class ScimBearerAuth:
    """django-scim2's AUTH_CHECK_MIDDLEWARE: the provider's bearer token, compared in constant time."""

    def __init__(self, get_response: Callable[..., HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        expected = settings.SCIM_BEARER_TOKEN
        if not expected:
            return HttpResponse(status=404)
        given = request.headers.get("Authorization", "")
        scheme, _, token = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            hashlib.sha256(token.strip().encode()).digest(), hashlib.sha256(expected.encode()).digest()
        ):
            response = HttpResponse(status=401)
            response["WWW-Authenticate"] = 'Bearer realm="scim"'
            return response
        return self.get_response(request, *args, **kwargs)


def scim_user_model() -> type[ScimUser]:
    return ScimUser


def _as_bool(value: Any) -> bool:
    """Azure AD sends ``"False"``/``"True"`` as strings; Okta sends booleans."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise exceptions.BadRequestError('"active" must be true or false')


def _primary_email(value: Any) -> str:
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return ""
    ordered = sorted((e for e in value if isinstance(e, dict)), key=lambda e: not e.get("primary"))
    return str(ordered[0].get("value") or "")[:254] if ordered else ""


def _paths(operation: dict) -> list[tuple[str, Any]]:
    """An operation's (path, value) pairs: Okta often sends no path and a dict of attributes."""
    path, value = operation.get("path"), operation.get("value")
    if path:
        return [(str(path), value)]
    if isinstance(value, dict):
        return list(value.items())
    raise exceptions.BadRequestError(
        "A PATCH operation needs a path or an object value", scim_type="noTarget"
    )


class ScimUserAdapter(SCIMMixin):
    url_name = "scim:users"
    resource_type = "User"
    ATTR_MAP: dict = {}

    def __init__(self, obj: ScimUser, request: HttpRequest | None = None) -> None:
        super().__init__(obj, request)
        self.changes: dict[str, Any] = {}

    def to_dict(self) -> dict[str, Any]:
        user = self.obj.user
        return {
            "schemas": [constants.SchemaURI.USER],
            "id": self.obj.scim_id,
            "externalId": self.obj.scim_external_id,
            "userName": self.obj.scim_username,
            "name": {"givenName": user.first_name, "familyName": user.last_name},
            "displayName": user.get_full_name() or user.username,
            "emails": [{"value": user.email, "primary": True, "type": "work"}] if user.email else [],
            "active": user.is_active,
            "groups": [{"value": g.scim_id, "display": g.name} for g in user.scim_groups.all()],
            "meta": {
                "resourceType": "User",
                "created": user.date_joined.isoformat(),
                "lastModified": user.date_joined.isoformat(),
                "location": self.location,
            },
        }

    def validate_dict(self, d: dict) -> None:
        if not self.obj.pk and not d.get("userName"):
            raise exceptions.BadRequestError("userName is required")

    def from_dict(self, d: dict) -> None:
        for key, value in d.items():
            self._take(key, value)

    def _take(self, path: str, value: Any) -> None:
        key = path.lower()
        if key == "username":
            self.changes["userName"] = str(value or "")[:255]
        elif key == "externalid":
            self.changes["externalId"] = str(value or "")[:255]
        elif key == "active":
            self.changes["active"] = _as_bool(value)
        elif key == "name" and isinstance(value, dict):
            for sub in ("givenName", "familyName"):
                if sub in value:
                    self.changes[sub] = str(value[sub] or "")[:150]
        elif key in ("name.givenname", "name.familyname"):
            self.changes["givenName" if key.endswith("givenname") else "familyName"] = str(value or "")[:150]
        elif key == "emails":
            self.changes["email"] = _primary_email(value)
        elif key.startswith("emails[") and key.endswith("].value"):  # Azure AD: emails[type eq "work"].value
            self.changes["email"] = str(value or "")[:254]
        # Anything else (title, addresses, the enterprise extension...) is not kept by the platform.

    def handle_operations(self, operations: list) -> None:
        for operation in operations:
            op = str(operation.get("op", "")).lower()
            if op not in ("add", "replace", "remove"):
                raise exceptions.BadRequestError(f'Unknown PATCH op "{op}"')
            for path, value in _paths(operation):
                self._take(path, None if op == "remove" else value)
        self.save()

    def save(self) -> None:
        with transaction.atomic():
            if not self.obj.pk:
                self.obj.scim_username = self.changes["userName"]
                self.obj.user = self._linked_or_new_user()
            user = self.obj.user
            before = {"username": user.username, "email": user.email, "is_active": user.is_active}
            if "userName" in self.changes and self.changes["userName"]:
                self.obj.scim_username = self.changes["userName"]
            if "externalId" in self.changes:
                self.obj.scim_external_id = self.changes["externalId"]
            user.first_name = self.changes.get("givenName", user.first_name)
            user.last_name = self.changes.get("familyName", user.last_name)
            user.email = self.changes.get("email", user.email)
            deactivated = self.changes.get("active") is False and user.is_active
            if "active" in self.changes:
                user.is_active = self.changes["active"]
            user.save()
            self.obj.save()
            if deactivated:
                users.revoke_access(user)
            after = {"username": user.username, "email": user.email, "is_active": user.is_active}
            if after != before:
                audit.record(None, "scim.user_changed", user, before=before, after=after)
        self.changes = {}

    def _linked_or_new_user(self) -> Any:
        """An existing account with this user name or email (never a superuser's or staff's, never one
        SCIM already manages, and only if exactly one matches), else a new one without a password."""
        User = get_user_model()
        name, email = self.changes["userName"], self.changes.get("email", "")
        candidates = User.objects.filter(is_superuser=False, is_staff=False, scim__isnull=True)
        matches = list(candidates.filter(username__iexact=name)[:2]) or (
            list(candidates.filter(email__iexact=email)[:2]) if email else []
        )
        if len(matches) == 1:
            return matches[0]
        base = _USERNAME_UNSAFE.sub("-", name)[:140] or "scim-user"
        username, number = base, 1
        while User.objects.filter(username__iexact=username).exists():
            number += 1
            username = f"{base}-{number}"
        user = User.objects.create_user(username=username, email=email)
        user.set_unusable_password()
        user.save()
        audit.record(
            None, "user.created", user, after={"username": username, "email": email, "source": "scim"}
        )
        return user

    def delete(self) -> None:
        """The provider deletes a user: the account is deactivated (its deployments and approvals keep
        their author), loses access and its SCIM groups and teams, and is no longer SCIM's."""
        user = self.obj.user
        with transaction.atomic():
            user.is_active = False
            user.save(update_fields=["is_active"])
            users.revoke_access(user)
            user.scim_groups.clear()
            teams.sync_provider_teams(user, [], TeamMembership.Source.SCIM)
            audit.record(None, "scim.user_deleted", user, before={"username": user.username})
            self.obj.delete()


class ScimGroupAdapter(SCIMMixin):
    url_name = "scim:groups"
    resource_type = "Group"
    ATTR_MAP: dict = {}

    def __init__(self, obj: ScimGroup, request: HttpRequest | None = None) -> None:
        super().__init__(obj, request)
        self.new_members: set[int] | None = None
        self.added: set[int] = set()
        self.removed: set[int] = set()

    def to_dict(self) -> dict[str, Any]:
        members = ScimUser.objects.filter(user__in=self.obj.members.all()).select_related("user")
        return {
            "schemas": [constants.SchemaURI.GROUP],
            "id": self.obj.scim_id,
            "externalId": self.obj.scim_external_id,
            "displayName": self.obj.name,
            "members": [{"value": m.scim_id, "display": m.scim_username} for m in members],
            "meta": {"resourceType": "Group", "location": self.location},
        }

    def validate_dict(self, d: dict) -> None:
        if not d.get("displayName"):
            raise exceptions.BadRequestError("displayName is required")

    def from_dict(self, d: dict) -> None:
        self.obj.name = str(d["displayName"])[:255]
        if "externalId" in d:
            self.obj.scim_external_id = str(d.get("externalId") or "")[:255]
        if "members" in d:
            self.new_members = self._user_ids(d.get("members"))

    @staticmethod
    def _user_ids(members: Any) -> set[int]:
        values = [str(m.get("value")) for m in members or [] if isinstance(m, dict)]
        found = dict(ScimUser.objects.filter(scim_id__in=values).values_list("scim_id", "user_id"))
        if len(found) != len(set(values)):
            raise exceptions.BadRequestError("A member is not a user provisioned by SCIM")
        return set(found.values())

    def handle_operations(self, operations: list) -> None:
        for operation in operations:
            op = str(operation.get("op", "")).lower()
            for path, value in _paths(operation):
                key = path.lower()
                single = _MEMBER_FILTER.match(path)
                if key == "members" and op == "add":
                    self.added |= self._user_ids(value)
                elif key == "members" and op == "remove":
                    self.removed |= (
                        self._user_ids(value) if value else set(self.obj.members.values_list("pk", flat=True))
                    )
                elif single and op == "remove":
                    self.removed |= self._user_ids([{"value": single.group(1)}])
                elif key == "members" and op == "replace":
                    self.new_members = self._user_ids(value)
                elif key == "displayname" and op in ("add", "replace"):
                    self.obj.name = str(value)[:255]
                elif key == "externalid" and op in ("add", "replace"):
                    self.obj.scim_external_id = str(value or "")[:255]
                elif key == "id":
                    continue  # Okta repeats the id in a replace
                else:
                    raise exceptions.NotImplementedError(f"PATCH {op} of {path} on a group")
        self.save()

    def save(self) -> None:
        with transaction.atomic():
            self.obj.save()
            current = set(self.obj.members.values_list("pk", flat=True))
            wanted = set(self.new_members) if self.new_members is not None else set(current)
            wanted = (wanted | self.added) - self.removed
            if wanted != current:
                self.obj.members.set(wanted)
                audit.record(
                    None,
                    "scim.group_changed",
                    self.obj,
                    before={"members": len(current)},
                    after={"members": len(wanted)},
                )
            _sync(current | wanted)
        self.new_members, self.added, self.removed = None, set(), set()

    def delete(self) -> None:
        with transaction.atomic():
            affected = set(self.obj.members.values_list("pk", flat=True))
            audit.record(None, "scim.group_deleted", self.obj, before={"name": self.obj.name})
            self.obj.delete()
            _sync(affected)


def _sync(user_ids: set[int]) -> None:
    """Each user's SCIM team memberships follow the SCIM groups they are in now."""
    for user in get_user_model().objects.filter(pk__in=user_ids).prefetch_related("scim_groups"):
        teams.sync_provider_teams(user, [g.name for g in user.scim_groups.all()], TeamMembership.Source.SCIM)
