"""A deployment's plan as an approver reads it, as close to ``terraform plan``'s own output as a page can
be: how many resources are created, updated, replaced, deleted, read and left alone; each resource with its
address, its action in Terraform's words and symbols, grouped by type, destroys and replacements first; and
each resource's attributes before and after, changed ones first, the attributes forcing a replacement
marked (``replace_paths``), values unknown until apply shown ``(known after apply)`` and sensitive ones
``(sensitive value)``, as Terraform prints them.

Sensitive values: what the plan marks (``before_sensitive``/``after_sensitive``) is never rendered, and
every rendered value holding one of the ``secrets`` the caller passes (guards/masking.py's ``plan_secrets``:
the values at the plan's sensitive paths and of the environment's sensitive variables) is shown as
``(sensitive value)`` instead, whole, as Terraform shows a sensitive value.

Reads every plan format a deployment may carry (iac/plan_formats.py): Terraform and OpenTofu
(``terraform show -json``), Terragrunt (one module or run-all), Pulumi (preview or update plan) and
CloudFormation (change set, or the stack's resources for a destroy). Plain data in, plain data out: no
Django, so it is tested and benchmarked alone.

Why this module is long: one reader per plan format, each small, sharing the attribute walk and the
resource shape; split apart they would share most of this file's names.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from policies_app.guards.masking import MASK, scrub

KNOWN_AFTER_APPLY = "(known after apply)"
SENSITIVE = "(sensitive value)"
ABSENT = ""
# Actions in the order an approver must read them: what is lost first; what changes nothing last.
ACTIONS = ("delete", "replace", "create", "update", "read", "no-op")
CHANGING = ("delete", "replace", "create", "update")
# How Terraform's plan output introduces each action: (symbol, what happens to the resource).
TERRAFORM_WORDING = {
    "create": ("+", "will be created"),
    "update": ("~", "will be updated in-place"),
    "delete": ("-", "will be destroyed"),
    "replace": ("-/+", "must be replaced"),
    "read": ("<=", "will be read during apply"),
    "no-op": (" ", "has no changes"),
}
# Terraform's ``action_reason`` as its plan output words it.
ACTION_REASONS = {
    "replace_because_tainted": "is tainted, so must be replaced",
    "replace_by_request": "will be replaced, as requested",
    "replace_by_triggers": "will be replaced due to changes in replace_triggered_by",
    "delete_because_no_resource_config": "is not in configuration",
    "delete_because_no_module": "its module is not in configuration",
    "delete_because_wrong_repetition": "its resource does not use count or for_each any more",
    "delete_because_count_index": "its index is out of range for count",
    "delete_because_each_key": "its key is not in for_each",
    "delete_because_no_move_target": "it was moved to an address not in configuration",
    "read_because_config_unknown": "config refers to values not yet known",
    "read_because_dependency_pending": "depends on a resource or a module with changes pending",
    "read_because_check_nested": "config will be checked after apply",
}
MAX_ATTRIBUTES = 300
MAX_VALUE_LENGTH = 500


@dataclass(frozen=True)
class AttributeChange:
    path: str
    before: str
    after: str
    differs: bool | None = None  # said when the shown values cannot tell (both sensitive)
    forces_replacement: bool = False

    @property
    def changed(self) -> bool:
        return self.differs if self.differs is not None else self.before != self.after


@dataclass(frozen=True)
class ResourceChange:
    address: str
    type: str
    action: str  # one of ACTIONS
    attributes: tuple[AttributeChange, ...] = ()
    note: str = ""  # why (Terraform's action reason), or CloudFormation's "may be replaced"
    attributes_cut: int = 0  # attributes left out past MAX_ATTRIBUTES
    replace_paths: tuple[str, ...] = ()  # what forces the replacement, as attribute paths
    create_before_destroy: bool = False

    @property
    def destructive(self) -> bool:
        return self.action in ("delete", "replace")

    @property
    def symbol(self) -> str:
        return "+/-" if self.create_before_destroy else TERRAFORM_WORDING[self.action][0]

    @property
    def verb(self) -> str:
        if self.create_before_destroy:
            return "must be replaced (the new one created first)"
        return TERRAFORM_WORDING[self.action][1]

    @property
    def changed_attributes(self) -> tuple[AttributeChange, ...]:
        return tuple(attribute for attribute in self.attributes if attribute.changed)

    @property
    def unchanged_attributes(self) -> tuple[AttributeChange, ...]:
        return tuple(attribute for attribute in self.attributes if not attribute.changed)


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
        shown = [f"{self.counts[action]} to {action}" for action in ACTIONS[:-1] if self.counts[action]]
        return ", ".join(shown) if shown else "no changes"

    @property
    def count_rows(self) -> tuple[tuple[str, str, int], ...]:
        """(action, label, count) for each action, in reading order."""
        return tuple(
            (action, "unchanged" if action == "no-op" else f"to {action}", self.counts[action])
            for action in ACTIONS
        )

    @property
    def terraform_line(self) -> str:
        """Terraform's own last line (a replacement is one to add and one to destroy)."""
        if not any(self.counts[action] for action in CHANGING):
            return "No changes. Your infrastructure matches the configuration."
        added = self.counts["create"] + self.counts["replace"]
        destroyed = self.counts["delete"] + self.counts["replace"]
        return f"Plan: {added} to add, {self.counts['update']} to change, {destroyed} to destroy."

    @property
    def changing(self) -> tuple[ResourceChange, ...]:
        return tuple(resource for resource in self.resources if resource.action != "no-op")

    @property
    def unchanged(self) -> tuple[ResourceChange, ...]:
        return tuple(resource for resource in self.resources if resource.action == "no-op")

    @property
    def groups(self) -> tuple[ResourceGroup, ...]:
        """Resources that change by type; types with a delete or replace first, by name; then the others
        by their first action (what is only read last), then by name."""
        by_type: dict[str, list[ResourceChange]] = {}
        for resource in self.changing:
            by_type.setdefault(resource.type, []).append(resource)
        groups = [ResourceGroup(kind, tuple(resources)) for kind, resources in by_type.items()]
        order = {action: position for position, action in enumerate(ACTIONS)}
        return tuple(
            sorted(
                groups,
                key=lambda group: (
                    not group.destructive,
                    0 if group.destructive else min(order[resource.action] for resource in group.resources),
                    group.type,
                ),
            )
        )

    @property
    def destructive(self) -> tuple[ResourceChange, ...]:
        return tuple(resource for resource in self.resources if resource.destructive)


