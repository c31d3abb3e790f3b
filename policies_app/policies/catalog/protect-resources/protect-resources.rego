package env0

import rego.v1

# Parameters (data.policyData): types (resource types never to destroy), tag_key and tag_value (a tag
# that protects the resource carrying it; an empty value protects whatever the value).
destroys(change) if "delete" in change.change.actions

tags(change) := object.union(object.get(change.change.before, "tags_all", {}), object.get(change.change.before, "tags", {})) if {
	is_object(change.change.before)
} else := {}

protected_by_tag(change) if {
	data.policyData.tag_key != ""
	value := tags(change)[data.policyData.tag_key]
	data.policyData.tag_value in {"", value}
}

protected_type contains change.address if {
	some change in input.plan.resource_changes
	destroys(change)
	change.type in data.policyData.types
}

protected_tag contains change.address if {
	some change in input.plan.resource_changes
	destroys(change)
	protected_by_tag(change)
}

deny contains sprintf("%s would be destroyed, and its type is protected", [address]) if some address in protected_type

deny contains sprintf("%s would be destroyed, and its tag %s protects it", [address, data.policyData.tag_key]) if {
	some address in protected_tag
}

allow contains "no protected resource is destroyed" if {
	count(protected_type) == 0
	count(protected_tag) == 0
}
