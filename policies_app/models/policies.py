from django.conf import settings
from django.db import models

from policies_app.choices import Enforcement, RegoVersion, RevisionTestsStatus


class ApprovalPolicy(models.Model):
    """A named policy; what it says lives in immutable revisions.

    The revision in force is ``active_revision``, not simply the newest: a revision is activated when
    it is saved or synced and its tests pass, or when it is published (a draft, or an older revision
    to roll back). A newer revision may be a draft or may have failed its tests; deployments are
    evaluated with the active one. A policy none of whose revisions was ever activated is not in force.

    Its content comes from inline modules (edited in the product or through the API) or from a path
    in a git repository (``repository``), synced to new revisions."""

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    active_revision = models.OneToOneField(
        "PolicyRevision", null=True, blank=True, on_delete=models.PROTECT, related_name="active_for"
    )
    repository = models.ForeignKey(
        "PolicyRepository", null=True, blank=True, on_delete=models.PROTECT, related_name="policies"
    )
    repository_path = models.CharField(max_length=500, blank=True, help_text="A folder of the repository.")
    repository_revision = models.CharField(
        max_length=200, blank=True, help_text="A branch, tag or commit; empty: the default branch."
    )
    declared_name = models.CharField(
        max_length=200, blank=True, help_text="Which policy of the folder's policies.hcl this is."
    )
    synced_commit = models.CharField(max_length=64, blank=True)
    synced_at = models.DateTimeField(null=True, blank=True)
    sync_error = models.TextField(blank=True, help_text="Why the last sync failed; empty when it worked.")
    catalog_entry = models.CharField(
        max_length=100, blank=True, help_text="Installed from this catalog entry."
    )

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "approval policies"

    def __str__(self) -> str:
        return self.name

    @property
    def latest_revision(self) -> "PolicyRevision | None":
        return self.revisions.order_by("-number").first()

    @property
    def from_repository(self) -> bool:
        return self.repository_id is not None


class PolicyRevision(models.Model):
    """An immutable version of a policy. Editing or syncing a policy creates revision N+1.

    Modules named ``*_test.rego`` are the policy's tests: they are run when the revision is saved (the
    outcome is kept here) and never evaluated for deployments. A draft is saved without being offered
    for activation; it becomes active only when published."""

    # Revisions are evidence of what judged past deployments and rule pending ones: never deleted.
    policy = models.ForeignKey(ApprovalPolicy, on_delete=models.PROTECT, related_name="revisions")
    number = models.PositiveIntegerField()
    rego_version = models.CharField(max_length=2, choices=RegoVersion.choices, default=RegoVersion.V1)
    data = models.JSONField(null=True, blank=True, help_text="Becomes data.* for this policy.")
    enforcement = models.CharField(
        max_length=20, choices=Enforcement.choices, default=Enforcement.HARD_MANDATORY
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    draft = models.BooleanField(default=False, help_text="Saved to be tried and replayed, not activated.")
    commit = models.CharField(max_length=64, blank=True, help_text="The git commit it was synced from.")
    tests_status = models.CharField(
        max_length=10, choices=RevisionTestsStatus.choices, default=RevisionTestsStatus.NONE
    )
    tests_report = models.JSONField(
        null=True, blank=True, help_text="Each test's result and the line coverage, when it was saved."
    )

    class Meta:
        ordering = ["policy", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["policy", "number"], name="policy_revision_number_unique")
        ]

    def __str__(self) -> str:
        return f"{self.policy.name} r{self.number}"

    @property
    def may_be_activated(self) -> bool:
        """Its tests passed, or it has none: it may be the revision in force."""
        return self.tests_status in (RevisionTestsStatus.NONE, RevisionTestsStatus.PASSED)


class PolicyModule(models.Model):
    revision = models.ForeignKey(PolicyRevision, on_delete=models.PROTECT, related_name="modules")
    filename = models.CharField(max_length=500)
    source = models.TextField()

    class Meta:
        ordering = ["filename"]
        constraints = [
            models.UniqueConstraint(fields=["revision", "filename"], name="policy_module_filename_unique")
        ]

    def __str__(self) -> str:
        return self.filename

    @property
    def is_test(self) -> bool:
        return is_test_module(self.filename)


def is_test_module(filename: str) -> bool:
    """``*_test.rego`` holds a policy's tests, as ``opa test`` finds them."""
    return filename.endswith("_test.rego")