def summarise_plan(
    plan: Any, secrets: frozenset[str] = frozenset(), *, attributes: bool = True
) -> PlanSummary:
    """The plan as approvers read it; ``secrets``: the strings no rendered value may show; without
    ``attributes``, the resources alone (their values are not walked)."""
    if not isinstance(plan, dict):
        return PlanSummary("")
    reader = _Reader(secrets, attributes)
    terraform = _terraform_plans(plan)
    if terraform is not None:
        changes = []
        for prefix, module_plan in terraform:
            changes += reader.terraform_changes(module_plan, prefix=prefix)
        return _summary(_terraform_format(plan), changes)
    if "steps" in plan or "changeSummary" in plan:
        return _summary("pulumi", reader.pulumi_preview_changes(plan))
    if "resourcePlans" in plan or "manifest" in plan:
        return _summary("pulumi", reader.pulumi_update_plan_changes(plan))
    if "Changes" in plan:
        return _summary("cloudformation", _change_set_changes(plan))
    if "StackResourceSummaries" in plan:
        return _summary("cloudformation", _stack_resources_deleted(plan))
    return PlanSummary("")


def plan_counts(plan: Any) -> dict[str, int] | None:
    """The counts by action alone (None without a plan), as the queue shows them."""
    terraform = _terraform_plans(plan)
    if terraform is not None:
        # Counted at every trigger, before the decision: each change's action alone, no resource built
        # (what summarise_plan counts, in a fifth of the time).
        return _counts(action for _, module_plan in terraform for *_, action in _terraform_items(module_plan))
    summary = summarise_plan(plan, attributes=False)
    return dict(summary.counts) if summary.has_plan else None


