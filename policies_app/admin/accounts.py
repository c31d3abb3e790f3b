"""Teams, organisation roles, and the audit log (read-only)."""

from django.contrib import admin

from policies_app.admin.display import ReadOnlyAdminMixin
from policies_app.models import AuditCheckpoint, AuditEntry, OrganisationMembership, Team


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "member_count", "description"]
    list_filter = [("members", admin.RelatedOnlyFieldListFilter), "memberships__role"]
    search_fields = ["name", "description", "members__username"]
    filter_horizontal = ["members"]

    @admin.display(description="Members")
    def member_count(self, team: Team) -> int:
        return team.members.count()


@admin.register(OrganisationMembership)
class OrganisationMembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "role"]
    list_filter = ["role"]
    search_fields = ["user__username"]
    raw_id_fields = ["user"]


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["sequence", "created_at", "actor", "action", "target_repr", "project"]
    list_filter = ["action", "target_type"]
    search_fields = ["target_repr", "actor__username", "action"]
    list_select_related = ["actor", "project"]
    date_hierarchy = "created_at"


@admin.register(AuditCheckpoint)
class AuditCheckpointAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["sequence", "created_at", "key_id", "entry_hash"]
    list_filter = ["key_id"]
    search_fields = ["entry_hash", "key_id"]
