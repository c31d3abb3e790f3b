package env0_test

import rego.v1

import data.env0

request(type, approvers) := {"deploymentRequest": {"type": type}, "approvers": approvers}

test_a_destroy_waits_for_an_approval if {
	env0.pending["a destroy needs 1 approvals, it has 0"] with input as request("destroy", [])
		with data.policyData as {"approvals": 1}
}

test_an_approved_destroy_is_allowed if {
	env0.allow["the destroy is approved by 1 people"] with input as request("destroyResume", [{"name": "alice"}])
		with data.policyData as {"approvals": 1}
}

test_a_deploy_is_not_held if {
	env0.allow["not a destroy"] with input as request("deploy", []) with data.policyData as {"approvals": 1}
}

test_a_deploy_waits_for_nothing if {
	count(env0.pending) == 0 with input as request("deployResume", []) with data.policyData as {"approvals": 2}
}
