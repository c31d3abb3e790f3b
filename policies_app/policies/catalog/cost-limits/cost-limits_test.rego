package env0_test

import rego.v1

import data.env0

limits := {"approval_above": 100, "deny_above": 1000, "without_estimate": "pending"}

cost(diff) := {"costEstimation": {"totalMonthlyCost": 5000, "monthlyCostDiff": diff}}

test_a_small_increase_is_allowed if {
	env0.allow["the monthly cost rises by 50, within 100"] with input as cost(50) with data.policyData as limits
}

test_a_saving_is_allowed if {
	count(env0.allow) == 1 with input as cost(-20) with data.policyData as limits
}

test_an_increase_above_the_first_limit_waits if {
	env0.pending["the monthly cost rises by 250.5, above 100: an approval is needed"] with input as cost(250.5)
		with data.policyData as limits
}

test_an_increase_above_the_second_limit_is_denied if {
	env0.deny["the monthly cost rises by 1500, above the limit of 1000"] with input as cost(1500)
		with data.policyData as limits
}

test_an_increase_above_the_second_limit_is_not_only_pending if {
	count(env0.pending) == 0 with input as cost(1500) with data.policyData as limits
}

test_no_estimate_waits_by_default if {
	env0.pending["there is no cost estimate: an approval is needed"] with input as {"costEstimation": {"monthlyCostDiff": null}}
		with data.policyData as limits
}

test_no_estimate_may_be_allowed if {
	env0.allow["there is no cost estimate"] with input as {}
		with data.policyData as object.union(limits, {"without_estimate": "allow"})
}
