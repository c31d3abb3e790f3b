"""Which ``plan`` a deployment may carry, by template type, as env0 defines it.

``check_plan`` is the gate the API calls before a deployment is accepted, so a policy never sees a plan
of the wrong shape (where ``input.plan.resource_changes`` would silently be undefined and a deny rule
would silently never fire). What each type expects:

=================  =================================================  ===============================
template type      deploy                                             destroy
=================  =================================================  ===============================
terraform,         ``terraform show -json`` plan: ``format_version``  same (a destroy plan)
opentofu           (major 0 or 1), ``resource_changes`` list (a
                   plan without changes may omit it, then it has
                   ``planned_values``)
terragrunt         a terraform plan (single module) or               same
                   ``{"is_run_all": true, "modules": {path: plan}}``
pulumi             update plan (``pulumi preview --save-plan``:       ``pulumi destroy --preview-only
                   ``manifest`` + ``resourcePlans``) or a preview     --json`` (the preview digest)
                   digest (``pulumi preview --json``: ``steps``,
                   ``changeSummary``)
cloudformation     DescribeChangeSet response (``Changes``)           ListStackResources response
                                                                      (``StackResourceSummaries``)
k8s, helm          null                                               null
=================  =================================================  ===============================

``None`` (no plan) is accepted for every type: a pipeline may deploy without a plan step, and a policy
that needs the plan must then decide on its own (``not input.plan``) rather than fail to parse. Errored
terraform plans (``"errored": true``) fit the format and are accepted; the pipeline will not apply them.

The API receives parsed JSON, so text encodings (UTF-16 plan files) are the pipeline's concern.
``terragrunt_run_all_from_ndjson`` builds the run-all shape from ``terragrunt run --all show -json``.
"""

from __future__ import annotations

import json
import re
from typing import Any

TEMPLATE_TYPES = ("opentofu", "terraform", "terragrunt", "pulumi", "cloudformation", "k8s", "helm")
DEPLOYMENT_TYPES = {
    "deploy": "deploy",
    "destroy": "destroy",
    "deployResume": "deploy",
    "destroyResume": "destroy",
}
TERRAFORM_ACTIONS = frozenset({"no-op", "create", "read", "update", "delete", "forget"})


class PlanFormatError(ValueError):
    """The plan does not fit its template type; the message says why and names the key."""


def check_plan(template_type: str, deployment_type: str, plan: Any) -> None:
    """Raise ``PlanFormatError`` unless ``plan`` fits what ``template_type`` sends for ``deployment_type``.

    ``deployment_type`` is ``deploy`` or ``destroy``; the resume types (``deployResume``,
    ``destroyResume``) carry the plan of the request they resume and are checked the same way.
    """
    if template_type not in TEMPLATE_TYPES:
        raise PlanFormatError(
            f"unknown template type {template_type!r} (expected one of {', '.join(TEMPLATE_TYPES)})"
        )
    if deployment_type not in DEPLOYMENT_TYPES:
        raise PlanFormatError(f"unknown deployment type {deployment_type!r} (expected deploy or destroy)")
    if plan is None:
        return
    action = DEPLOYMENT_TYPES[deployment_type]
    if template_type in ("k8s", "helm"):
        raise PlanFormatError(f"a {template_type} deployment has no plan: plan must be null")
    if template_type in ("terraform", "opentofu"):
        _check_terraform_plan(plan, f"a {template_type} plan")
    elif template_type == "terragrunt":
        _check_terragrunt_plan(plan)
    elif template_type == "pulumi":
        _check_pulumi_plan(plan, action)
    else:
        _check_cloudformation_plan(plan, action)


# ------------------------------------------------------------------------------- terraform family


