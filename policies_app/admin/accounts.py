"""Users, groups, teams, organisation roles, and the audit log (read-only).

Teams and organisation roles are read-only here: the product's use cases check who may change them and
audit it (the team API, the users page). A user's account (active, email, organisation role) is changed on
the users page too, where only a superuser changes a superuser and nobody deactivates themselves; users are
invited there and deactivated, never deleted. What no use case covers stays here for superusers only, and
every such write is audited: a user's groups, permissions and password, and the groups themselves. Those
permissions make policy authors, template and team managers (``access.may_*``), so granting one is a role
grant like any other."""

from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse

from policies_app import audit
from policies_app.admin.display import ChangedInTheProductMixin, ReadOnlyAdminMixin
from policies_app.models import AuditCheckpoint, AuditEntry, AuditStreamCursor, OrganisationMembership, Team


@admin.register(Team)
class TeamAdmin(ChangedInTheProductMixin, admin.ModelAdmin):
    list_display = ["name", "member_count", "description"]
    list_filter = [("members", admin.RelatedOnlyFieldListFilter), "memberships__role"]
    search_fields = ["name", "description", "members__username"]

    @admin.display(description="Members")
    def member_count(self, team: Team) -> int:
        return team.members.count()

    def product_url(self, team: Team) -> str:
        return reverse("team-detail", args=[team.pk])


@admin.register(OrganisationMembership)
class OrganisationMembershipAdmin(ChangedInTheProductMixin, admin.ModelAdmin):
    list_display = ["user", "role"]
    list_filter = ["role"]
    search_fields = ["user__username"]

    def product_url(self, membership: OrganisationMembership) -> str:
        return reverse("web:user-change", args=[membership.user_id])


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["sequence", "created_at", "actor", "action", "target_repr", "project"]
    list_filter = ["action", "target_type"]
    search_fields = ["target_repr", "actor__username", "action"]
    list_select_related = ["actor", "project"]
    date_hierarchy = "created_at"


def _permission_names(permissions: QuerySet) -> list[str]:
    return sorted(
        f"{p.content_type.app_label}.{p.codename}" for p in permissions.select_related("content_type")
    )


def _grants_of(user: User) -> dict[str, Any]:
    return {
        "groups": sorted(user.groups.values_list("name", flat=True)),
        "user_permissions": _permission_names(user.user_permissions.all()),
    }


def _group_snapshot(group: Group) -> dict[str, Any]:
    return {"name": group.name, "permissions": _permission_names(group.permissions.all())}


class SuperusersOnlyMixin:
    """Writes that no use case rules: a superuser's alone (a staff user given ``auth`` permissions would
    otherwise make themselves a superuser)."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser


admin.site.unregister(User)
admin.site.unregister(Group)


@admin.register(User)
class PlatformUserAdmin(SuperusersOnlyMixin, UserAdmin):
    """Only a user's groups, permissions and password change here; the rest on the users page."""

    readonly_fields = [
        "product_page",
        "username",
        "first_name",
        "last_name",
        "email",
        "is_active",
        "is_staff",
        "is_superuser",
        "last_login",
        "date_joined",
    ]
    fieldsets = [
        (None, {"fields": ["username", "password", "product_page"]}),
        ("Personal info", {"fields": ["first_name", "last_name", "email"]}),
        ("Permissions", {"fields": ["is_active", "is_staff", "is_superuser", "groups", "user_permissions"]}),
        ("Important dates", {"fields": ["last_login", "date_joined"]}),
    ]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # users are invited on the users page

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # deactivated on the users page: their deployments and approvals keep their author

    @admin.display(description="Changed on")
    def product_page(self, user: User) -> str:
        if user.pk is None:
            return "—"
        return ChangedInTheProductMixin._link(reverse("web:user-change", args=[user.pk]))

    def save_model(self, request: HttpRequest, obj: User, form: Any, change: bool) -> None:
        form.grants_before = _grants_of(User.objects.get(pk=obj.pk))
        super().save_model(request, obj, form, change)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        after = _grants_of(form.instance)
        if after != form.grants_before:
            audit.record(request.user, "user.changed", form.instance, before=form.grants_before, after=after)

    def user_change_password(self, request: HttpRequest, id: str, form_url: str = "") -> HttpResponse:
        response = super().user_change_password(request, id, form_url)
        if request.method == "POST" and response.status_code == 302:
            user = self.get_object(request, unquote(id))
            audit.record(
                request.user, "user.password_set", user, after={"password": "set in the Django admin"}
            )
        return response


@admin.register(Group)
class PlatformGroupAdmin(SuperusersOnlyMixin, GroupAdmin):
    """A group's permissions make its members policy authors, template or team managers: audited."""

    def save_model(self, request: HttpRequest, obj: Group, form: Any, change: bool) -> None:
        form.group_before = _group_snapshot(Group.objects.get(pk=obj.pk)) if change else None
        super().save_model(request, obj, form, change)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        after = _group_snapshot(form.instance)
        if form.group_before is None:
            audit.record(request.user, "group.created", form.instance, after=after)
        elif after != form.group_before:
            audit.record(request.user, "group.changed", form.instance, before=form.group_before, after=after)

    def delete_model(self, request: HttpRequest, obj: Group) -> None:
        audit.record(request.user, "group.deleted", obj, before=_group_snapshot(obj))
        super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        for group in queryset:
            audit.record(request.user, "group.deleted", group, before=_group_snapshot(group))
        super().delete_queryset(request, queryset)


@admin.register(AuditCheckpoint)
class AuditCheckpointAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["sequence", "created_at", "key_id", "entry_hash"]
    list_filter = ["key_id"]
    search_fields = ["entry_hash", "key_id"]


@admin.register(AuditStreamCursor)
class AuditStreamCursorAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Where the stream to the SIEM stands, per target: read only (the settings say where it goes)."""

    list_display = ["target", "sequence", "delivered_at", "failures", "last_error", "next_attempt_at"]
    list_filter = ["target"]
    search_fields = ["last_error"]
