from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.db.models import Max, Q, Value
from django.db.models.functions import Concat, Length, Replace, Substr

from policies_app.choices import OrganisationRole, Role
from policies_app.errors import Invalid

CYCLE_MESSAGE = "This parent would make a cycle in the project tree."
MAX_DEPTH = 32  # levels, a root project being level 1
DEPTH_MESSAGE = f"Projects may be nested at most {MAX_DEPTH} levels deep."


class Project(models.Model):
    """A node of the project tree. Its approval policies and memberships apply to every sub-project.

    ``lineage`` is the materialised path of the project's ancestors, root first (``/1/5/`` for a
    project under 5 under 1; ``/`` for a root). The model keeps it right on every save, for the
    project and its whole subtree, so that nothing ever walks ``parent`` one query at a time:
    tree.py reads ancestors from it and finds descendants by prefix.
    """

    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="children"
    )
    lineage = models.CharField(max_length=1000, default="/", editable=False, db_index=True)
    approval_policies = models.ManyToManyField(
        "ApprovalPolicy",
        blank=True,
        related_name="projects",
        through="ProjectPolicy",
        through_fields=("project", "policy"),
    )
    allow_self_approval = models.BooleanField(
        default=False,
        help_text="Let a deployer approve their own deployment (applies to sub-projects too).",
    )
    pending_expiry_hours = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Hours a deployment may wait for approval before it expires (applies to sub-projects "
        "that set none; empty: inherited, or the platform's default).",
    )
    release_expiry_hours = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Hours a released deployment may wait for the pipeline to complete it before it expires "
        "and frees its environment (applies to sub-projects that set none; empty: inherited, or the "
        "platform's default).",
    )
    approval_carry_over_hours = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Hours during which the approvals of a released deployment carry over to a new deployment "
        "of its environment with the same plan, policy revisions and policy data (0: never; applies to "
        "sub-projects that set none; empty: inherited, or the platform's default, off).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["parent", "name"], name="project_unique_name_among_siblings"),
            models.UniqueConstraint(
                fields=["name"], condition=Q(parent__isnull=True), name="project_unique_root_name"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def path(self) -> str:
        """The lineage of this project's children: ``/1/5/9/`` for project 9."""
        return f"{self.lineage}{self.pk}/"

    @property
    def ancestor_ids(self) -> list[int]:
        """Parent first, root last; read from the lineage, without a query."""
        return [int(part) for part in reversed(self.lineage.strip("/").split("/")) if part]

    @property
    def depth(self) -> int:
        """1 for a root project, 2 for its children, and so on."""
        return self.lineage.count("/")

    def subtree_height(self) -> int:
        """How many levels the project and its sub-projects span (1: it has none). One query."""
        if self.pk is None:
            return 1
        slashes = Length("lineage") - Length(Replace("lineage", Value("/"), Value("")))
        deepest = Project.objects.filter(lineage__startswith=self.path).aggregate(deepest=Max(slashes))
        return 1 if deepest["deepest"] is None else deepest["deepest"] - self.depth + 1

    def clean(self) -> None:
        refusal = refusal_to_place_under(self, self.parent)
        if refusal is not None:
            raise ValidationError(refusal.errors)

    def save(self, *args, **kwargs) -> None:
        with transaction.atomic():
            old_path = None
            if self.pk is not None:
                old_lineage = Project.objects.filter(pk=self.pk).values_list("lineage", flat=True).first()
                if old_lineage is not None:
                    # Where it is now, however stale this instance: a move is judged from there.
                    self.lineage = old_lineage
                    old_path = self.path
            self.lineage = self._lineage_under_parent()
            super().save(*args, **kwargs)
            if old_path is not None and old_path != self.path:
                # A move: every descendant's lineage starts with this project's path, old or new.
                Project.objects.filter(lineage__startswith=old_path).update(
                    lineage=Concat(Value(self.path), Substr("lineage", len(old_path) + 1))
                )

    def _lineage_under_parent(self) -> str:
        if self.parent_id is None:
            return "/"
        # Read from the database, not from self.parent: a concurrent move of the parent must be seen.
        parent_lineage = (
            Project.objects.select_for_update().values_list("lineage", flat=True).get(pk=self.parent_id)
        )
        refusal = _refusal_to_nest(self, self.parent_id, parent_lineage)
        if refusal is not None:
            raise ValidationError(refusal.errors)
        return f"{parent_lineage}{self.parent_id}/"


def refusal_to_place_under(project: Project | None, parent: Project | None) -> Invalid | None:
    """Why ``project`` (None: a new one), with its whole subtree, may not be placed under ``parent``
    (None: it may). The one statement of the tree's shape rules: no cycle, and no project deeper than
    MAX_DEPTH, the moved project's sub-projects included."""
    if parent is None:
        return None  # a root is level 1, and a subtree moved up only gets shallower
    return _refusal_to_nest(project, parent.pk, parent.lineage)


def _refusal_to_nest(project: Project | None, parent_id: int, parent_lineage: str) -> Invalid | None:
    # The model's save calls this with the parent's lineage read under lock, the use cases through
    # refusal_to_place_under with the parent as loaded.
    lineage = f"{parent_lineage}{parent_id}/"
    moving = project is not None and project.pk is not None
    if moving and f"/{project.pk}/" in lineage:
        return Invalid({"parent": [CYCLE_MESSAGE]})
    depth = lineage.count("/")
    if depth > MAX_DEPTH:
        return Invalid({"parent": [DEPTH_MESSAGE]})
    # A project that stays where it is keeps its sub-projects where they are: no query for them.
    if moving and lineage != project.lineage:
        deepest = depth + project.subtree_height() - 1
        if deepest > MAX_DEPTH:
            return Invalid(
                {
                    "parent": [
                        f"{DEPTH_MESSAGE} Under this parent, a sub-project of {project.name} would be "
                        f"{deepest} levels deep."
                    ]
                }
            )
    return None


class ProjectPolicy(models.Model):
    """An approval policy attached to a project, and so to every sub-project.

    ``authority`` is the project from which the attachment was made: the highest project of the chain
    that the attaching user administers (empty when an organisation admin made it). Only admins of that
    project may detach it, so a control set from above can be lifted only from above.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="policy_attachments")
    policy = models.ForeignKey(
        "ApprovalPolicy",
        on_delete=models.CASCADE,
        related_name="project_attachments",
        db_column="approvalpolicy_id",
    )
    authority = models.ForeignKey(Project, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    attached_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    attached_at = models.DateTimeField(null=True, blank=True, auto_now_add=True)

    class Meta:
        db_table = "policies_app_project_approval_policies"
        unique_together = [("project", "policy")]

    def __str__(self) -> str:
        return f"{self.policy} on {self.project}"


class Team(models.Model):
    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="policy_teams", through="TeamMembership"
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class TeamMembership(models.Model):
    """A user in a team, with where that came from: added by hand, from the identity provider's groups
    at single sign-on (kept in step at every sign-in), or pushed by SCIM provisioning."""

    class Source(models.TextChoices):
        MANUAL = "manual", "manual"
        SSO_GROUP = "sso_group", "SSO group"
        SCIM = "scim", "SCIM"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="team_memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_memberships"
    )
    source = models.CharField(max_length=20, choices=Source.choices, default=Source.MANUAL)
    # The identity provider group that made this membership (source sso_group or scim).
    source_group = models.CharField(max_length=255, blank=True)
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["team", "user"]
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="team_membership_once")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.source})"


class ProjectMembership(models.Model):
    """A role on a project, given to a user or to a whole team; inherited by sub-projects."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="memberships"
    )
    team = models.ForeignKey(
        Team, null=True, blank=True, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=20, choices=Role.choices)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="membership_one_role_per_user"),
            models.UniqueConstraint(fields=["project", "team"], name="membership_one_role_per_team"),
            models.CheckConstraint(
                condition=Q(user__isnull=False, team__isnull=True) | Q(user__isnull=True, team__isnull=False),
                name="membership_user_xor_team",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user or self.team} is {self.role} of {self.project}"


class OrganisationMembership(models.Model):
    """A role over the whole organisation (auditor, organisation admin); superusers hold admin implicitly."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="organisation_role"
    )
    role = models.CharField(max_length=20, choices=OrganisationRole.choices)

    def __str__(self) -> str:
        return f"{self.user} is organisation {self.role}"
