package env0

import rego.v1

# Parameters (data.policyData): deny_self_approval, whether the deployer's own approval denies.
is_deployer(user) if {
	user.email != ""
	user.email == input.deployerUser.email
}

is_deployer(user) if user.name == input.deployerUser.name

other_approvers contains approver.name if {
	some approver in input.approvers
	not is_deployer(approver)
}

self_approved if {
	some approver in input.approvers
	is_deployer(approver)
}

deny contains "the deployer approved their own deployment" if {
	self_approved
	data.policyData.deny_self_approval == true
}

pending contains "waiting for an approval by someone other than the deployer" if {
	count(other_approvers) == 0
}

allow contains sprintf("approved by %s, not the deployer", [concat(", ", sort(other_approvers))]) if {
	count(other_approvers) > 0
}
