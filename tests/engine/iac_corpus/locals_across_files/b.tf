resource "terraform_data" "summary" {
  input = {
    total   = local.total
    label   = local.label
    nested  = local.nested
    splat   = local.servers[*].name
    cond    = local.total > 10 ? "big" : "small"
    mixed   = local.total > 100 ? local.total : "none"
    math    = [7 / 2, -7 % 3, 2 * 3 + 1, 0.1 + 0.2, 10 - 20]
    logic   = [true && false, true || false, !true, 1 == 1, "a" != "b", 3 >= 3]
    nullval = null
  }
}

output "label" {
  value = local.label
}

output "servers" {
  value = local.servers
}
