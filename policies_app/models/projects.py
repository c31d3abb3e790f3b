from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from ..choices import Role

CYCLE_MESSAGE = "This parent would make a cycle in the project tree."


class Project(models.Model):
    """A node of the project tree. Its approval policies and memberships apply to every sub-project."""

    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="children"
    )
    approval_policies = models.ManyToManyField("ApprovalPolicy", blank=True, related_name="projects")
    allow_self_approval = models.BooleanField(
        default=False,
        help_text="Let a deployer approve their own deployment (applies to sub-projects too).",
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
        return self.full_name

    @property
    def full_name(self) -> str:
        return " / ".join(p.name for p in reversed([self, *self.ancestors()]))

    def ancestors(self) -> list["Project"]:
        """Parent first, root last."""
        chain: list[Project] = []
        seen = {self.pk}
        node = self.parent
        while node is not None and node.pk not in seen:
            chain.append(node)
            seen.add(node.pk)
            node = node.parent
        return chain

    def makes_cycle_under(self, parent: "Project | None") -> bool:
        if self.pk is None or parent is None:
            return False
        return parent.pk == self.pk or any(p.pk == self.pk for p in parent.ancestors())

    def clean(self) -> None:
        if self.makes_cycle_under(self.parent):
            raise ValidationError({"parent": CYCLE_MESSAGE})


class Team(models.Model):
    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="policy_teams")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


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
