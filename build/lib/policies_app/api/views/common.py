"""What every viewset shares. Viewsets are declarations: each write calls one use case, which checks who
may do it; refusals are translated in one place (api/exceptions.py)."""

from rest_framework import mixins, viewsets


class UpdateViewSet(
    mixins.ListModelMixin,
    mixins.CreateModelMixin,
    mixins.RetrieveModelMixin,
    mixins.UpdateModelMixin,
    viewsets.GenericViewSet,
):
    """List, create, retrieve and update; nothing here is deleted through the API."""