def _terraform_plans(plan: Any) -> list[tuple[str, Any]] | None:
    """The Terraform plans in ``plan``, each with the prefix of its addresses: a Terragrunt run-all's
    modules, or the plan itself; None when it is not in Terraform's format."""
    if not isinstance(plan, dict):
        return None
    if plan.get("is_run_all") and isinstance(plan.get("modules"), dict):
        return [(f"{path}: ", module_plan) for path, module_plan in sorted(plan["modules"].items())]
    return [("", plan)] if "format_version" in plan else None


def _terraform_format(plan: dict) -> str:
    return "terragrunt" if plan.get("is_run_all") and isinstance(plan.get("modules"), dict) else "terraform"


def _terraform_items(plan: Any) -> Iterator[tuple[dict, dict, Any, str]]:
    """Each change of a Terraform plan that is shown: (the item, its change, its actions, the action)."""
    if not isinstance(plan, dict):
        return
    for item in plan.get("resource_changes") or []:
        if not isinstance(item, dict):
            continue
        body = item.get("change") if isinstance(item.get("change"), dict) else {}
        actions = body.get("actions") or []
        action = terraform_action(actions)
        if action is None or (item.get("mode") == "data" and action != "read"):
            continue
        yield item, body, actions, action


def _counts(actions: Iterable[str]) -> dict[str, int]:
    counts = dict.fromkeys(ACTIONS, 0)
    for action in actions:
        counts[action] += 1
    return counts


def _summary(format: str, changes: list[ResourceChange]) -> PlanSummary:
    order = {action: position for position, action in enumerate(ACTIONS)}
    changes.sort(key=lambda change: (order[change.action], change.type, change.address))
    return PlanSummary(format, tuple(changes), _counts(change.action for change in changes))


def terraform_action(actions: list[str]) -> str | None:
    """The one action an approver sees for Terraform's list (None: not a change Terraform reports)."""
    if "delete" in actions and "create" in actions:
        return "replace"
    for action in ("delete", "create", "update", "read", "no-op"):
        if action in actions:
            return action
    if "forget" in actions:
        return "no-op"  # removed from the state, left in place: nothing is destroyed
    return None


def path_text(steps: list[Any] | tuple[Any, ...]) -> str:
    """Terraform's path steps (keys and indexes) as the summary writes attribute paths."""
    text = ""
    for step in steps:
        if isinstance(step, int) and not isinstance(step, bool):
            text += f"[{step}]"
        else:
            text += f".{step}" if text else str(step)
    return text or "(value)"


def _child(mask: Any, key: Any) -> Any:
    """A mask (after_unknown, *_sensitive) of a child: masks are trees of the value's shape, or a bool
    standing for the whole subtree."""
    if isinstance(mask, dict):
        return mask.get(key)
    if isinstance(mask, list):
        return mask[key] if isinstance(key, int) and key < len(mask) else None
    return mask if mask is True else None


def _shape(value: Any) -> str:
    return "object" if isinstance(value, dict) else "list" if isinstance(value, list) else "scalar"


def _forces(steps: tuple[Any, ...], replace_paths: list[tuple[Any, ...]]) -> bool:
    """Whether the attribute at ``steps`` is (in, or holds) one of the paths forcing a replacement."""
    return any(steps[: len(path)] == path or path[: len(steps)] == steps for path in replace_paths if path)


def _resource(
    address: str, kind: str, action: str, attributes: list[AttributeChange], **extra: Any
) -> ResourceChange:
    attributes = sorted(attributes, key=lambda attribute: not attribute.changed)  # stable: changed first
    return ResourceChange(
        address,
        kind,
        action,
        tuple(attributes[:MAX_ATTRIBUTES]),
        attributes_cut=max(0, len(attributes) - MAX_ATTRIBUTES),
        **extra,
    )


