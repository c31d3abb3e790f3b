# METADATA
# custom:
#   approvals: data.policyData.approvals
package env0

import rego.v1

# Parameters (data.policyData): approvals, the number of approvals a destroy needs.
destroying if input.deploymentRequest.type in {"destroy", "destroyResume"}

pending contains sprintf("a destroy needs %d approvals, it has %d", [data.policyData.approvals, count(input.approvers)]) if {
	destroying
	count(input.approvers) < data.policyData.approvals
}

allow contains sprintf("the destroy is approved by %d people", [count(input.approvers)]) if {
	destroying
	count(input.approvers) >= data.policyData.approvals
}

allow contains "not a destroy" if not destroying
