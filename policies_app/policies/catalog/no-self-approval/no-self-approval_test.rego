package env0_test

import rego.v1

import data.env0

bob := {"name": "bob", "email": "bob@example.com", "teams": []}

alice := {"name": "alice", "email": "alice@example.com", "teams": []}

test_the_deployers_own_approval_does_not_count if {
	env0.pending["waiting for an approval by someone other than the deployer"] with input as {"deployerUser": bob, "approvers": [bob]}
		with data.policyData as {"deny_self_approval": false}
}

test_the_deployers_own_approval_denies_when_asked if {
	env0.deny["the deployer approved their own deployment"] with input as {"deployerUser": bob, "approvers": [bob]}
		with data.policyData as {"deny_self_approval": true}
}

test_another_approver_allows if {
	env0.allow["approved by alice, not the deployer"] with input as {"deployerUser": bob, "approvers": [bob, alice]}
		with data.policyData as {"deny_self_approval": false}
}

test_the_same_email_under_another_name_is_the_deployer if {
	count(env0.allow) == 0 with input as {"deployerUser": bob, "approvers": [{"name": "Bob B.", "email": "bob@example.com", "teams": []}]}
		with data.policyData as {"deny_self_approval": false}
}
