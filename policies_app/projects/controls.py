"""A change that weakens the controls on a project or an environment needs authority over each control
it drops; this module is the one place that says which controls a change drops and who may drop them.

The controls on an environment are the policies in its effective set (each attached to a template or to
a project of its chain), the rule that deployers do not approve their own deployments (lifted by
``allow_self_approval`` on any project of the chain), and the rule that a deployment without any policy
waits for one approval (lifted by ``approve_plans_automatically``). Moving a project or an environment,
swapping a template, detaching a policy and turning on self-approval or automatic approval can each drop
some of them. Dropping a project's policy needs admin on that project; a template's policy belongs to
the organisation (organisation admins); lifting a rule that every project of the chain imposes needs admin
on all of them, i.e. on its root. What is not dropped needs nothing more than the change's own check.
"""

from __future__ import annotations

from dataclasses import dataclass

from policies_app.access import Grants
from policies_app.choices import Capability
from policies_app.errors import Forbidden
from policies_app.models import Environment, Project, Template
from policies_app.projects.tree import ProjectTree


@dataclass(frozen=True)
class Controls:
    chain: tuple[Project, ...]  # the project first, the root last
    attachments: frozenset[tuple[int, int]]  # (policy id, id of the project it is attached to)
    template_policies: frozenset[int]
    self_approval: bool
    automatic_approval: bool = False

    @property
    def policy_ids(self) -> frozenset[int]:
        return frozenset(policy for policy, _ in self.attachments) | self.template_policies


def project_controls(
    tree: ProjectTree, project: Project, *, parent: Project | None, self_approval: bool
) -> Controls:
    """What ``project`` inherits from the chain above ``parent`` (its own attachments travel with it)."""
    above = tuple(tree.chain(parent)) if parent is not None else ()
    attachments = frozenset((a.policy_id, a.project_id) for node in above for a in tree.own_attachments(node))
    return Controls(
        chain=(project, *above),
        attachments=attachments,
        template_policies=frozenset(),
        self_approval=self_approval or any(node.allow_self_approval for node in above),
    )


def environment_controls(
    tree: ProjectTree, project: Project, template: Template, *, automatic_approval: bool
) -> Controls:
    return Controls(
        chain=tuple(tree.chain(project)),
        attachments=frozenset((a.policy_id, a.project_id) for a in tree.chain_attachments(project)),
        template_policies=frozenset(policy.pk for policy in template.approval_policies.all()),
        self_approval=tree.self_approval_allowed(project),
        automatic_approval=automatic_approval,
    )


def require_may_weaken(held: Grants, before: Controls, after: Controls, tree: ProjectTree) -> None:
    """Raise Forbidden unless the user has authority over every control that ``after`` drops."""
    kept = after.policy_ids
    for policy_id, project_id in sorted(before.attachments):
        if policy_id in kept:
            continue
        owner = tree.projects[project_id]
        if not held.can(Capability.ADMINISTER, owner):
            raise Forbidden(
                f"This change drops a policy attached to project {tree.full_name(owner)}; "
                "only admins of that project may do that.",
                code="drops_controls",
            )
    if before.template_policies - kept and not held.is_organisation_admin:
        raise Forbidden(
            "This change drops policies of the environment's template; only organisation admins may do that.",
            code="drops_controls",
        )
    lifts = []
    if after.self_approval and not before.self_approval:
        lifts.append("lets deployers approve their own deployments")
    if after.automatic_approval and not before.automatic_approval:
        lifts.append("approves plans automatically")
    if lifts and not held.administers_all_of(list(before.chain) + list(after.chain)):
        root = after.chain[-1]
        raise Forbidden(
            f"This change {' and '.join(lifts)}; only admins of every project above it "
            f"(admins of {tree.full_name(root)}) or organisation admins may do that.",
            code="drops_controls",
        )


def environment_before_and_after(
    environment: Environment, *, project: Project, template: Template, automatic_approval: bool
) -> tuple[ProjectTree, Controls, Controls]:
    tree = ProjectTree.around([environment.project, project])
    before = environment_controls(
        tree,
        environment.project,
        environment.template,
        automatic_approval=environment.approve_plans_automatically,
    )
    after = environment_controls(tree, project, template, automatic_approval=automatic_approval)
    return tree, before, after
