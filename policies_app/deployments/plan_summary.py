"""A deployment's plan as an approver reads it: how many resources are created, updated, replaced and
deleted; each resource with its address, grouped by type, destroys and replacements first; and each
resource's attributes before and after, with values unknown until apply and sensitive values masked.

Reads every plan format a deployment may carry (iac/plan_formats.py): Terraform and OpenTofu
(``terraform show -json``), Terragrunt (one module or run-all), Pulumi (preview or update plan) and
CloudFormation (change set, or the stack's resources for a destroy). Plain data in, plain data out: no
Django, so it is tested and benchmarked alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

KNOWN_AFTER_APPLY = "(known after apply)"
SENSITIVE = "(sensitive value)"
ABSENT = ""
# Actions in the order an approver must read them: what is lost first.
ACTIONS = ("delete", "replace", "create", "update")
MAX_ATTRIBUTES = 300
MAX_VALUE_LENGTH = 500


@dataclass(frozen=True)
class AttributeChange:
    path: str
    before: str
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after


@dataclass(frozen=True)
class ResourceChange:
    address: str
    type: str
    action: str  # one of ACTIONS
    attributes: tuple[AttributeChange, ...] = ()
    note: str = ""  # e.g. CloudFormation's "may be replaced"
    attributes_cut: int = 0  # attributes left out past MAX_ATTRIBUTES

    @property
    def destructive(self) -> bool:
        return self.action in ("delete", "replace")

    @property
    def changed_attributes(self) -> tuple[AttributeChange, ...]:
        return tuple(attribute for attribute in self.attributes if attribute.changed)


@dataclass(frozen=True)
class ResourceGroup:
    type: str
    resources: tuple[ResourceChange, ...]

    @property
    def destructive(self) -> bool:
        return any(resource.destructive for resource in self.resources)


@dataclass(frozen=True)
class PlanSummary:
    format: str  # "", "terraform", "terragrunt", "pulumi", "cloudformation"
    resources: tuple[ResourceChange, ...] = ()
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ACTIONS, 0))

    @property
    def has_plan(self) -> bool:
        return bool(self.format)

    @property
    def headline(self) -> str:
        if not self.has_plan:
            return "no plan was sent with this deployment"
        if not self.resources:
            return "no changes"
        return ", ".join(f"{self.counts[action]} to {action}" for action in ACTIONS if self.counts[action])

    @property
    def groups(self) -> tuple[ResourceGroup, ...]:
        """Resources by type; types with a delete or replace first, then by name."""
        by_type: dict[str, list[ResourceChange]] = {}
        for resource in self.resources:
            by_type.setdefault(resource.type, []).append(resource)
        groups = [ResourceGroup(kind, tuple(resources)) for kind, resources in by_type.items()]
        return tuple(sorted(groups, key=lambda group: (not group.destructive, group.type)))

    @property
    def destructive(self) -> tuple[ResourceChange, ...]:
        return tuple(resource for resource in self.resources if resource.destructive)


def summarise_plan(plan: Any) -> PlanSummary:
    if not isinstance(plan, dict):
        return PlanSummary("")
    if plan.get("is_run_all") and isinstance(plan.get("modules"), dict):
        changes = []
        for path, module_plan in sorted(plan["modules"].items()):
            changes += _terraform_changes(module_plan, prefix=f"{path}: ")
        return _summary("terragrunt", changes)
    if "format_version" in plan:
        return _summary("terraform", _terraform_changes(plan))
    if "steps" in plan or "changeSummary" in plan:
        return _summary("pulumi", _pulumi_preview_changes(plan))
    if "resourcePlans" in plan or "manifest" in plan:
        return _summary("pulumi", _pulumi_update_plan_changes(plan))
    if "Changes" in plan:
        return _summary("cloudformation", _change_set_changes(plan))
    if "StackResourceSummaries" in plan:
        return _summary("cloudformation", _stack_resources_deleted(plan))
    return PlanSummary("")


def _summary(format: str, changes: list[ResourceChange]) -> PlanSummary:
    order = {action: position for position, action in enumerate(ACTIONS)}
    changes.sort(key=lambda change: (order[change.action], change.type, change.address))
    counts = dict.fromkeys(ACTIONS, 0)
    for change in changes:
        counts[change.action] += 1
    return PlanSummary(format, tuple(changes), counts)


# --- Terraform and OpenTofu ----------------------------------------------------------------------------


def terraform_action(actions: list[str]) -> str | None:
    """The one action an approver sees for Terraform's list (None: nothing changes, or only a read)."""
    if "delete" in actions and "create" in actions:
        return "replace"
    for action in ("delete", "create", "update"):
        if action in actions:
            return action
    return None


