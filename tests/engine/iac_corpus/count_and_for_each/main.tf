variable "zones" {
  default = ["z1", "z2", "z3"]
}

resource "terraform_data" "counted" {
  count = length(var.zones)
  input = "${var.zones[count.index]}-${count.index}"
}

resource "terraform_data" "by_set" {
  for_each = toset(var.zones)
  input    = "set-${each.key}-${each.value}"
}

resource "terraform_data" "by_map" {
  for_each = { small = 1, large = 3 }
  input    = { key = each.key, size = each.value * 10 }
}

resource "terraform_data" "chained" {
  for_each = terraform_data.by_map
  input    = "${each.key}:${each.value.input.size}"
}

locals {
  from_resource = { for k, r in terraform_data.by_map : k => r.input.size }
  first         = try(terraform_data.counted[0].input, "none")
  missing       = try(terraform_data.counted[10].input, "none")
}

resource "terraform_data" "via_local" {
  for_each = local.from_resource
  input    = each.value + 1
}

output "first" {
  value = local.first
}

output "missing" {
  value = local.missing
}

output "counted_inputs" {
  value = terraform_data.counted[*].input
}
