package env0

import rego.v1

# Parameters (data.policyData): approval_above and deny_above (monthly cost increase), and what a
# deployment without a cost estimate gets (without_estimate: pending or allow).
increase := diff if {
	diff := input.costEstimation.monthlyCostDiff
	is_number(diff)
}

deny contains sprintf("the monthly cost rises by %v, above the limit of %v", [increase, data.policyData.deny_above]) if {
	increase > data.policyData.deny_above
}

pending contains sprintf("the monthly cost rises by %v, above %v: an approval is needed", [increase, data.policyData.approval_above]) if {
	increase > data.policyData.approval_above
	increase <= data.policyData.deny_above
}

allow contains sprintf("the monthly cost rises by %v, within %v", [increase, data.policyData.approval_above]) if {
	increase <= data.policyData.approval_above
	increase <= data.policyData.deny_above
}

pending contains "there is no cost estimate: an approval is needed" if {
	not increase
	data.policyData.without_estimate == "pending"
}

allow contains "there is no cost estimate" if {
	not increase
	data.policyData.without_estimate == "allow"
}