def _check_terraform_plan(plan: Any, what: str) -> None:
    if not isinstance(plan, dict):
        raise PlanFormatError(
            f"{what} must be a JSON object (terraform show -json output), got {json_kind(plan)}"
        )
    version = plan.get("format_version")
    if not isinstance(version, str):
        raise PlanFormatError(f"{what} needs format_version to be a string, got {json_kind(version)}")
    if not re.fullmatch(r"[01]\.\d+", version):
        raise PlanFormatError(f"{what}: format_version {version!r} is not supported (expected 0.x or 1.x)")
    if "values" in plan and "planned_values" not in plan and "resource_changes" not in plan:
        raise PlanFormatError(
            f"{what}: this is `show -json` state output (it has values, no planned_values or "
            "resource_changes), not a plan"
        )
    if "resource_changes" not in plan:
        # Terraform omits resource_changes when nothing changes; planned_values is always written.
        if not isinstance(plan.get("planned_values"), dict):
            raise PlanFormatError(
                f"{what} needs resource_changes to be a list (or, without changes, planned_values)"
            )
    else:
        _check_resource_changes(plan["resource_changes"], "resource_changes", what)
    if "resource_drift" in plan:
        _check_resource_changes(plan["resource_drift"], "resource_drift", what)
    for key in ("planned_values", "prior_state", "configuration", "output_changes", "variables"):
        if key in plan and not isinstance(plan[key], dict):
            raise PlanFormatError(f"{what} needs {key} to be an object, got {json_kind(plan[key])}")


def _check_resource_changes(changes: Any, key: str, what: str) -> None:
    if not isinstance(changes, list):
        raise PlanFormatError(f"{what} needs {key} to be a list, got {json_kind(changes)}")
    for position, change in enumerate(changes):
        where = f"{what}: {key}[{position}]"
        if not isinstance(change, dict):
            raise PlanFormatError(f"{where} must be an object, got {json_kind(change)}")
        for field in ("address", "type", "name"):
            if not isinstance(change.get(field), str):
                raise PlanFormatError(f"{where}.{field} must be a string, got {json_kind(change.get(field))}")
        if "mode" in change and change["mode"] not in ("managed", "data"):
            raise PlanFormatError(f"{where}.mode must be 'managed' or 'data', got {change['mode']!r}")
        body = change.get("change")
        if not isinstance(body, dict):
            raise PlanFormatError(f"{where}.change must be an object, got {json_kind(body)}")
        actions = body.get("actions")
        if not isinstance(actions, list) or not actions:
            raise PlanFormatError(
                f"{where}.change.actions must be a non-empty list, got {json_kind(actions)}"
            )
        for number, action in enumerate(actions):
            if action not in TERRAFORM_ACTIONS:
                raise PlanFormatError(
                    f"{where}.change.actions[{number}]: unknown action {action!r} "
                    f"(expected one of {', '.join(sorted(TERRAFORM_ACTIONS))})"
                )


def _check_terragrunt_plan(plan: Any) -> None:
    if isinstance(plan, dict) and ("is_run_all" in plan or "modules" in plan):
        if plan.get("is_run_all") is not True:
            raise PlanFormatError("a terragrunt run-all plan needs is_run_all to be true")
        modules = plan.get("modules")
        if not isinstance(modules, dict):
            raise PlanFormatError(
                f"a terragrunt run-all plan needs modules to be an object, got {json_kind(modules)}"
            )
        for path, module_plan in modules.items():
            _check_terraform_plan(module_plan, f"terragrunt run-all plan: modules[{path!r}]")
        return
    _check_terraform_plan(plan, "a terragrunt plan")


