package env0

import rego.v1

# Parameters (data.policyData): check_buckets, check_ingress, allowed_ports (ports that may be open
# to anywhere when a rule opens exactly that port).
anywhere := {"0.0.0.0/0", "::/0"}

public_acls := {"public-read", "public-read-write"}

public_members := {"allUsers", "allAuthenticatedUsers"}

# The resource types each check reads (plans hold thousands of changes: the type is checked first).
bucket_types := {
	"aws_s3_bucket",
	"aws_s3_bucket_acl",
	"aws_s3_bucket_public_access_block",
	"google_storage_bucket_iam_member",
	"google_storage_bucket_iam_binding",
}

ingress_types := {
	"aws_security_group",
	"aws_security_group_rule",
	"aws_vpc_security_group_ingress_rule",
	"google_compute_firewall",
}

writes(change) if {
	some action in change.change.actions
	action in {"create", "update"}
	is_object(change.change.after)
}

port_allowed(from, to) if {
	from == to
	from in data.policyData.allowed_ports
}

public_bucket(change) if {
	change.type in {"aws_s3_bucket", "aws_s3_bucket_acl"}
	change.change.after.acl in public_acls
}

public_bucket(change) if {
	change.type == "aws_s3_bucket_public_access_block"
	some setting in ["block_public_acls", "block_public_policy", "ignore_public_acls", "restrict_public_buckets"]
	change.change.after[setting] == false
}

public_bucket(change) if {
	change.type == "google_storage_bucket_iam_member"
	change.change.after.member in public_members
}

public_bucket(change) if {
	change.type == "google_storage_bucket_iam_binding"
	some member in change.change.after.members
	member in public_members
}

open_ingress(change) if {
	change.type == "aws_security_group"
	some rule in change.change.after.ingress
	some cidr in array.concat(object.get(rule, "cidr_blocks", []), object.get(rule, "ipv6_cidr_blocks", []))
	cidr in anywhere
	not port_allowed(rule.from_port, rule.to_port)
}

open_ingress(change) if {
	change.type == "aws_security_group_rule"
	change.change.after.type == "ingress"
	some cidr in array.concat(object.get(change.change.after, "cidr_blocks", []), object.get(change.change.after, "ipv6_cidr_blocks", []))
	cidr in anywhere
	not port_allowed(change.change.after.from_port, change.change.after.to_port)
}

open_ingress(change) if {
	change.type == "aws_vpc_security_group_ingress_rule"
	some key in ["cidr_ipv4", "cidr_ipv6"]
	change.change.after[key] in anywhere
	not port_allowed(change.change.after.from_port, change.change.after.to_port)
}

open_ingress(change) if {
	change.type == "google_compute_firewall"
	object.get(change.change.after, "direction", "INGRESS") == "INGRESS"
	some cidr in change.change.after.source_ranges
	cidr in anywhere
}

public_buckets contains change.address if {
	data.policyData.check_buckets
	some change in input.plan.resource_changes
	change.type in bucket_types
	writes(change)
	public_bucket(change)
}

open_ingresses contains change.address if {
	data.policyData.check_ingress
	some change in input.plan.resource_changes
	change.type in ingress_types
	writes(change)
	open_ingress(change)
}

deny contains sprintf("%s would make a storage bucket public", [address]) if some address in public_buckets

deny contains sprintf("%s would open ingress to anywhere", [address]) if some address in open_ingresses

allow contains "nothing is exposed to the internet" if {
	count(public_buckets) == 0
	count(open_ingresses) == 0
}
