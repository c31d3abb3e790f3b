package env0_test

import rego.v1

import data.env0

window := {
	"days": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
	"start_hour": 9,
	"end_hour": 17,
	"timezone": "Europe/Berlin",
	"outside": "deny",
}

# Tuesday 14 November 2023, 14:13 in Berlin (13:13 UTC).
tuesday_afternoon := 1699967600000000000

# Saturday 18 November 2023, 11:00 in Berlin.
saturday_morning := 1700301600000000000

# Tuesday 14 November 2023, 07:30 in Berlin.
tuesday_early := 1699943400000000000

test_a_weekday_afternoon_is_inside if {
	env0.allow["inside the change window"] with time.now_ns as tuesday_afternoon with data.policyData as window
}

test_a_weekend_is_denied if {
	env0.deny["outside the change window: it is Saturday 11:00 in Europe/Berlin; deployments are allowed Monday, Tuesday, Wednesday, Thursday, Friday from 9:00 to 17:00"] with time.now_ns as saturday_morning
		with data.policyData as window
}

test_before_the_window_opens_is_denied if {
	count(env0.deny) == 1 with time.now_ns as tuesday_early with data.policyData as window
}

test_outside_may_wait_for_an_approver_instead if {
	count(env0.pending) == 1 with time.now_ns as saturday_morning
		with data.policyData as object.union(window, {"outside": "pending"})
}

test_the_time_zone_decides_the_hour if {
	count(env0.allow) == 1 with time.now_ns as tuesday_early
		with data.policyData as object.union(window, {"timezone": "Asia/Tokyo", "end_hour": 24})
}