def terragrunt_run_all_from_ndjson(text: str, module_paths: list[str] | None = None) -> dict:
    """Build ``{"is_run_all": true, "modules": {...}}`` from ``terragrunt run --all show -json`` output.

    The output is one JSON plan per unit, newline-delimited (or pretty-printed, one after another).
    Terraform's plan JSON does not say which directory it came from, so the module path is found, in
    order of preference:

    1. a Terragrunt log prefix on the line (``[live/vpc] {...}`` with the module prefix option, or
       ``12:00:00.000 STDOUT [live/vpc] tofu: {...}`` from the newer log format);
    2. ``module_paths``, when the caller knows them (e.g. from ``terragrunt find``/``--json-out-dir``),
       one per plan in output order;
    3. otherwise the plan's position in the output, as a string (``"0"``, ``"1"``...): Terragrunt runs
       units in dependency order, so positions are stable for one stack but are *not* paths.
    """
    plans: list[dict] = []
    prefixed_paths: list[str | None] = []
    decoder = json.JSONDecoder()
    position = 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position >= len(text):
            break
        line_end = text.find("\n", position)
        line = text[position:] if line_end == -1 else text[position:line_end]
        prefix = _TERRAGRUNT_PREFIX.match(line)
        path = None
        if prefix is not None and not line.startswith("{"):
            path = prefix.group("path")
            position += prefix.end()
        if position >= len(text) or text[position] != "{":
            line_number = text.count("\n", 0, position) + 1
            raise PlanFormatError(f"terragrunt show output, line {line_number}: expected a JSON plan")
        try:
            document, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            raise PlanFormatError(f"terragrunt show output, line {error.lineno}: {error.msg}") from None
        plans.append(document)
        prefixed_paths.append(path)
    if module_paths is not None and len(module_paths) != len(plans):
        raise PlanFormatError(f"{len(module_paths)} module paths given for {len(plans)} plans")
    keys: list[str]
    if plans and all(path is not None for path in prefixed_paths):
        keys = [str(path) for path in prefixed_paths]
    elif module_paths is not None:
        keys = list(module_paths)
    else:
        keys = [str(number) for number in range(len(plans))]
    if len(set(keys)) != len(keys):
        raise PlanFormatError("two plans in the terragrunt output have the same module path")
    modules = dict(zip(keys, plans, strict=True))
    for key, plan in modules.items():
        _check_terraform_plan(plan, f"terragrunt run-all plan: modules[{key!r}]")
    return {"is_run_all": True, "modules": modules}


# A Terragrunt line prefix: optional timestamp and stream, then "[unit path]", then optional "tofu:".
_TERRAGRUNT_PREFIX = re.compile(
    r"(?:\S+\s+)?(?:STDOUT\s+)?\[(?P<path>[^\]]+)\]\s*(?:(?:terraform|tofu|opentofu):\s*)?(?=\{)"
)


# ----------------------------------------------------------------------------------------- pulumi


def _check_pulumi_plan(plan: Any, action: str) -> None:
    if not isinstance(plan, dict):
        raise PlanFormatError(f"a pulumi plan must be a JSON object, got {json_kind(plan)}")
    if action == "deploy" and ("manifest" in plan or "resourcePlans" in plan):
        _check_pulumi_update_plan(plan)
        return
    if not any(key in plan for key in ("steps", "changeSummary", "duration")):
        expected = (
            "an update plan (manifest, resourcePlans) or a preview (steps, changeSummary)"
            if action == "deploy"
            else "`pulumi destroy --preview-only --json` output (steps, changeSummary)"
        )
        raise PlanFormatError(f"a pulumi {action} plan must be {expected}; none of those keys is present")
    steps = plan.get("steps", [])
    if not isinstance(steps, list):
        raise PlanFormatError(f"a pulumi preview needs steps to be a list, got {json_kind(steps)}")
    for position, step in enumerate(steps):
        where = f"a pulumi preview: steps[{position}]"
        if not isinstance(step, dict):
            raise PlanFormatError(f"{where} must be an object, got {json_kind(step)}")
        if not isinstance(step.get("op"), str) or not step["op"]:
            raise PlanFormatError(f"{where}.op must be a string, got {json_kind(step.get('op'))}")
        _check_urn(step.get("urn"), f"{where}.urn")
        for key in ("oldState", "newState"):
            if key in step and step[key] is not None and not isinstance(step[key], dict):
                raise PlanFormatError(f"{where}.{key} must be an object, got {json_kind(step[key])}")
    _check_change_summary(plan.get("changeSummary", {}), "a pulumi preview: changeSummary")


