"""A deployment's plan as anyone who may see the deployment is shown it: the summary (plan_summary.py)
and the plan's text as the pipeline sent it (``terraform show``), both through guards/masking.py's rules:
no value Terraform marked sensitive, and no value of a sensitive variable of the environment or the
deployment, is ever rendered."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from policies_app.deployments.plan_summary import PlanSummary, summarise_plan
from policies_app.deployments.stored_inputs import plan_of, plan_text_of
from policies_app.guards.masking import plan_secrets, scrub
from policies_app.models import Deployment


@dataclass(frozen=True)
class PlanView:
    summary: PlanSummary
    text: str | None  # the masked `terraform show` text, None when none was sent (or it was purged)


def _variables(deployment: Deployment) -> list[dict[str, Any]]:
    environment = deployment.environment
    sent = deployment.variables if isinstance(deployment.variables, dict) else {}
    return [
        {"environment": environment.environment_variables, "terraform": environment.terraform_variables},
        sent,
    ]


def shown_plan_view(deployment: Deployment, *, with_text: bool = True) -> PlanView:
    plan = plan_of(deployment)
    sensitive = deployment.environment.sensitive_variables or {}
    secrets = frozenset().union(*(plan_secrets(plan, sensitive, held) for held in _variables(deployment)))
    text = plan_text_of(deployment) if with_text else None
    return PlanView(summarise_plan(plan, secrets), None if text is None else scrub(text, secrets))
