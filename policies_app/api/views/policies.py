"""Approval policies: every write a new revision; dry runs, tests, syncs from git (and their push
webhooks), replays of drafts, publishing, the editor's check, the catalog; policy repositories."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse

from policies_app import access
from policies_app.api.serializers.catalog import InstallSerializer, catalog_entry_view
from policies_app.api.serializers.policies import (
    CheckSerializer,
    DryRunSerializer,
    PolicyRevisionSerializer,
    PolicySerializer,
    PolicyTestRunSerializer,
    PublishSerializer,
    UnsavedTrySerializer,
)
from policies_app.api.serializers.policy_replays import PolicyReplaySerializer, ReplayRequestSerializer
from policies_app.api.serializers.policy_repositories import PolicyRepositorySerializer, SyncRequestSerializer
from policies_app.api.views.common import UpdateViewSet
from policies_app.choices import Enforcement
from policies_app.errors import Invalid, NotFound
from policies_app.models import PolicyReplay, PolicyRevision
from policies_app.policies import authoring, catalog, engine, policy_tests, replay, unsaved
from policies_app.policies.git import push_webhooks, repositories, sources


class PolicyViewSet(UpdateViewSet):
    serializer_class = PolicySerializer
    throttle_scope: str | None = None  # the dry run (evaluate) and tests set their own, scarcer, rate

    def get_queryset(self):
        return PolicySerializer.loading(access.visible_policies(self.request.user))

    def perform_create(self, serializer):
        data = serializer.validated_data
        if "repository" in data:
            serializer.instance = sources.create_synced_policy(
                name=data["name"],
                repository=data["repository"],
                path=data.get("repository_path", ""),
                revision=data.get("repository_revision", ""),
                declared_name=data.get("declared_name", ""),
                rego_version=data["rego_version"],
                description=data.get("description", ""),
                user=self.request.user,
            )
        else:
            serializer.instance = authoring.create_policy(
                name=data["name"],
                description=data.get("description", ""),
                rego_version=data["rego_version"],
                modules=data["modules"],
                data=data.get("data"),
                enforcement=data.get("enforcement", Enforcement.HARD_MANDATORY),
                user=self.request.user,
            )
        serializer.instance = self.get_queryset().get(pk=serializer.instance.pk)

    def perform_update(self, serializer):
        data = serializer.validated_data
        authoring.revise_policy(
            serializer.instance,
            name=data.get("name"),
            description=data.get("description"),
            rego_version=data.get("rego_version") if "rego_version" in self.request.data else None,
            modules=data.get("modules"),
            data=data["data"] if "data" in data else ...,
            enforcement=data.get("enforcement"),
            draft=data.get("draft", False),
            user=self.request.user,
        )
        serializer.instance = self.get_queryset().get(pk=serializer.instance.pk)

    @extend_schema(responses=PolicyRevisionSerializer(many=True))
    @action(detail=True, methods=["get"])
    def revisions(self, request: Request, pk: str | None = None) -> Response:
        policy = self.get_object()
        revisions = policy.revisions.select_related("created_by").prefetch_related("modules")
        context = {"active_revision_id": policy.active_revision_id}
        return Response(PolicyRevisionSerializer(revisions, many=True, context=context).data)

    @extend_schema(
        request=DryRunSerializer,
        responses=OpenApiResponse(description="{decision, deny, pending, warn, allow, error[, fired]}"),
    )
    @action(detail=True, methods=["post"], throttle_scope="dry_run")
    def evaluate(self, request: Request, pk: str | None = None) -> Response:
        policy = self.get_object()
        serializer = DryRunSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        revision = _revision(policy, data.get("revision"))
        input_json, secrets = replay.input_to_try(request.user, data.get("deployment"), data.get("input"))
        return Response(engine.try_revision(revision, input_json, explain=data["explain"], secrets=secrets))

    @extend_schema(
        request=PolicyTestRunSerializer,
        responses=OpenApiResponse(description="{passed, results: [...], coverage: {percent, files}}"),
    )
    @action(detail=True, methods=["post"], throttle_scope="dry_run")
    def test(self, request: Request, pk: str | None = None) -> Response:
        policy = self.get_object()
        serializer = PolicyTestRunSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        revision = policy_tests.revision_to_test(policy, serializer.validated_data.get("revision"))
        report = policy_tests.run_revision_tests(revision, pool_name="dry-run")
        return Response(policy_tests.report_view(revision, report))

    @extend_schema(
        request=SyncRequestSerializer,
        responses={
            200: OpenApiResponse(
                description="{synced: [{policy, commit, revision, activated, tests, errors}]}"
            ),
            202: OpenApiResponse(description="A push webhook: the sync is queued."),
        },
        description="A policy author syncs the policy now (token or session), or GitHub / GitLab call it as a "
        "push webhook, signed with the repository's webhook secret (X-Hub-Signature-256, or X-Gitlab-Token).",
    )
    @action(detail=True, methods=["post"], permission_classes=[AllowAny])
    def sync(self, request: Request, pk: str | None = None) -> Response:
        if not request.user.is_authenticated:
            reply = push_webhooks.receive_push(pk, request.headers, request.body)
            return Response(reply.body, status=reply.status)
        policy = self.get_object()
        serializer = SyncRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        outcomes = sources.sync_policy(
            policy, user=request.user, revision=data.get("revision"), draft=data.get("draft", False)
        )
        mine = next(outcome for outcome in outcomes if outcome.policy.pk == policy.pk)
        if mine.errors:
            raise Invalid(mine.errors)
        return Response({"synced": [outcome.as_dict() for outcome in outcomes]})

    @extend_schema(request=PublishSerializer, responses=PolicySerializer)
    @action(detail=True, methods=["post"])
    def publish(self, request: Request, pk: str | None = None) -> Response:
        policy = self.get_object()
        serializer = PublishSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        authoring.publish_revision(
            policy, _revision(policy, serializer.validated_data["revision"]), request.user
        )
        return Response(PolicySerializer(self.get_queryset().get(pk=policy.pk)).data)

    @extend_schema(
        request=ReplayRequestSerializer,
        responses={201: PolicyReplaySerializer},
        description="Starts a replay (a Celery task); follow its progress at the Location it answers with.",
    )
    @action(detail=True, methods=["post"])
    def replay(self, request: Request, pk: str | None = None) -> Response:
        policy = self.get_object()
        serializer = ReplayRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        started = replay.start_replay(
            policy,
            user=request.user,
            revision_number=data.get("revision"),
            modules=data.get("modules"),
            rego_version=data.get("rego_version"),
            data=data["data"] if "data" in data else ...,
            limit=data.get("limit"),
            environments=data.get("environments"),
        )
        started.refresh_from_db()  # without a broker the replay has already run
        context = {"with_result": False}
        location = reverse(
            "policy-replay-detail", kwargs={"pk": policy.pk, "replay_id": started.pk}, request=request
        )
        return Response(
            PolicyReplaySerializer(started, context=context).data,
            status=status.HTTP_201_CREATED,
            headers={"Location": location},
        )

    @extend_schema(responses=PolicyReplaySerializer(many=True))
    @action(detail=True, methods=["get"])
    def replays(self, request: Request, pk: str | None = None) -> Response:
        policy = self.get_object()
        replay.require_replay_reader(request.user)
        replays = PolicyReplay.objects.filter(revision__policy=policy).select_related(
            "revision", "requested_by"
        )
        context = {"with_result": False}
        return Response(PolicyReplaySerializer(replays[:100], many=True, context=context).data)

    @extend_schema(responses=PolicyReplaySerializer)
    @action(detail=True, methods=["get"], url_path=r"replays/(?P<replay_id>\d+)")
    def replay_detail(
        self, request: Request, pk: str | None = None, replay_id: str | None = None
    ) -> Response:
        policy = self.get_object()
        replay.require_replay_reader(request.user)
        found = (
            PolicyReplay.objects.filter(revision__policy=policy, pk=replay_id)
            .select_related("revision", "requested_by")
            .first()
        )
        if found is None:
            raise NotFound("No such replay of this policy.")
        found.result = replay.result_shown_to(request.user, found.result)
        return Response(PolicyReplaySerializer(found).data)

    @extend_schema(
        request=CheckSerializer,
        responses=OpenApiResponse(
            description="{problems: [{file, line, column, message}]}; empty: it compiles"
        ),
    )
    @action(detail=False, methods=["post"], throttle_scope="editor_check")
    def check(self, request: Request) -> Response:
        authoring.require_author(request.user)
        serializer = CheckSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        policy = self.get_queryset().filter(pk=data["policy"]).first() if "policy" in data else None
        if "policy" in data and policy is None:
            raise NotFound("No such policy.")
        problems = unsaved.check_unsaved(
            request.user, policy, data["rego_version"], data["modules"], data.get("data")
        )
        return Response({"problems": problems})

    @extend_schema(
        request=UnsavedTrySerializer,
        responses=OpenApiResponse(description="{decision, deny, pending, warn, allow, error[, fired]}"),
        description="Try the editor's text (not saved) of this policy on an input, as the policy's "
        "try-it does a stored revision; for those who may edit the policy.",
    )
    @action(detail=True, methods=["post"], url_path="try-unsaved", throttle_scope="dry_run")
    def try_unsaved(self, request: Request, pk: str | None = None) -> Response:
        policy = self.get_object()
        serializer = UnsavedTrySerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        answer = unsaved.try_unsaved(
            request.user,
            policy,
            rego_version=data["rego_version"],
            modules=data["modules"],
            data=data.get("data"),
            enforcement=data["enforcement"],
            deployment_id=data.get("deployment"),
            pasted_input=data.get("input"),
            explain=data["explain"],
        )
        return Response(answer)

    @extend_schema(
        responses=OpenApiResponse(description="[{entry, title, description, parameters_schema, ...}]")
    )
    @action(detail=False, methods=["get"], url_path="catalog")
    def catalog_entries(self, request: Request) -> Response:
        return Response([catalog_entry_view(entry) for entry in catalog.catalog().values()])

    @extend_schema(request=InstallSerializer, responses={201: PolicySerializer})
    @action(detail=False, methods=["post"])
    def install(self, request: Request) -> Response:
        authoring.require_author(request.user)
        serializer = InstallSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        installed = catalog.install(
            data["entry"],
            name=data["name"],
            parameters=data.get("parameters"),
            description=data.get("description"),
            user=request.user,
        )
        return Response(
            PolicySerializer(self.get_queryset().get(pk=installed.pk)).data, status=status.HTTP_201_CREATED
        )


def _revision(policy, number: int | None) -> PolicyRevision:
    """A revision of the policy by number; default: the active one, else the newest."""
    revisions = policy.revisions.select_related("policy").prefetch_related("modules")
    if number is None:
        revision = (
            revisions.filter(pk=policy.active_revision_id).first() or revisions.order_by("-number").first()
        )
    else:
        revision = revisions.filter(number=number).first()
    if revision is None:
        raise Invalid({"revision": [f"{policy.name} has no revision {number}."]})
    return revision


class PolicyRepositoryViewSet(UpdateViewSet):
    """Git repositories that policies are synced from. Their secrets are write-only."""

    serializer_class = PolicyRepositorySerializer

    def get_queryset(self):
        return repositories.visible_repositories(self.request.user)

    def perform_create(self, serializer):
        serializer.instance = repositories.save_repository(
            None, self.request.user, **serializer.validated_data
        )

    def perform_update(self, serializer):
        repositories.save_repository(serializer.instance, self.request.user, **serializer.validated_data)
