# Terraform/OpenTofu plan helpers over input.plan.resource_changes and, for a Terragrunt run-all
# plan ({is_run_all: true, modules: {path: plan}}), over every module's resource_changes. Addresses
# of a run-all plan are prefixed with the module path and a colon ("vpc:aws_vpc.main"), because two
# modules may hold the same address. Written in v1 syntax with `import rego.v1` so the module also
# loads into an engine in v0 mode.
package lib.tfplan

import rego.v1

# Every resource change as {module, address, type, name, mode, actions, change}; `module` is "" for a
# single plan, the module path for a run-all plan; `address` is prefixed as described above.
resource_changes contains entry if {
	not input.plan.is_run_all
	some change in input.plan.resource_changes
	entry := _entry("", change.address, change)
}

resource_changes contains entry if {
	input.plan.is_run_all == true
	some path, module_plan in input.plan.modules
	some change in module_plan.resource_changes
	entry := _entry(path, sprintf("%s:%s", [path, change.address]), change)
}

_entry(path, address, change) := {
	"module": path,
	"address": address,
	"type": change.type,
	"name": change.name,
	"mode": object.get(change, "mode", "managed"),
	"actions": change.change.actions,
	"change": change.change,
}

# Addresses whose actions include `action` ("create", "update", "delete", "read", "no-op", "forget").
# A replacement has both "delete" and "create", so it is in changes_by_action("delete") as well.
changes_by_action(action) := {entry.address |
	some entry in resource_changes
	action in entry.actions
}

# Pure creations, updates and deletions (a replacement is none of these).
creates := {entry.address | some entry in resource_changes; entry.actions == ["create"]}

updates := {entry.address | some entry in resource_changes; entry.actions == ["update"]}

deletes := {entry.address | some entry in resource_changes; entry.actions == ["delete"]}

# Replacements: destroy then create (the default) or create then destroy (create_before_destroy).
replacements := {entry.address | some entry in resource_changes; _replaces(entry.actions)}

_replaces(actions) if actions == ["delete", "create"]

_replaces(actions) if actions == ["create", "delete"]

# Everything that stops existing in its current form: deletions and replacements.
destroyed_or_replaced := deletes | replacements
