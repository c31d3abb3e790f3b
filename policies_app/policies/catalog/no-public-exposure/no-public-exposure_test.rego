package env0_test

import rego.v1

import data.env0

settings := {"check_buckets": true, "check_ingress": true, "allowed_ports": [443]}

plan(type, after) := {"plan": {"resource_changes": [{
	"address": sprintf("%s.this", [type]),
	"type": type,
	"change": {"actions": ["create"], "before": null, "after": after},
}]}}

test_a_public_read_bucket_is_denied if {
	env0.deny["aws_s3_bucket_acl.this would make a storage bucket public"] with input as plan("aws_s3_bucket_acl", {"acl": "public-read"})
		with data.policyData as settings
}

test_a_private_bucket_is_allowed if {
	env0.allow["nothing is exposed to the internet"] with input as plan("aws_s3_bucket_acl", {"acl": "private"})
		with data.policyData as settings
}

test_an_unblocked_public_access_block_is_denied if {
	count(env0.deny) == 1 with input as plan("aws_s3_bucket_public_access_block", {"block_public_acls": true, "block_public_policy": false, "ignore_public_acls": true, "restrict_public_buckets": true})
		with data.policyData as settings
}

test_a_bucket_readable_by_all_users_is_denied if {
	count(env0.deny) == 1 with input as plan("google_storage_bucket_iam_member", {"member": "allUsers", "role": "roles/storage.objectViewer"})
		with data.policyData as settings
}

test_ssh_open_to_the_world_is_denied if {
	env0.deny["aws_security_group.this would open ingress to anywhere"] with input as plan("aws_security_group", {"ingress": [{"from_port": 22, "to_port": 22, "cidr_blocks": ["0.0.0.0/0"]}]})
		with data.policyData as settings
}

test_an_allowed_port_may_be_open_to_the_world if {
	count(env0.deny) == 0 with input as plan("aws_security_group_rule", {"type": "ingress", "from_port": 443, "to_port": 443, "cidr_blocks": ["0.0.0.0/0"]})
		with data.policyData as settings
}

test_ipv6_anywhere_is_denied if {
	count(env0.deny) == 1 with input as plan("aws_vpc_security_group_ingress_rule", {"from_port": 22, "to_port": 22, "cidr_ipv6": "::/0"})
		with data.policyData as settings
}

test_ingress_from_a_private_range_is_allowed if {
	env0.allow["nothing is exposed to the internet"] with input as plan("google_compute_firewall", {"source_ranges": ["10.0.0.0/8"]})
		with data.policyData as settings
}

test_open_ingress_is_allowed_when_not_checked if {
	count(env0.deny) == 0 with input as plan("aws_security_group", {"ingress": [{"from_port": 22, "to_port": 22, "cidr_blocks": ["0.0.0.0/0"]}]})
		with data.policyData as object.union(settings, {"check_ingress": false})
}
