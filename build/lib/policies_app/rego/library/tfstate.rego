# Terraform state helpers over input.state, the Sentinel tfstate/v1 view the platform builds from an
# environment's state (policies_app/iac/state_view.py). Written in v1 syntax with `import rego.v1` so
# the module also loads into an engine in v0 mode.
package lib.tfstate

import rego.v1

# The module namespace ({path, resources, data, outputs}) at a module path, [] for the root, e.g.
# module(["network"]) or module(["app[\"prod\"]"]) for a for_each instance. Undefined when the module
# is not in the state (Sentinel returns null there). Matched on `path`, never on the joined key,
# because a for_each key may itself contain a dot.
module(path) := namespace if {
	some namespace in input.state.modules
	namespace.path == path
}

# Every instance of managed resources of type t, across all modules, as a set of
# {module_path, type, name, key, instance}; `instance` is {attr, depends_on, id, tainted}. `key` is the
# count index, a number (0 for a resource with neither count nor for_each), or the for_each key, a
# string. The instances of one resource are an array by index (count, or neither) or an object by key
# (for_each); `some key, instance in instances` walks both. The null left in the array where a counted
# instance is missing (after a targeted destroy) is skipped.
resources_of_type(t) := {entry | some entry in _resource_instances; entry.type == t}

# The same for data sources of type t.
data_of_type(t) := {entry | some entry in _data_instances; entry.type == t}

# The iteration lives in rule bodies, not in comprehensions: regopy (rego-cpp) misreads
# `some key, value in x` inside a multi-line comprehension as a set literal.
_resource_instances contains entry if {
	some namespace in input.state.modules
	some resource_type, by_name in namespace.resources
	some name, instances in by_name
	some key, instance in instances
	instance != null
	entry := {"module_path": namespace.path, "type": resource_type, "name": name, "key": key, "instance": instance}
}

_data_instances contains entry if {
	some namespace in input.state.modules
	some data_type, by_name in namespace.data
	some name, instances in by_name
	some key, instance in instances
	instance != null
	entry := {"module_path": namespace.path, "type": data_type, "name": name, "key": key, "instance": instance}
}