def _terraform_changes(plan: Any, prefix: str = "") -> list[ResourceChange]:
    if not isinstance(plan, dict):
        return []
    changes = []
    for item in plan.get("resource_changes") or []:
        if not isinstance(item, dict) or item.get("mode") == "data":
            continue
        body = item.get("change") if isinstance(item.get("change"), dict) else {}
        action = terraform_action(body.get("actions") or [])
        if action is None:
            continue
        attributes: list[AttributeChange] = []
        _walk(
            body.get("before"),
            body.get("after"),
            body.get("after_unknown"),
            body.get("before_sensitive"),
            body.get("after_sensitive"),
            "",
            attributes,
        )
        changes.append(
            _resource(f"{prefix}{item.get('address', '?')}", str(item.get("type", "?")), action, attributes)
        )
    return changes


def _resource(
    address: str, kind: str, action: str, attributes: list[AttributeChange], note: str = ""
) -> ResourceChange:
    return ResourceChange(
        address,
        kind,
        action,
        tuple(attributes[:MAX_ATTRIBUTES]),
        note,
        max(0, len(attributes) - MAX_ATTRIBUTES),
    )


def _child(mask: Any, key: Any) -> Any:
    """A mask (after_unknown, *_sensitive) of a child: masks are trees of the value's shape, or a bool
    standing for the whole subtree."""
    if isinstance(mask, dict):
        return mask.get(key)
    if isinstance(mask, list):
        return mask[key] if isinstance(key, int) and key < len(mask) else None
    return mask if mask is True else None


def _walk(
    before: Any,
    after: Any,
    unknown: Any,
    before_sensitive: Any,
    after_sensitive: Any,
    path: str,
    out: list[AttributeChange],
) -> None:
    if unknown is True:
        shown = SENSITIVE if before_sensitive is True and before is not None else _render(before)
        out.append(AttributeChange(path or "(value)", shown, KNOWN_AFTER_APPLY))
        return
    if before_sensitive is True or after_sensitive is True:
        # Masked on both sides; whether it changed is said, never what it is.
        shown_before = SENSITIVE if before is not None else ABSENT
        shown_after = SENSITIVE if after is not None else ABSENT
        if before != after and shown_before == shown_after:
            shown_after = f"{SENSITIVE} (changed)"
        out.append(AttributeChange(path or "(value)", shown_before, shown_after))
        return
    if isinstance(before, dict) or isinstance(after, dict) or isinstance(unknown, dict):
        keys = set(before or {}) if isinstance(before, dict) else set()
        keys |= set(after or {}) if isinstance(after, dict) else set()
        keys |= set(unknown) if isinstance(unknown, dict) else set()
        if not keys:
            out.append(AttributeChange(path or "(value)", _render(before), _render(after)))
        for key in sorted(keys):
            _walk(
                before.get(key) if isinstance(before, dict) else None,
                after.get(key) if isinstance(after, dict) else None,
                _child(unknown, key),
                _child(before_sensitive, key),
                _child(after_sensitive, key),
                f"{path}.{key}" if path else str(key),
                out,
            )
        return
    if isinstance(before, list) or isinstance(after, list) or isinstance(unknown, list):
        length = max(len(value) if isinstance(value, list) else 0 for value in (before, after, unknown))
        if not length:
            out.append(AttributeChange(path or "(value)", _render(before), _render(after)))
        for index in range(length):
            _walk(
                before[index] if isinstance(before, list) and index < len(before) else None,
                after[index] if isinstance(after, list) and index < len(after) else None,
                _child(unknown, index),
                _child(before_sensitive, index),
                _child(after_sensitive, index),
                f"{path}[{index}]",
                out,
            )
        return
    out.append(AttributeChange(path or "(value)", _render(before), _render(after)))


