# METADATA
# custom:
#   approvals: data.policyData.count
package env0

import rego.v1

# Parameters (data.policyData): count, the number of approvals a deployment needs.
required := data.policyData.count

approvals := count(input.approvers)

pending contains sprintf("%d of the %d required approvals so far", [approvals, required]) if {
	approvals < required
}

allow contains sprintf("approved by %d people (%d required)", [approvals, required]) if {
	approvals >= required
}
