"""SCIM filters (``userName eq "ada@example.com"``, ``displayName eq "ops"``, ``externalId eq "..."``, the
queries Okta and Azure AD send before creating) on the tables SCIM keeps: django-scim2 turns them into
SQL over these columns only. Its own module: django-scim2's adapters read these when they are imported."""

from django_scim.filters import GroupFilterQuery, UserFilterQuery

from policies_app.models import ScimGroup, ScimUser


class ScimUserFilter(UserFilterQuery):
    model_getter = staticmethod(lambda: ScimUser)
    attr_map = {
        ("userName", None, None): "scim_username",
        ("externalId", None, None): "scim_external_id",
        ("id", None, None): "scim_id",
    }


class ScimGroupFilter(GroupFilterQuery):
    model_getter = staticmethod(lambda: ScimGroup)
    attr_map = {
        ("displayName", None, None): "name",
        ("externalId", None, None): "scim_external_id",
        ("id", None, None): "scim_id",
    }