class _Reader:
    """Walks a plan's values into attribute changes, never rendering a sensitive one."""

    def __init__(self, secrets: frozenset[str], attributes: bool = True) -> None:
        self.secrets = secrets
        self.attributes = attributes

    def render(self, value: Any) -> str:
        if value is None:
            return ABSENT
        text = json.dumps(value, sort_keys=True, ensure_ascii=False)
        if value == MASK or (self.secrets and scrub(text, self.secrets) != text):
            return SENSITIVE  # masked already, or holding a secret: shown whole as Terraform shows it
        if len(text) > MAX_VALUE_LENGTH:
            return f"{text[:MAX_VALUE_LENGTH]}… ({len(text)} characters)"
        return text

    def terraform_changes(self, plan: Any, prefix: str = "") -> list[ResourceChange]:
        changes = []
        for item, body, actions, action in _terraform_items(plan):
            replace_paths = [
                tuple(path) for path in body.get("replace_paths") or [] if isinstance(path, list)
            ]
            attributes: list[AttributeChange] = []
            self.walk(
                body.get("before"),
                body.get("after"),
                body.get("after_unknown"),
                body.get("before_sensitive"),
                body.get("after_sensitive"),
                (),
                attributes,
                replace_paths,
            )
            note = ACTION_REASONS.get(str(item.get("action_reason")), "")
            if "forget" in actions:
                note = "will no longer be managed by Terraform (not destroyed)"
            previous = item.get("previous_address")
            if isinstance(previous, str) and previous != item.get("address"):
                note = "; ".join(part for part in (f"moved from {previous}", note) if part)
            address = f"{prefix}{item.get('address', '?')}"
            changes.append(
                _resource(
                    address,
                    str(item.get("type", "?")),
                    action,
                    attributes,
                    note=note,
                    replace_paths=tuple(path_text(path) for path in replace_paths),
                    create_before_destroy=action == "replace" and actions[:1] == ["create"],
                )
            )
        return changes

    def walk(
        self,
        before: Any,
        after: Any,
        unknown: Any,
        before_sensitive: Any,
        after_sensitive: Any,
        steps: tuple[Any, ...],
        out: list[AttributeChange],
        replace_paths: list[tuple[Any, ...]],
    ) -> None:
        if not self.attributes:
            return

        def leaf(shown_before: str, shown_after: str, differs: bool | None = None) -> None:
            out.append(
                AttributeChange(
                    path_text(steps), shown_before, shown_after, differs, _forces(steps, replace_paths)
                )
            )

        if unknown is True:
            shown = SENSITIVE if before_sensitive is True and before is not None else self.render(before)
            leaf(shown, KNOWN_AFTER_APPLY, True)
            return
        if before_sensitive is True or after_sensitive is True:
            # Masked on both sides; whether it changed is said, never what it is.
            leaf(
                SENSITIVE if before is not None else ABSENT,
                SENSITIVE if after is not None else ABSENT,
                before != after,
            )
            return
        if before is not None and after is not None and _shape(before) != _shape(after):
            # A dynamic attribute changing its type (a list becoming a string): shown whole, as Terraform does.
            leaf(self.render(before), self.render(after), True)
            return
        if isinstance(before, dict) or isinstance(after, dict) or isinstance(unknown, dict):
            keys = set(before or {}) if isinstance(before, dict) else set()
            keys |= set(after or {}) if isinstance(after, dict) else set()
            keys |= set(unknown) if isinstance(unknown, dict) else set()
            if not keys:
                leaf(self.render(before), self.render(after), before != after)
            for key in sorted(keys):
                self.walk(
                    before.get(key) if isinstance(before, dict) else None,
                    after.get(key) if isinstance(after, dict) else None,
                    _child(unknown, key),
                    _child(before_sensitive, key),
                    _child(after_sensitive, key),
                    (*steps, key),
                    out,
                    replace_paths,
                )
            return
        if isinstance(before, list) or isinstance(after, list) or isinstance(unknown, list):
            length = max(len(value) if isinstance(value, list) else 0 for value in (before, after, unknown))
            if not length:
                leaf(self.render(before), self.render(after), before != after)
            for index in range(length):
                self.walk(
                    before[index] if isinstance(before, list) and index < len(before) else None,
                    after[index] if isinstance(after, list) and index < len(after) else None,
                    _child(unknown, index),
                    _child(before_sensitive, index),
                    _child(after_sensitive, index),
                    (*steps, index),
                    out,
                    replace_paths,
                )
            return
        leaf(self.render(before), self.render(after), before != after)

    # --- Pulumi ----------------------------------------------------------------------------------------

    def pulumi_preview_changes(self, plan: dict) -> list[ResourceChange]:
        seen: dict[str, ResourceChange] = {}
        for step in plan.get("steps") or []:
            if not isinstance(step, dict):
                continue
            action = PULUMI_ACTIONS.get(str(step.get("op")))
            urn = str(step.get("urn", "?"))
            if action is None or (urn in seen and seen[urn].action == "replace"):
                continue
            kind, name = _urn_type_and_name(urn)
            if kind == "pulumi:pulumi:Stack":
                continue  # the stack itself: no resource of the user's
            old = _inputs(step.get("oldState"))
            new = _inputs(step.get("newState"))
            reasons = [str(reason) for reason in step.get("replaceReasons") or []]
            attributes: list[AttributeChange] = []
            self.walk(old, new, None, None, None, (), attributes, [tuple(r.split(".")) for r in reasons])
            seen[urn] = _resource(name, kind, action, attributes, replace_paths=tuple(reasons))
        return list(seen.values())

    def pulumi_update_plan_changes(self, plan: dict) -> list[ResourceChange]:
        changes = []
        resource_plans = plan.get("resourcePlans") if isinstance(plan.get("resourcePlans"), dict) else {}
        for urn, resource_plan in resource_plans.items():
            steps = resource_plan.get("steps") if isinstance(resource_plan, dict) else None
            actions = {PULUMI_ACTIONS.get(step) for step in steps or []} - {None}
            if not actions:
                continue
            action = "replace" if "replace" in actions else next(a for a in ACTIONS if a in actions)
            kind, name = _urn_type_and_name(urn)
            if kind == "pulumi:pulumi:Stack":
                continue
            goal = resource_plan.get("goal") if isinstance(resource_plan.get("goal"), dict) else {}
            attributes: list[AttributeChange] = []
            self.walk(None, goal.get("inputs"), None, None, None, (), attributes, [])
            changes.append(_resource(name, kind, action, attributes))
        return changes