def _check_pulumi_update_plan(plan: dict) -> None:
    if not isinstance(plan.get("manifest"), dict):
        raise PlanFormatError(
            f"a pulumi update plan needs manifest to be an object, got {json_kind(plan.get('manifest'))}"
        )
    resource_plans = plan.get("resourcePlans", {})
    if not isinstance(resource_plans, dict):
        raise PlanFormatError(
            f"a pulumi update plan needs resourcePlans to be an object, got {json_kind(resource_plans)}"
        )
    for urn, resource_plan in resource_plans.items():
        where = f"a pulumi update plan: resourcePlans[{urn!r}]"
        _check_urn(urn, where)
        if not isinstance(resource_plan, dict):
            raise PlanFormatError(f"{where} must be an object, got {json_kind(resource_plan)}")
        steps = resource_plan.get("steps", [])
        if not isinstance(steps, list) or not all(isinstance(step, str) for step in steps):
            raise PlanFormatError(f"{where}.steps must be a list of operation names")


def _check_urn(urn: Any, where: str) -> None:
    if not isinstance(urn, str) or not urn.startswith("urn:pulumi:"):
        raise PlanFormatError(f"{where} must be a Pulumi URN (urn:pulumi:...), got {urn!r}")


def _check_change_summary(summary: Any, where: str) -> None:
    if not isinstance(summary, dict):
        raise PlanFormatError(f"{where} must be an object, got {json_kind(summary)}")
    for operation, count in summary.items():
        if isinstance(count, bool) or not isinstance(count, int):
            raise PlanFormatError(f"{where}[{operation!r}] must be a whole number, got {json_kind(count)}")


# --------------------------------------------------------------------------------- cloudformation


def _check_cloudformation_plan(plan: Any, action: str) -> None:
    if not isinstance(plan, dict):
        raise PlanFormatError(f"a cloudformation plan must be a JSON object, got {json_kind(plan)}")
    if action == "deploy":
        _check_change_set(plan)
    else:
        _check_stack_resources(plan)


def _check_change_set(plan: dict) -> None:
    what = "a cloudformation deploy plan (DescribeChangeSet response)"
    if "StackResourceSummaries" in plan:
        raise PlanFormatError(
            f"{what} was expected, but this is a ListStackResources response (a destroy plan)"
        )
    changes = plan.get("Changes")
    if not isinstance(changes, list):
        raise PlanFormatError(f"{what} needs Changes to be a list, got {json_kind(changes)}")
    if not any(
        isinstance(plan.get(key), str) for key in ("ChangeSetName", "ChangeSetId", "StackName", "StackId")
    ):
        raise PlanFormatError(f"{what} needs ChangeSetName, ChangeSetId, StackName or StackId (a string)")
    for position, change in enumerate(changes):
        where = f"{what}: Changes[{position}]"
        if not isinstance(change, dict):
            raise PlanFormatError(f"{where} must be an object, got {json_kind(change)}")
        if not isinstance(change.get("Type"), str):
            raise PlanFormatError(f"{where}.Type must be a string, got {json_kind(change.get('Type'))}")
        if change["Type"] != "Resource":
            continue
        resource_change = change.get("ResourceChange")
        if not isinstance(resource_change, dict):
            raise PlanFormatError(
                f"{where}.ResourceChange must be an object, got {json_kind(resource_change)}"
            )
        for key in ("Action", "LogicalResourceId", "ResourceType"):
            if not isinstance(resource_change.get(key), str):
                raise PlanFormatError(
                    f"{where}.ResourceChange.{key} must be a string, got {json_kind(resource_change.get(key))}"
                )


def _check_stack_resources(plan: dict) -> None:
    what = "a cloudformation destroy plan (ListStackResources response)"
    if "Changes" in plan:
        raise PlanFormatError(
            f"{what} was expected, but this is a DescribeChangeSet response (a deploy plan)"
        )
    summaries = plan.get("StackResourceSummaries")
    if not isinstance(summaries, list):
        raise PlanFormatError(f"{what} needs StackResourceSummaries to be a list, got {json_kind(summaries)}")
    for position, summary in enumerate(summaries):
        where = f"{what}: StackResourceSummaries[{position}]"
        if not isinstance(summary, dict):
            raise PlanFormatError(f"{where} must be an object, got {json_kind(summary)}")
        for key in ("LogicalResourceId", "ResourceType", "ResourceStatus"):
            if not isinstance(summary.get(key), str):
                raise PlanFormatError(f"{where}.{key} must be a string, got {json_kind(summary.get(key))}")


def json_kind(value: Any) -> str:
    """How an error message names a JSON value's type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
