package env0_test

import rego.v1

import data.env0

member(name, team) := {"name": name, "email": "", "teams": [{"id": "1", "name": team}]}

test_an_approval_from_another_team_still_waits if {
	env0.pending["waiting for an approver from the team security"] with input as {"approvers": [member("alice", "approvers")]}
		with data.policyData as {"team": "security"}
}

test_no_approval_waits if {
	count(env0.pending) == 1 with input as {"approvers": []}
		with data.policyData as {"team": "security"}
}

test_an_approval_from_the_team_allows if {
	env0.allow["approved by sam of the team security"] with input as {"approvers": [member("alice", "approvers"), member("sam", "security")]}
		with data.policyData as {"team": "security"}
}

test_an_approval_from_the_team_leaves_nothing_pending if {
	count(env0.pending) == 0 with input as {"approvers": [member("sam", "security")]}
		with data.policyData as {"team": "security"}
}