PULUMI_ACTIONS = {
    "create": "create",
    "update": "update",
    "delete": "delete",
    "replace": "replace",
    "create-replacement": "replace",
    "delete-replaced": "replace",
    "import": "create",
    "read": "read",
    "same": "no-op",
}


def _inputs(state: Any) -> Any:
    return state.get("inputs") if isinstance(state, dict) else None


def _urn_type_and_name(urn: str) -> tuple[str, str]:
    # urn:pulumi:<stack>::<project>::<qualified type>::<name>
    parts = urn.split("::")
    kind = parts[-2].split("$")[-1] if len(parts) >= 3 else "?"
    return kind, parts[-1] if parts else urn


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
        forcing = []
        for detail in resource.get("Details") or []:
            target = detail.get("Target") if isinstance(detail, dict) else None
            if not isinstance(target, dict):
                continue
            name = ".".join(str(part) for part in (target.get("Attribute"), target.get("Name")) if part)
            recreation = target.get("RequiresRecreation")
            if recreation == "Always":
                forcing.append(name or "(attribute)")
            attributes.append(
                AttributeChange(
                    name or "(attribute)",
                    "(current value)",
                    "(changes, may force replacement)" if recreation == "Conditionally" else "(changes)",
                    True,
                    recreation == "Always",
                )
            )
        changes.append(_resource(address, kind, action, attributes, note=note, replace_paths=tuple(forcing)))
    return changes


def _stack_resources_deleted(plan: dict) -> list[ResourceChange]:
    return [
        _resource(
            str(summary.get("LogicalResourceId", "?")), str(summary.get("ResourceType", "?")), "delete", []
        )
        for summary in plan.get("StackResourceSummaries") or []
        if isinstance(summary, dict)
    ]
