# A conditional over two numbers with an unknown condition is an unknown within both numbers' bounds
# (HCL's ConditionalExpr), and the number itself when the bounds close on one: the common
# `count = enabled ? length(x) : 0` with x empty and `enabled` from a module not yet applied
# (cloudposse/terraform-github-repository-webhooks, its context from a label module). Comparisons
# are decided where the bounds do not overlap (cty's LessThan/GreaterThan); the length of a string
# with a known beginning is at least that beginning's; operators' unknown results are not null.
resource "terraform_data" "u" {
  input = "v"
}

locals {
  enabled = terraform_data.u.output == "v"
  names   = []
  n       = local.enabled ? 1 : 2
}

resource "terraform_data" "counted" {
  count = local.enabled && length(local.names) > 0 ? length(local.names) : 0
  input = count.index
}

resource "terraform_data" "one_or_two" {
  count = (local.enabled ? 1 : 2) > 0 ? 1 : 0
  input = "x"
}

resource "terraform_data" "r" {
  input = {
    same           = local.enabled ? 0 : 0
    fraction       = local.enabled ? 1.5 : 1.5
    at_least_zero  = local.n >= 0
    at_most_three  = local.n <= 3
    at_most_two    = local.n <= 2
    at_least_one   = local.n >= 1
    positive       = local.n > 0
    reversed       = 3 > local.n
    outside        = local.n == 3
    not_outside    = local.n != 3
    inside         = local.n == 1.5
    nested         = (local.enabled ? 1 : (local.enabled ? 2 : 3)) < 4
    negative       = (local.enabled ? -1 : 2) < 3
    after_add      = local.n + 1 > 1
    prefix_length  = length("a-${terraform_data.u.output}") > 1
    prefix_length2 = length("a-${terraform_data.u.output}") >= 2
    prefix_length3 = length("a-${terraform_data.u.output}") < 1
    equal_not_null = local.enabled != null
    not_not_null   = !local.enabled != null
    sum_not_null   = (local.n + 1) != null
  }
}

output "counted" {
  value = length(terraform_data.counted)
}
