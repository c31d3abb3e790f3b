from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination

# Beyond this an OFFSET overflows the database's integer (PostgreSQL answers "bigint out of range").
MAX_OFFSET = 10**12


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    """``?limit`` is capped at ``max_limit``; an ``?offset`` past any real table is refused by name."""

    max_limit = 1000

    def get_offset(self, request: Any) -> int:
        offset = super().get_offset(request)
        if offset > MAX_OFFSET:
            raise ValidationError({"offset": [f"Must be at most {MAX_OFFSET}."]})
        return offset
