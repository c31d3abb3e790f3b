package env0

import rego.v1

# Parameters (data.policyData): days, start_hour and end_hour (the window, in timezone), and what a
# deployment outside it gets (outside: deny or pending).
now := time.now_ns()

weekday := time.weekday([now, data.policyData.timezone])

hour := time.clock([now, data.policyData.timezone])[0]

inside if {
	weekday in data.policyData.days
	hour >= data.policyData.start_hour
	hour < data.policyData.end_hour
}

outside_message := sprintf(
	"outside the change window: it is %s %d:00 in %s; deployments are allowed %s from %d:00 to %d:00",
	[weekday, hour, data.policyData.timezone, concat(", ", data.policyData.days), data.policyData.start_hour, data.policyData.end_hour],
)

deny contains outside_message if {
	not inside
	data.policyData.outside == "deny"
}

pending contains outside_message if {
	not inside
	data.policyData.outside == "pending"
}

allow contains "inside the change window" if inside
