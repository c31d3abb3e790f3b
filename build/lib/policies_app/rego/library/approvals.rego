# Approver helpers over input.approvers and input.deployerUser (env0's input schema). People are
# identified by e-mail, compared case-insensitively; an approver without an e-mail is never counted.
# Written in v1 syntax with `import rego.v1` so the module also loads into an engine in v0 mode.
package lib.approvals

import rego.v1

# The e-mails of the approvers who belong to the team named team_name, one per person.
in_team(team_name) := {_spelling(approver.email) |
	some approver in input.approvers
	is_string(approver.email)
	some team in approver.teams
	team.name == team_name
}

# How many distinct approvers belong to the team named team_name.
count_in_team(team_name) := count(in_team(team_name))

# The e-mails of the approvers other than the person who deployed, one per person; with no deployer
# in the input, every approver counts.
distinct_approvers_other_than_deployer := {_spelling(approver.email) |
	some approver in input.approvers
	is_string(approver.email)
	lower(approver.email) != _deployer_email
}

default _deployer_email := ""

_deployer_email := lower(input.deployerUser.email) if is_string(input.deployerUser.email)

_approver_emails := {approver.email | some approver in input.approvers; is_string(approver.email)}

# One spelling per person: the smallest of the input's spellings that differ only in case. The value
# comes from the input, not from lower(): regopy renders a lower()-made string inside quotes when a
# policy later passes it to sprintf ("approved by \"bob@x\"").
_spelling(email) := min({other | some other in _approver_emails; lower(other) == lower(email)})
