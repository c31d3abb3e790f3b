"""The time windows a project sets for its deployments, each inherited down the project tree like the
other controls: the nearest project of the chain that sets one decides, else the platform's default.

- how long a deployment may wait for approval before it expires (``pending_expiry_hours``);
- how long a released deployment may wait for the pipeline to complete it before it expires and frees
  its environment (``release_expiry_hours``);
- how long the approvals of a released deployment carry over to an identical re-plan
  (``approval_carry_over_hours``; 0, the default, never).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from policies_app.projects.tree import ProjectTree


def _inherited(chain: list[Any], field: str, default: float) -> float:
    for node in chain:
        value = getattr(node, field)
        if value is not None:
            return value
    return default


def pending_expiry_hours(tree: ProjectTree, project: Any) -> float:
    """The nearest expiry set on the project or an ancestor, else the platform's default."""
    return _inherited(tree.chain(project), "pending_expiry_hours", settings.DEPLOYMENT_PENDING_EXPIRY_HOURS)


def release_expiry_hours(tree: ProjectTree, project: Any) -> float:
    """How long a release may wait for the pipeline to complete it: inherited, else the default."""
    return _inherited(tree.chain(project), "release_expiry_hours", settings.DEPLOYMENT_RELEASE_EXPIRY_HOURS)


def approval_carry_over_hours(tree: ProjectTree, project: Any) -> float:
    """How long approvals carry over to an identical re-plan (0: never): inherited, else the default."""
    return _inherited(tree.chain(project), "approval_carry_over_hours", settings.APPROVAL_CARRY_OVER_HOURS)


def inherited_carry_over_hours(tree: ProjectTree, project: Any) -> float:
    """What the project would carry over if it set nothing itself: its parent's window, else the default."""
    return _inherited(
        tree.chain(project)[1:], "approval_carry_over_hours", settings.APPROVAL_CARRY_OVER_HOURS
    )