def _render(value: Any) -> str:
    if value is None:
        return ABSENT
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    if len(text) > MAX_VALUE_LENGTH:
        return f"{text[:MAX_VALUE_LENGTH]}… ({len(text)} characters)"
    return text


# --- Pulumi --------------------------------------------------------------------------------------------

PULUMI_ACTIONS = {
    "create": "create",
    "update": "update",
    "delete": "delete",
    "replace": "replace",
    "create-replacement": "replace",
    "delete-replaced": "replace",
    "import": "create",
}


def _urn_type_and_name(urn: str) -> tuple[str, str]:
    # urn:pulumi:<stack>::<project>::<qualified type>::<name>
    parts = urn.split("::")
    kind = parts[-2].split("$")[-1] if len(parts) >= 3 else "?"
    return kind, parts[-1] if parts else urn


def _pulumi_preview_changes(plan: dict) -> list[ResourceChange]:
    seen: dict[str, ResourceChange] = {}
    for step in plan.get("steps") or []:
        if not isinstance(step, dict):
            continue
        action = PULUMI_ACTIONS.get(str(step.get("op")))
        urn = str(step.get("urn", "?"))
        if action is None or (urn in seen and seen[urn].action == "replace"):
            continue
        kind, name = _urn_type_and_name(urn)
        old = (step.get("oldState") or {}).get("inputs") if isinstance(step.get("oldState"), dict) else None
        new = (step.get("newState") or {}).get("inputs") if isinstance(step.get("newState"), dict) else None
        attributes: list[AttributeChange] = []
        _walk(old, new, None, None, None, "", attributes)
        seen[urn] = _resource(name, kind, action, attributes)
    return list(seen.values())


def _pulumi_update_plan_changes(plan: dict) -> list[ResourceChange]:
    changes = []
    resource_plans = plan.get("resourcePlans") if isinstance(plan.get("resourcePlans"), dict) else {}
    for urn, resource_plan in resource_plans.items():
        steps = resource_plan.get("steps") if isinstance(resource_plan, dict) else None
        actions = {PULUMI_ACTIONS.get(step) for step in steps or []} - {None}
        if not actions:
            continue
        action = "replace" if "replace" in actions else next(a for a in ACTIONS if a in actions)
        kind, name = _urn_type_and_name(urn)
        goal = resource_plan.get("goal") if isinstance(resource_plan.get("goal"), dict) else {}
        attributes: list[AttributeChange] = []
        _walk(None, goal.get("inputs"), None, None, None, "", attributes)
        changes.append(_resource(name, kind, action, attributes))
    return changes


# --- CloudFormation ------------------------------------------------------------------------------------


def _change_set_changes(plan: dict) -> list[ResourceChange]:
    changes = []
    for change in plan.get("Changes") or []:
        resource = change.get("ResourceChange") if isinstance(change, dict) else None
        if not isinstance(resource, dict):
            continue
        kind = str(resource.get("ResourceType", "?"))
        address = str(resource.get("LogicalResourceId", "?"))
        replacement = resource.get("Replacement")
        action = {"Add": "create", "Remove": "delete", "Import": "create"}.get(
            resource.get("Action"), "update"
        )
        note = ""
        if action == "update" and replacement == "True":
            action = "replace"
        elif action == "update" and replacement == "Conditional":
            note = "may be replaced, depending on values known only at deploy time"
        attributes = []
        for detail in resource.get("Details") or []:
            target = detail.get("Target") if isinstance(detail, dict) else None
            if not isinstance(target, dict):
                continue
            name = ".".join(str(part) for part in (target.get("Attribute"), target.get("Name")) if part)
            recreation = target.get("RequiresRecreation")
            attributes.append(
                AttributeChange(
                    name or "(attribute)",
                    "(current value)",
                    f"(changes{'; recreation: ' + recreation if recreation and recreation != 'Never' else ''})",
                )
            )
        changes.append(_resource(address, kind, action, attributes, note))
    return changes


def _stack_resources_deleted(plan: dict) -> list[ResourceChange]:
    return [
        _resource(
            str(summary.get("LogicalResourceId", "?")), str(summary.get("ResourceType", "?")), "delete", []
        )
        for summary in plan.get("StackResourceSummaries") or []
        if isinstance(summary, dict)
    ]
