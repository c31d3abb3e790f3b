"""Deployments: the queue (waiting for me, mine, all; filtered, searched, sorted), a deployment's input
and plan summary, its comments, and approving, rejecting, cancelling, completing it."""

from typing import Any

from django.db.models import Prefetch
from django.http import HttpResponse, HttpResponseNotModified
from django_filters import rest_framework as filters
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from policies_app import access
from policies_app.api.authentication import TokenAuthentication, presented_key
from policies_app.api.serializers.comments import CommentSerializer, PostCommentSerializer
from policies_app.api.serializers.deployments import (
    ApprovalRequestSerializer,
    CompleteDeploymentSerializer,
    DeploymentSerializer,
    DeploymentStatusSerializer,
)
from policies_app.choices import DeploymentStatus
from policies_app.deployments import approvals, comments, inbox, lifecycle, stored_inputs, waiting
from policies_app.deployments.plan_view import shown_plan_view
from policies_app.models import Approval, Deployment, Evaluation, PolicyRevision
from policies_app.notifications.approval_emails import deployment_url


def with_details(deployments_queryset):
    """What DeploymentSerializer shows, prefetched: a constant number of queries for any page."""
    revisions = PolicyRevision.objects.select_related("policy")
    # An evaluation's stored input (its skeleton: variables, approvers) is not shown.
    evaluations = Evaluation.objects.defer("input_json").prefetch_related(
        Prefetch("policy_revisions", queryset=revisions)
    )
    # Nor are the deployment's plan, variables and policy data, nor its environment beyond its id.
    return (
        deployments_queryset.select_related(None)
        .select_related("deployer")
        .defer(*inbox.LIST_DEFERRED)
        .prefetch_related(
            Prefetch("approvals", queryset=Approval.objects.select_related("user")),
            Prefetch("evaluations", queryset=evaluations),
        )
    )


def one_with_details(deployments_queryset):
    """As with_details, for the deployment an approval, a cancel or a completion answers with: who may
    still act on it is shown, which needs its project."""
    return with_details(deployments_queryset).select_related("environment__project")


class DeploymentFilter(filters.FilterSet):
    # A column of the row itself: no join can repeat a row, so no DISTINCT (which sorts whole rows).
    status = filters.MultipleChoiceFilter(choices=DeploymentStatus.choices, distinct=False)
    view = filters.ChoiceFilter(
        choices=[("waiting", "Waiting for me"), ("mine", "My deployments"), ("all", "All")],
        method="filter_view",
        label="waiting: what I may approve now; mine: what I triggered",
    )
    project = filters.NumberFilter(method="filter_project", label="a project and its sub-projects")
    deployer = filters.CharFilter(field_name="deployer__username")
    created_after = filters.DateFilter(field_name="created_at", lookup_expr="date__gte")
    created_before = filters.DateFilter(field_name="created_at", lookup_expr="date__lte")
    search = filters.CharFilter(
        method="filter_search", label="number, revision, environment, project, deployer"
    )
    ordering = filters.ChoiceFilter(choices=[(key, key) for key in inbox.SORTS], method="filter_ordering")

    class Meta:
        model = Deployment
        fields = ["status", "environment", "type"]

    def filter_view(self, deployments, name, value):
        if value == "waiting":
            return inbox.waiting_for(self.request.user, deployments)
        if value == "mine":
            return deployments.filter(deployer=self.request.user)
        return deployments

    def filter_project(self, deployments, name, value):
        return deployments.filter(inbox.in_project(int(value)))

    def filter_search(self, deployments, name, value):
        return deployments.filter(inbox.search_clause(value))

    def filter_ordering(self, deployments, name, value):
        return deployments.order_by(*inbox.SORTS[value])


class JsonOnly(BaseContentNegotiation):
    """What a pipeline polls is JSON whatever it accepts: no Accept header parsed on every poll (a tenth
    of the poll's CPU)."""

    def select_parser(self, request: Request, parsers: list) -> Any:
        return parsers[0] if parsers else None

    def select_renderer(self, request: Request, renderers: list, format_suffix: str | None = None) -> tuple:
        return renderers[0], renderers[0].media_type


class DeploymentViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = DeploymentSerializer
    filterset_class = DeploymentFilter

    # Actions that change a deployment need its row, not what the answer shows: that is loaded once the
    # change is made (``shown``).
    ACTIONS_ON_THE_ROW = frozenset(
        {"approve", "reject", "cancel", "complete", "input", "plan_summary", "comments", "remove_comment"}
    )

    def get_queryset(self):
        visible = access.visible_deployments(self.request.user)
        return visible if self.action in self.ACTIONS_ON_THE_ROW else with_details(visible)

    def get_serializer_context(self) -> dict:
        # One deployment is shown with who may still act on it; a list is not (a query per row).
        return {**super().get_serializer_context(), "with_progress": self.action != "list"}

    def initial(self, request: Request, *args, **kwargs) -> None:
        """A pipeline's poll with a named token is authenticated and answered from one query
        (waiting.poll_with_key) before the permission and throttle checks, which then run as for any
        request; anything else it cannot answer takes the ordinary path."""
        if self.action == "poll_status":
            key = presented_key(request)
            try:
                self.poll = waiting.poll_with_key(key, requested_id(kwargs.get("pk"))) if key else None
            except NotFound:
                self.poll = None  # refused after authentication, as before
            if self.poll is not None:
                request.user, request.auth = self.poll.user, None
                request._authenticator = TokenAuthentication()  # what authenticated it (DRF asks)
        super().initial(request, *args, **kwargs)

    def retrieve(self, request: Request, *args, **kwargs) -> HttpResponse:
        """The full representation, tagged. A client that sends the current tag gets 304 and no body,
        decided by one small query (waiting.full_tag) instead of reading evaluations and approvals."""
        if_none_match = request.META.get("HTTP_IF_NONE_MATCH", "")
        if if_none_match:
            tag = waiting.full_tag(request.user, requested_id(kwargs.get("pk")))
            if tag is None:
                raise NotFound()
            if waiting.matches(if_none_match, tag):
                return not_modified(tag)
        deployment = self.get_object()
        # The tag of what is shown, from the objects shown: no query.
        return tagged(Response(self.get_serializer(deployment).data), waiting.full_tag_of(deployment))

    @extend_schema(
        responses={
            200: DeploymentStatusSerializer,
            304: OpenApiResponse(description="Unchanged since the tag sent in If-None-Match"),
        },
        description="What a waiting pipeline polls: the status, the decision, what it waits for and the "
        "page where approvers decide, from one small query; send the ETag of the last answer in "
        "If-None-Match and an unchanged status is answered 304 with no body.",
    )
    @action(
        detail=True,
        methods=["get"],
        url_path="status",
        url_name="status",
        renderer_classes=[JSONRenderer],
        content_negotiation_class=JsonOnly,
    )
    def poll_status(self, request: Request, pk: str | None = None) -> HttpResponse:
        poll = getattr(self, "poll", None)
        shown = poll.shown if poll else waiting.slim_status(request.user, requested_id(pk))
        if shown is None:
            raise NotFound()
        tag = waiting.tag_of(shown)
        if waiting.matches(request.META.get("HTTP_IF_NONE_MATCH", ""), tag):
            return not_modified(tag)
        shown["url"] = deployment_url(shown["id"])  # the page approvers' emails link to
        return tagged(Response(DeploymentStatusSerializer(shown).data), tag)

    def shown(self, deployment: Deployment) -> Response:
        visible = one_with_details(access.visible_deployments(self.request.user))
        return Response(
            DeploymentSerializer(visible.get(pk=deployment.pk), context=self.get_serializer_context()).data
        )

    @extend_schema(
        responses=OpenApiResponse(description="The plan as approvers read it: counts and resources")
    )
    @action(detail=True, methods=["get"], url_path="plan-summary")
    def plan_summary(self, request: Request, pk: str | None = None) -> Response:
        plan = shown_plan_view(self.get_object())
        summary = plan.summary
        return Response(
            {
                "format": summary.format or None,
                "headline": summary.headline,
                "terraform_line": summary.terraform_line if summary.has_plan else None,
                "counts": summary.counts,
                "resources": [
                    {
                        "address": r.address,
                        "type": r.type,
                        "action": r.action,
                        "note": r.note,
                        "replace_paths": list(r.replace_paths),
                        "attributes": [
                            {
                                "path": a.path,
                                "before": a.before,
                                "after": a.after,
                                "changed": a.changed,
                                "forces_replacement": a.forces_replacement,
                            }
                            for a in r.attributes
                        ],
                    }
                    for r in summary.resources
                ],
                "plan_text": plan.text,
            }
        )

    @extend_schema(
        responses={
            200: OpenApiResponse(description="The full policy input of the latest evaluation"),
            404: OpenApiResponse(description="The deployment has not been evaluated yet"),
            410: OpenApiResponse(description="The input was purged (retention of policy inputs)"),
        }
    )
    @action(detail=True, methods=["get"])
    def input(self, request: Request, pk: str | None = None) -> HttpResponse:
        deployment = self.get_object()
        evaluation = deployment.evaluations.order_by("-created_at", "-id").first()
        if evaluation is None:
            return Response(
                {"detail": "The deployment has not been evaluated yet."}, status=status.HTTP_404_NOT_FOUND
            )
        shown = stored_inputs.shown_input(evaluation)
        if shown is None:
            return Response({"detail": stored_inputs.purged_detail(evaluation)}, status=status.HTTP_410_GONE)
        return HttpResponse(shown, content_type="application/json")

    @extend_schema(methods=["get"], request=None, responses=CommentSerializer(many=True))
    @extend_schema(methods=["post"], request=PostCommentSerializer, responses={201: CommentSerializer})
    @action(detail=True, methods=["get", "post"])
    def comments(self, request: Request, pk: str | None = None) -> Response:
        """The thread, oldest first, paginated like every list (whoever may see the deployment); posting
        needs the deploy capability."""
        deployment = self.get_object()
        if request.method == "GET":
            page = self.paginate_queryset(comments.thread(deployment))
            return self.get_paginated_response(CommentSerializer(page, many=True).data)
        serializer = PostCommentSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        comment = comments.post_comment(request.user, deployment, serializer.validated_data["body"])
        return Response(CommentSerializer(comment).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={204: None})
    @action(detail=True, methods=["delete"], url_path=r"comments/(?P<comment_id>[0-9]+)")
    def remove_comment(self, request: Request, pk: str | None = None, comment_id: str = "") -> Response:
        """Its author or an organisation admin removes a comment: its text is gone, the row says who."""
        comment = comments.comment_in(self.get_object(), requested_id(comment_id))
        comments.remove_comment(request.user, comment)
        return Response(status=status.HTTP_204_NO_CONTENT)

    def _decide(self, request: Request, decision: str) -> Response:
        deployment = self.get_object()
        serializer = ApprovalRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        approvals.record_approval(deployment, request.user, decision, serializer.validated_data["comment"])
        return self.shown(deployment)

    @extend_schema(request=ApprovalRequestSerializer, responses=DeploymentSerializer)
    @action(detail=True, methods=["post"])
    def approve(self, request: Request, pk: str | None = None) -> Response:
        return self._decide(request, "approve")

    @extend_schema(request=ApprovalRequestSerializer, responses=DeploymentSerializer)
    @action(detail=True, methods=["post"])
    def reject(self, request: Request, pk: str | None = None) -> Response:
        return self._decide(request, "reject")

    @extend_schema(request=None, responses=DeploymentSerializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        deployment = approvals.cancel_deployment(self.get_object(), request.user)
        return self.shown(deployment)

    @extend_schema(request=CompleteDeploymentSerializer, responses=DeploymentSerializer)
    @action(detail=True, methods=["post"])
    def complete(self, request: Request, pk: str | None = None) -> Response:
        deployment = self.get_object()
        serializer = CompleteDeploymentSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        deployment = lifecycle.complete_deployment(
            deployment, request.user, serializer.validated_data["status"], serializer.validated_data["state"]
        )
        return self.shown(deployment)


LARGEST_ID = 2**63 - 1  # of a 64-bit primary key: a larger number would overflow the database's integer


def requested_id(pk: str | None) -> int:
    """The deployment id of the path; anything else (not a number, or no id a row can have) is a
    deployment that does not exist. The prepared queries go around the ORM's own range check."""
    try:
        number = int(pk or "")
    except ValueError:
        raise NotFound() from None
    if not 0 < number <= LARGEST_ID:
        raise NotFound()
    return number


def tagged(response: HttpResponse, tag: str) -> HttpResponse:
    response["ETag"] = tag
    # Each caller's own: no shared cache keeps it, and every use asks the platform again (with the tag).
    response["Cache-Control"] = "private, no-cache"
    return response


def not_modified(tag: str) -> HttpResponseNotModified:
    # No body to render: Django's own 304, which DRF passes through with the headers it adds to every
    # answer, not a Response that runs the JSON renderer on nothing (what DRF answers is the same: no
    # body, no Content-Type).
    return tagged(HttpResponseNotModified(), tag)
