"""The audit log: filtered, paginated, and exported whole as CSV or JSON."""

from django.http import StreamingHttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request

from policies_app.accounts import audit_log
from policies_app.api.serializers.audit import AuditEntrySerializer, AuditFilterSerializer

FILTERS = [
    OpenApiParameter(name, description=what)
    for name, what in (
        ("actor", "username"),
        ("action", 'an action, or a prefix ending with "." (policy.)'),
        ("target_type", "e.g. project, approvalpolicy, deployment"),
        ("project", "a project id: its entries and its sub-projects'"),
        ("since", "YYYY-MM-DD"),
        ("until", "YYYY-MM-DD"),
        ("text", "in the target's name or the action"),
    )
]


class AuditEntryViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    serializer_class = AuditEntrySerializer
    filter_backends: list = []  # the filters are the audit log's own (audit_log.AuditFilters)

    def get_queryset(self):
        filters = AuditFilterSerializer(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        return audit_log.filtered(
            audit_log.visible_entries(self.request.user), audit_log.AuditFilters(**filters.validated_data)
        )

    @extend_schema(parameters=FILTERS)
    def list(self, request: Request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    @extend_schema(
        parameters=[*FILTERS, OpenApiParameter("file", description="csv or json (default json)")],
        responses=OpenApiResponse(description="Every matching entry, as a CSV or JSON file"),
    )
    @action(detail=False, methods=["get"])
    def export(self, request: Request) -> StreamingHttpResponse:
        kind = request.query_params.get("file", "json")
        if kind not in ("csv", "json"):
            raise ValidationError({"file": ["Must be csv or json."]})
        return export_response(self.get_queryset(), kind)


def export_response(entries, kind: str) -> StreamingHttpResponse:
    rows = entries[: audit_log.EXPORT_LIMIT].iterator(chunk_size=1000)
    if kind == "csv":
        response = StreamingHttpResponse(audit_log.export_csv(rows), content_type="text/csv; charset=utf-8")
    else:
        response = StreamingHttpResponse(audit_log.export_json(rows), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="audit-log.{kind}"'
    return response
