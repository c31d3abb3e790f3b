package env0_test

import rego.v1

import data.env0

settings := {"types": ["aws_db_instance"], "tag_key": "protected", "tag_value": "true"}

change(address, type, actions, tags) := {
	"address": address,
	"type": type,
	"change": {"actions": actions, "before": {"tags": tags}, "after": null},
}

plan(changes) := {"plan": {"resource_changes": changes}}

test_destroying_a_protected_type_is_denied if {
	env0.deny["aws_db_instance.main would be destroyed, and its type is protected"] with input as plan([change("aws_db_instance.main", "aws_db_instance", ["delete"], {})])
		with data.policyData as settings
}

test_replacing_a_protected_type_is_denied if {
	count(env0.deny) == 1 with input as plan([change("aws_db_instance.main", "aws_db_instance", ["delete", "create"], {})])
		with data.policyData as settings
}

test_destroying_a_tagged_resource_is_denied if {
	env0.deny["aws_s3_bucket.logs would be destroyed, and its tag protected protects it"] with input as plan([change("aws_s3_bucket.logs", "aws_s3_bucket", ["delete"], {"protected": "true"})])
		with data.policyData as settings
}

test_another_tag_value_does_not_protect if {
	count(env0.deny) == 0 with input as plan([change("aws_s3_bucket.logs", "aws_s3_bucket", ["delete"], {"protected": "false"})])
		with data.policyData as settings
}

test_updating_a_protected_type_is_allowed if {
	env0.allow["no protected resource is destroyed"] with input as plan([change("aws_db_instance.main", "aws_db_instance", ["update"], {})])
		with data.policyData as settings
}

test_a_plan_without_changes_is_allowed if {
	env0.allow["no protected resource is destroyed"] with input as plan([]) with data.policyData as settings
}
