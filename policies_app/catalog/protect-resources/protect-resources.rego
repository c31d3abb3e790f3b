package env0

import rego.v1

# Parameters (data.policyData): types (resource types never to destroy), tag_key and tag_value (a tag
# that protects the resource carrying it; an empty value protects whatever the value).
destroyed contains change if {
	some change in input.plan.resource_changes
	"delete" in change.change.actions
}

tags(change) := object.union(object.get(change.change.before, "tags_all", {}), object.get(change.change.before, "tags", {})) if {
	is_object(change.change.before)
} else := {}

protected_by_tag(change) if {
	data.policyData.tag_key != ""
	value := tags(change)[data.policyData.tag_key]
	data.policyData.tag_value in {"", value}
}

deny contains sprintf("%s would be destroyed, and %s resources are protected", [change.address, change.type]) if {
	some change in destroyed
	change.type in data.policyData.types
}

deny contains sprintf("%s would be destroyed, and its tag %s protects it", [change.address, data.policyData.tag_key]) if {
	some change in destroyed
	protected_by_tag(change)
}

allow contains "no protected resource is destroyed" if {
	every change in destroyed {
		not change.type in data.policyData.types
		not protected_by_tag(change)
	}
}
