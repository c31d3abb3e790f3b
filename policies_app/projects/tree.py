"""The project tree, loaded once: ancestors, full names and inherited policy attachments.

Every question about the tree is answered from the projects' lineage (their ancestors' ids, kept by the
Project model on every save) in a constant number of queries, whatever the depth of the tree or the
number of rows a page shows. Nothing else walks ``parent``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Case, Exists, IntegerField, OuterRef, Q, QuerySet, Subquery, Value, When

from policies_app.models import ApprovalPolicy, Environment, Project, ProjectPolicy, Template, Webhook


@dataclass(frozen=True)
class InheritedPolicy:
    policy: ApprovalPolicy
    source: Project  # the ancestor it is attached to


class ProjectTree:
    """Some projects with all their ancestors and the policies attached along the way (two queries).

    Loaded without its policies (one query), it answers every question but which policies apply: asked
    that, it raises rather than answer "none" (which would let deployments through unchecked)."""

    def __init__(
        self, projects: dict[int, Project], attachments: dict[int, list[ProjectPolicy]] | None
    ) -> None:
        self.projects = projects
        self._attachments = attachments
        self._webhooks: dict[int, list[Webhook]] | None = None

    @property
    def attachments(self) -> dict[int, list[ProjectPolicy]]:
        if self._attachments is None:
            raise LookupError("this project tree was loaded without its policies")
        return self._attachments

    @classmethod
    def around(cls, projects: Iterable[Project], *, with_policies: bool = True) -> ProjectTree:
        wanted: set[int] = set()
        for project in projects:
            wanted.add(project.pk)
            wanted.update(project.ancestor_ids)
        rows = {project.pk: project for project in Project.objects.filter(pk__in=wanted)} if wanted else {}
        if not with_policies:
            return cls(rows, None)
        attachments: dict[int, list[ProjectPolicy]] = {pk: [] for pk in rows}
        if rows:
            for attachment in (
                ProjectPolicy.objects.filter(project_id__in=rows)
                .select_related("policy")
                .order_by("policy__name")
            ):
                attachments[attachment.project_id].append(attachment)
        return cls(rows, attachments)

    def chain(self, project: Project | int) -> list[Project]:
        """The project itself, then its parent, ..., then the root."""
        node = self.projects[project if isinstance(project, int) else project.pk]
        return [node, *(self.projects[pk] for pk in node.ancestor_ids if pk in self.projects)]

    def full_name(self, project: Project | int) -> str:
        return " / ".join(node.name for node in reversed(self.chain(project)))

    def own_attachments(self, project: Project | int) -> list[ProjectPolicy]:
        return self.attachments.get(project if isinstance(project, int) else project.pk, [])

    def chain_attachments(self, project: Project | int) -> list[ProjectPolicy]:
        """Every attachment that applies to the project: its own first, then each ancestor's."""
        return [attachment for node in self.chain(project) for attachment in self.own_attachments(node)]

    def project_policies(self, project: Project | int) -> list[ApprovalPolicy]:
        """The project's own policies, then every ancestor's, each policy once."""
        policies: dict[int, ApprovalPolicy] = {}
        for attachment in self.chain_attachments(project):
            policies.setdefault(attachment.policy_id, attachment.policy)
        return list(policies.values())

    def inherited_policies(self, project: Project | int) -> list[InheritedPolicy]:
        """What the ancestors impose on top of the project's own policies, each policy once."""
        own = {attachment.policy_id for attachment in self.own_attachments(project)}
        inherited: list[InheritedPolicy] = []
        for node in self.chain(project)[1:]:
            for attachment in self.own_attachments(node):
                if attachment.policy_id not in own:
                    own.add(attachment.policy_id)
                    inherited.append(InheritedPolicy(attachment.policy, node))
        return inherited

    def active_webhooks(self, project: Project | int) -> list[Webhook]:
        """The active webhooks of the project and its ancestors (one query, on first use)."""
        if self._webhooks is None:
            self._webhooks = {pk: [] for pk in self.projects}
            for webhook in Webhook.objects.filter(project_id__in=self.projects, active=True).order_by("pk"):
                self._webhooks[webhook.project_id].append(webhook)
        return [webhook for node in self.chain(project) for webhook in self._webhooks[node.pk]]

    def self_approval_allowed(self, project: Project | int) -> bool:
        return any(node.allow_self_approval for node in self.chain(project))

    def effective_policies(self, environment: Environment) -> list[ApprovalPolicy]:
        """The template's policies, then the project's, then every ancestor's, each policy once.

        The template's policies come from ``environment.template.approval_policies.all()``: prefetch them
        when asking for many environments."""
        policies: dict[int, ApprovalPolicy] = {}
        for policy in environment.template.approval_policies.all():
            policies.setdefault(policy.pk, policy)
        for policy in self.project_policies(environment.project_id):
            policies.setdefault(policy.pk, policy)
        return list(policies.values())

    def policy_sources(self, environment: Environment) -> list[tuple[ApprovalPolicy, str]]:
        """Each effective policy with where it comes from, as people read it."""
        template_policy_ids = {policy.pk for policy in environment.template.approval_policies.all()}
        owners: dict[int, Project] = {}
        for attachment in self.chain_attachments(environment.project_id):
            owners.setdefault(attachment.policy_id, self.projects[attachment.project_id])
        return [
            (
                policy,
                f"template {environment.template.name}"
                if policy.pk in template_policy_ids
                else f"project {self.full_name(owners[policy.pk])}",
            )
            for policy in self.effective_policies(environment)
        ]


