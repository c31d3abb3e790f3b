"""The document policies see: env0's input schema (camelCase, so env0's published policies run unchanged),
plus the platform's own views of the environment's Terraform state and the template's configuration."""

import logging
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from policies_app.choices import TERRAFORM_LIKE_TYPES, ApprovalDecision, RequestType
from policies_app.deployments.stored_inputs import plan_json_of, plan_of
from policies_app.guards import file_sandbox
from policies_app.guards.masking import Sensitivity
from policies_app.guards.sensitive_marks import state_view_paths
from policies_app.iac.sensitive_paths import Path
from policies_app.iac.sources import TemplateSourceError
from policies_app.models import Deployment, Team
from policies_app.projects.configuration_cache import environment_configuration_view
from policies_app.projects.template_views import note_commit_seen

logger = logging.getLogger(__name__)


def user_view(user: AbstractBaseUser) -> dict[str, Any]:
    """A user as env0 shows one to policies: name, email and teams."""
    teams = Team.objects.filter(members=user).order_by("name")
    return {
        "name": user.get_full_name() or user.get_username(),
        "email": user.email,
        "teams": [{"id": str(team.pk), "name": team.name} for team in teams],
    }


def _env0_variables(deployment: Deployment) -> dict[str, str]:
    environment = deployment.environment
    template = environment.template
    return {
        "ENV0_ENVIRONMENT_ID": str(environment.pk),
        "ENV0_ENVIRONMENT_NAME": environment.name,
        "ENV0_PROJECT_ID": str(environment.project_id),
        "ENV0_PROJECT_NAME": environment.project.name,
        "ENV0_TEMPLATE_ID": str(template.pk),
        "ENV0_TEMPLATE_NAME": template.name,
        "ENV0_TEMPLATE_REPOSITORY": template.repository,
        "ENV0_TEMPLATE_PATH": template.path,
        "ENV0_TEMPLATE_REVISION": deployment.revision or template.revision,
        "ENV0_DEPLOYMENT_ID": str(deployment.pk),
        "ENV0_DEPLOYMENT_TYPE": deployment.type,
        "ENV0_DEPLOYER_NAME": deployment.deployer.get_full_name() or deployment.deployer.get_username(),
        "ENV0_DEPLOYER_EMAIL": deployment.deployer.email,
    }


def _state_view(deployment: Deployment) -> tuple[dict[str, Any] | None, list[Path]]:
    """The state's tfstate/v1 view, and where in it Terraform marked attributes sensitive."""
    from policies_app.iac.state_view import tfstate_view

    state = deployment.environment.current_state
    if state is None:
        return None, []
    return tfstate_view(state.document), [["state", *path] for path in state_view_paths(state.document)]


def _configuration_view(
    deployment: Deployment, terraform_variables: dict[str, Any]
) -> tuple[dict[str, Any] | None, str, list[Path]]:
    """The template's configuration evaluated statically, when it is Terraform/OpenTofu and readable; the
    commit it was read at ("" for an archive or a plain directory); and where in the policy input values
    derived from the environment's sensitive Terraform variables are (kept beside the input, never in
    it). A deployment evaluated before reads the commit its first evaluation read. The evaluation reads
    only the template's own files (the file sandbox)."""
    environment = deployment.environment
    template = environment.template
    if template.type not in TERRAFORM_LIKE_TYPES or not (template.repository or template.archive):
        return None, "", []
    revision = deployment.template_commit or deployment.revision or template.revision or None
    try:
        files = file_sandbox.template_files(template, revision)
    except TemplateSourceError as problem:
        return {"outputs": {}, "resources": [], "diagnostics": [_source_diagnostic(str(problem))]}, "", []
    if revision == (template.revision or None):  # the template's own revision: the commit it is at now
        note_commit_seen(template, files.commit)
    view = dict(environment_configuration_view(environment, files, terraform_variables))
    paths = [["configuration", *path] for path in view.pop("sensitive_paths", [])]
    return file_sandbox.scrubbed_configuration(view), files.commit, paths


def _source_diagnostic(detail: str) -> dict[str, Any]:
    return {
        "severity": "error",
        "summary": "Template files could not be read",
        "detail": detail,
        "file": None,
        "line": None,
        "column": None,
    }


@dataclass(frozen=True)
class PolicyInput:
    document: dict[str, Any]
    template_commit: str  # the commit the configuration view was read at ("" when none was)
    # How the document is shown (guards/masking.py): what is sensitive beyond what the document says.
    sensitivity: Sensitivity
    # Members whose text (as input_codec.dumps writes it) is known already: the stored plan's.
    written: dict[str, str]


def build_policy_input(deployment: Deployment, request_type: str) -> PolicyInput:
    environment = deployment.environment
    template = environment.template
    requested = deployment.variables or {}
    terraform_variables = {**environment.terraform_variables, **requested.get("terraform", {})}
    deployment_request: dict[str, Any] = {"type": request_type, "triggerName": deployment.trigger_name}
    # env0 leaves the revision out only when neither the deployment nor the template states one.
    if deployment.revision or template.revision:
        deployment_request["revision"] = deployment.revision or template.revision
    template_view: dict[str, Any] = {
        "id": str(template.pk),
        "name": template.name,
        "type": template.type,
        "repository": template.repository,
        "path": template.path,
    }
    if template.revision:
        template_view["revision"] = template.revision
    # Approvals are given only to a deployment waiting for them, so only a resume has any to show.
    resume = request_type in (RequestType.DEPLOY_RESUME, RequestType.DESTROY_RESUME)
    approvals = (
        deployment.approvals.filter(decision=ApprovalDecision.APPROVE).select_related("user")
        if resume
        else []
    )
    configuration, template_commit, configuration_paths = _configuration_view(deployment, terraform_variables)
    state, state_paths = _state_view(deployment)
    document: dict[str, Any] = {
        "deploymentRequest": deployment_request,
        "template": template_view,
        "costEstimation": {
            "totalMonthlyCost": deployment.total_monthly_cost,
            "monthlyCostDiff": deployment.monthly_cost_diff,
        },
        "plan": plan_of(deployment),
        "deployerUser": user_view(deployment.deployer),
        "approvers": [user_view(approval.user) for approval in approvals],
        "variables": {
            "environment": {**environment.environment_variables, **requested.get("environment", {})},
            "terraform": terraform_variables,
            "env0": _env0_variables(deployment),
        },
        "state": state,
        "configuration": configuration,
    }
    if deployment.policy_data is not None:
        # env0 leaves policyData undefined when there is none.
        document["policyData"] = deployment.policy_data
    sensitivity = Sensitivity(environment.sensitive_variables or {}, configuration_paths + state_paths)
    plan_json = plan_json_of(deployment)
    written = {} if plan_json is None else {"plan": plan_json}
    return PolicyInput(document, template_commit, sensitivity, written)
