"""Query-string filters narrow lists only."""

from typing import Any

from django.db.models import QuerySet
from django_filters.rest_framework import DjangoFilterBackend


class ListFilterBackend(DjangoFilterBackend):
    """django-filter's backend, applied to lists. A single object is found by its id alone: building the
    filter form for it would cost every detail request (a pipeline polling its deployment) a few ms."""

    def filter_queryset(self, request: Any, queryset: QuerySet, view: Any) -> QuerySet:
        if getattr(view, "detail", False):
            return queryset
        return super().filter_queryset(request, queryset, view)