def tree_for(project: Project, *, with_policies: bool = True) -> ProjectTree:
    return ProjectTree.around([project], with_policies=with_policies)


def effective_policies(environment: Environment) -> list[ApprovalPolicy]:
    return tree_for(environment.project).effective_policies(environment)


def effective_policies_query(environment: Environment) -> QuerySet[ApprovalPolicy]:
    """The policies ``ProjectTree.effective_policies`` gives for ``environment`` (loaded with its project),
    as one query that loads no tree: for showing them, where the policies are read anyway.

    Each is annotated with ``effective_rank``: -1 for the template's, else the position in the project's
    chain (0 the project itself, 1 its parent, ...) of the nearest project it is attached to. Sorted by
    (effective_rank, name) they are in ``effective_policies``'s order (``in_effective_order``)."""
    chain = [environment.project_id, *environment.project.ancestor_ids]
    of_template, attached = _effective_attachments(environment)
    position = Case(
        *(When(project_id=pk, then=Value(index)) for index, pk in enumerate(chain)),
        output_field=IntegerField(),
    )
    nearest = (
        attached.filter(policy=OuterRef("pk"))
        .annotate(position=position)
        .order_by("position")
        .values("position")
    )
    return ApprovalPolicy.objects.filter(effective_policies_filter(environment)).annotate(
        effective_rank=Case(
            When(Exists(of_template.filter(approvalpolicy_id=OuterRef("pk"))), then=Value(-1)),
            default=Subquery(nearest[:1]),
            output_field=IntegerField(),
        )
    )


def _effective_attachments(environment: Environment) -> tuple[QuerySet, QuerySet]:
    """The template's policies and the attachments along the project's chain (its own, its ancestors')."""
    chain = [environment.project_id, *environment.project.ancestor_ids]
    of_template = Template.approval_policies.through.objects.filter(template_id=environment.template_id)
    return of_template, ProjectPolicy.objects.filter(project_id__in=chain)


def effective_policies_filter(environment: Environment) -> Q:
    """Which policies ``ProjectTree.effective_policies`` gives for ``environment`` (loaded with its
    project), as a condition on ApprovalPolicy: no tree loaded, no order."""
    of_template, attached = _effective_attachments(environment)
    return Q(pk__in=of_template.values("approvalpolicy_id")) | Q(pk__in=attached.values("policy_id"))


def in_effective_order(policies: Iterable[ApprovalPolicy]) -> list[ApprovalPolicy]:
    """Policies of ``effective_policies_query`` in the order ``effective_policies`` gives them."""
    return sorted(policies, key=lambda policy: (policy.effective_rank, policy.name))
