"""Approval policies, their revisions and modules; dry runs, publishing, the editor's check and test runs."""

from typing import Any

from django.db.models import Count, F, OuterRef, Prefetch, QuerySet, Subquery
from django.db.models.functions import Coalesce
from rest_framework import serializers

from policies_app.choices import Enforcement, RegoVersion
from policies_app.models import ApprovalPolicy, PolicyRepository, PolicyRevision
from policies_app.policies.authoring import refusal_to_activate


class PolicyModuleSerializer(serializers.Serializer):
    filename = serializers.CharField(max_length=500, help_text="A path such as main.rego or lib/cost.rego.")
    source = serializers.CharField(trim_whitespace=False)


# The context of a revision shown inside its policy, which sets ``active`` itself (PolicySerializer).
_ACTIVE_PER_POLICY = object()


class PolicyRevisionSerializer(serializers.ModelSerializer):
    """A revision, with whether it is the one in force and, if it could not be, why."""

    modules = PolicyModuleSerializer(many=True, read_only=True)
    created_by = serializers.CharField(source="created_by.username", default=None, read_only=True)
    active = serializers.SerializerMethodField(help_text="Whether this is the revision in force.")
    not_activated_because = serializers.SerializerMethodField(
        help_text="Why its tests kept it from being the revision in force; null when they did not."
    )

    class Meta:
        model = PolicyRevision
        fields = [
            "id",
            "number",
            "rego_version",
            "enforcement",
            "data",
            "modules",
            "draft",
            "commit",
            "tests_status",
            "tests_report",
            "created_by",
            "created_at",
            "active",
            "not_activated_because",
        ]

    def get_active(self, revision: PolicyRevision) -> bool:
        return revision.pk == self.context.get("active_revision_id")

    def get_not_activated_because(self, revision: PolicyRevision) -> str | None:
        refusal = refusal_to_activate(revision)
        return refusal.message if refusal is not None else None


class PolicyRepositoryReferenceSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    url = serializers.CharField()


class PolicySourceSerializer(serializers.Serializer):
    """Where a policy's modules come from: written inline (only ``kind``), or a folder of a git
    repository (every key)."""

    kind = serializers.ChoiceField(choices=[("inline", "inline"), ("repository", "repository")])
    repository = PolicyRepositoryReferenceSerializer(required=False)
    path = serializers.CharField(required=False, allow_blank=True, help_text="The folder; empty: the root.")
    revision = serializers.CharField(required=False, help_text="The branch, tag or commit followed.")
    declared_name = serializers.CharField(required=False, allow_blank=True)
    synced_commit = serializers.CharField(required=False, allow_blank=True)
    synced_at = serializers.DateTimeField(required=False, allow_null=True)
    sync_error = serializers.CharField(required=False, allow_null=True)


