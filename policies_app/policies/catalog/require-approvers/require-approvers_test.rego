package env0_test

import rego.v1

import data.env0

approver(name) := {"name": name, "email": sprintf("%s@example.com", [name]), "teams": []}

test_a_deployment_without_approvals_waits if {
	env0.pending["0 of the 2 required approvals so far"] with input as {"approvers": []}
		with data.policyData as {"count": 2}
}

test_one_approval_of_two_still_waits if {
	count(env0.allow) == 0 with input as {"approvers": [approver("alice")]}
		with data.policyData as {"count": 2}
}

test_enough_approvals_allow if {
	env0.allow["approved by 2 people (2 required)"] with input as {"approvers": [approver("alice"), approver("sam")]}
		with data.policyData as {"count": 2}
}

test_enough_approvals_leave_nothing_pending if {
	count(env0.pending) == 0 with input as {"approvers": [approver("alice")]}
		with data.policyData as {"count": 1}
}
