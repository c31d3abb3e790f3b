"""What the admin modules share: read-only admins and how stored documents are shown."""

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


def pre(text: str) -> str:
    return format_html('<pre style="white-space: pre-wrap; margin: 0">{}</pre>', text)


def json_block(value: Any) -> str:
    return pre(json.dumps(value, indent=2, sort_keys=True))