class PolicySerializer(serializers.ModelSerializer):
    """Create or revise a policy: every write becomes a new immutable revision, active when its tests
    pass (unless saved as a draft). A policy follows either inline modules or a repository folder."""

    rego_version = serializers.ChoiceField(
        choices=RegoVersion.choices, default=RegoVersion.V1, write_only=True
    )
    enforcement = serializers.ChoiceField(choices=Enforcement.choices, required=False, write_only=True)
    modules = PolicyModuleSerializer(many=True, write_only=True, required=False)
    data = serializers.JSONField(required=False, allow_null=True, write_only=True)
    draft = serializers.BooleanField(
        required=False,
        default=False,
        write_only=True,
        help_text="Save without activating (to try or replay).",
    )
    repository = serializers.PrimaryKeyRelatedField(
        queryset=PolicyRepository.objects.all(), required=False, write_only=True
    )
    repository_path = serializers.CharField(required=False, allow_blank=True, write_only=True)
    repository_revision = serializers.CharField(required=False, allow_blank=True, write_only=True)
    declared_name = serializers.CharField(required=False, allow_blank=True, write_only=True)
    # Read-only, as ``to_representation`` shows them (declared so that the schema shows them too).
    active_revision = serializers.IntegerField(
        read_only=True, allow_null=True, help_text="The number of the revision in force; null until one is."
    )
    latest_revision = PolicyRevisionSerializer(read_only=True, allow_null=True)
    revision_count = serializers.IntegerField(read_only=True)
    source = PolicySourceSerializer(read_only=True)
    catalog_entry = serializers.CharField(
        read_only=True, allow_null=True, help_text="The catalog entry it was installed from, if any."
    )

    class Meta:
        model = ApprovalPolicy
        fields = [
            "id",
            "name",
            "description",
            "rego_version",
            "enforcement",
            "modules",
            "data",
            "draft",
            "repository",
            "repository_path",
            "repository_revision",
            "declared_name",
            "active_revision",
            "latest_revision",
            "revision_count",
            "source",
            "catalog_entry",
            "created_at",
        ]
        read_only_fields = ["created_at"]
        extra_kwargs = {"name": {"validators": []}}

    @staticmethod
    def loading(policies: QuerySet[ApprovalPolicy]) -> QuerySet[ApprovalPolicy]:
        """``policies`` with what is shown of them, in a constant number of queries however many
        revisions each has: how many, the active one's number, and only the newest with its modules."""
        of_the_policy = PolicyRevision.objects.filter(policy=OuterRef("policy"))
        newest = PolicyRevision.objects.filter(
            number=Subquery(of_the_policy.order_by("-number").values("number")[:1])
        )
        counted = (
            PolicyRevision.objects.filter(policy=OuterRef("pk")).values("policy").annotate(n=Count("pk"))
        )
        return (
            policies.select_related("repository")
            .annotate(
                revision_count=Coalesce(Subquery(counted.values("n")), 0),
                active_number=F("active_revision__number"),
            )
            .prefetch_related(
                Prefetch(
                    "revisions",
                    queryset=newest.select_related("created_by").prefetch_related("modules"),
                    to_attr="newest_revisions",
                )
            )
        )

    def to_representation(self, policy: ApprovalPolicy) -> dict:
        # Read from what ``loading`` added, never with a query per policy.
        newest = policy.newest_revisions[0] if policy.newest_revisions else None
        source: dict[str, Any] = {"kind": "inline"}
        if policy.repository_id is not None:
            source = {
                "kind": "repository",
                "repository": {
                    "id": policy.repository_id,
                    "name": policy.repository.name,
                    "url": policy.repository.url,
                },
                "path": policy.repository_path,
                "revision": policy.repository_revision,
                "declared_name": policy.declared_name,
                "synced_commit": policy.synced_commit,
                "synced_at": serializers.DateTimeField().to_representation(policy.synced_at)
                if policy.synced_at
                else None,
                "sync_error": policy.sync_error or None,
            }
        return {
            "id": policy.pk,
            "name": policy.name,
            "description": policy.description,
            "active_revision": policy.active_number,
            "latest_revision": self._revision_shown(newest, policy.active_revision_id) if newest else None,
            "revision_count": policy.revision_count,
            "source": source,
            "catalog_entry": policy.catalog_entry or None,
            "created_at": serializers.DateTimeField().to_representation(policy.created_at),
        }

    def _revision_shown(self, revision: PolicyRevision, active_revision_id: int | None) -> dict:
        """``PolicyRevisionSerializer``'s representation of ``revision``, from one serializer kept for
        every policy of a list: building a ModelSerializer's fields for each policy was a third of the
        effective-policies endpoint's CPU (bench/bench_scale.py)."""
        shown = getattr(self, "_revisions_serializer", None)
        if shown is None:
            shown = self._revisions_serializer = PolicyRevisionSerializer(
                context={"active_revision_id": _ACTIVE_PER_POLICY}
            )
        return {**shown.to_representation(revision), "active": revision.pk == active_revision_id}

    def validate_data(self, value):
        if value is not None and not isinstance(value, dict):
            raise serializers.ValidationError("Policy data must be a JSON object (it becomes data.*).")
        return value

    def validate(self, attrs: dict) -> dict:
        if self.instance is None and bool(attrs.get("modules")) == ("repository" in attrs):
            raise serializers.ValidationError(
                {
                    "modules": "Give either modules or a repository (with repository_path and repository_revision)."
                }
            )
        return attrs


class DryRunSerializer(serializers.Serializer):
    """An input to try a policy on: pasted, or the recorded input of a past deployment."""

    input = serializers.JSONField(required=False)
    deployment = serializers.IntegerField(
        required=False, help_text="Use the recorded input of this deployment's latest evaluation instead."
    )
    revision = serializers.IntegerField(
        required=False, help_text="The revision to try (default: the active one, else the newest)."
    )
    explain = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Also name the rules that fired (fired: [{rule, file, line}]).",
    )

    def validate_input(self, value):
        if not isinstance(value, dict):
            raise serializers.ValidationError(
                "The input must be a JSON object, like a deployment's policy input."
            )
        return value

    def validate(self, attrs: dict) -> dict:
        if ("input" in attrs) == ("deployment" in attrs):
            raise serializers.ValidationError({"input": "Give either an input or a deployment."})
        return attrs


class UnsavedTrySerializer(DryRunSerializer):
    """The editor's text (not saved) and an input to try it on: pasted, or a past deployment's."""

    revision = None  # the text is tried, not a stored revision
    rego_version = serializers.ChoiceField(choices=RegoVersion.choices, default=RegoVersion.V1)
    modules = serializers.ListField(child=serializers.DictField(), allow_empty=True)
    data = serializers.JSONField(required=False, allow_null=True)
    enforcement = serializers.ChoiceField(choices=Enforcement.choices, default=Enforcement.HARD_MANDATORY)


class PolicyTestRunSerializer(serializers.Serializer):
    revision = serializers.IntegerField(required=False, help_text="Default: the newest revision.")


class PublishSerializer(serializers.Serializer):
    revision = serializers.IntegerField()


class CheckSerializer(serializers.Serializer):
    """What the editor holds: checked as one types, never stored."""

    rego_version = serializers.ChoiceField(choices=RegoVersion.choices, default=RegoVersion.V1)
    modules = serializers.ListField(child=serializers.DictField(), allow_empty=True)
    data = serializers.JSONField(required=False, allow_null=True)
    policy = serializers.IntegerField(
        required=False, help_text="The policy being edited (none: a new one): who may edit it may check."
    )
