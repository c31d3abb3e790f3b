# METADATA
# custom:
#   team: data.policyData.team
package env0

import rego.v1

# Parameters (data.policyData): team, the name of the team one approver must belong to.
team := data.policyData.team

team_approvers contains approver.name if {
	some approver in input.approvers
	some membership in approver.teams
	membership.name == team
}

pending contains sprintf("waiting for an approver from the team %s", [team]) if {
	count(team_approvers) == 0
}

allow contains sprintf("approved by %s of the team %s", [concat(", ", sort(team_approvers)), team]) if {
	count(team_approvers) > 0
}
