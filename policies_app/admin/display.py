"""What the admin modules share: read-only admins, the link to where a ruled model is changed, and how
stored documents are shown.

The Django admin cannot bypass a rule (issue 16, finding 15): a model whose writes have rules (a project's
parent and self-approval, an environment's automatic approval, roles, teams, templates, users) is shown
here read-only, with a link to the product's page where the use case checks the rule and writes the audit
entry. Only writes that no use case rules stay editable, and they write an audit entry themselves.
``tests/ops/test_admin_cannot_bypass.py`` walks every registered admin."""

import json
from typing import Any

from django.http import HttpRequest
from django.utils.html import format_html


class ReadOnlyAdminMixin:
    """Viewable, never added, changed or deleted from the admin."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ChangedInTheProductMixin(ReadOnlyAdminMixin):
    """Read-only here because its writes have rules; ``product_url`` names the page that applies them."""

    def product_url(self, obj: Any) -> str:
        raise NotImplementedError

    @staticmethod
    def _link(url: str) -> str:
        return format_html('<a href="{}">{}</a>', url, url)

    def product_page(self, obj: Any) -> str:
        if obj is None or obj.pk is None:
            return "—"
        return self._link(self.product_url(obj))

    product_page.short_description = "Changed on"  # type: ignore[attr-defined]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [*super().get_readonly_fields(request, obj), "product_page"]  # type: ignore[misc]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        fields = list(super().get_fields(request, obj))  # type: ignore[misc]
        return ["product_page", *(name for name in fields if name != "product_page")]


def pre(text: str) -> str:
    return format_html('<pre style="white-space: pre-wrap; margin: 0">{}</pre>', text)


def json_block(value: Any) -> str:
    return pre(json.dumps(value, indent=2, sort_keys=True))
