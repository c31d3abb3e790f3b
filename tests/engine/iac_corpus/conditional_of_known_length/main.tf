# Issue 21, defect C: a conditional whose condition is unknown is an unknown that keeps what both
# results share: a tuple's or an object's type (so its length), two collections' length bounds.

resource "terraform_data" "r" {
  input = 2
}

variable "two" {
  type    = list(string)
  default = ["a", "b"]
}

variable "other_two" {
  type    = list(string)
  default = ["c", "d"]
}

variable "three" {
  type    = list(string)
  default = ["c", "d", "e"]
}

locals {
  l             = terraform_data.r.output > 1 ? ["a"] : ["b"]
  lists         = terraform_data.r.output > 1 ? var.two : var.other_two
  lists_differ  = terraform_data.r.output > 1 ? var.two : var.three
  tuples_differ = terraform_data.r.output > 1 ? ["a"] : ["b", "c"]
  objects       = terraform_data.r.output > 1 ? { a = 1, b = 2 } : { a = 3, b = 4 }
  maps          = terraform_data.r.output > 1 ? tomap({ a = 1 }) : tomap({ b = 2 })
  ids           = { for k in ["x", "y", "z"] : k => k if length(local.l) == 1 }
  nulls         = terraform_data.r.output > 1 ? null : null

}

resource "terraform_data" "each" {
  for_each = local.ids
  input    = each.key
}

resource "terraform_data" "lengths" {
  input = {
    l             = length(local.l)
    lists         = length(local.lists)
    lists_differ  = length(local.lists_differ)
    tuples_differ = length(local.tuples_differ)
    objects       = length(local.objects)
    maps          = length(local.maps)
    l_value       = local.l
    nulls         = local.nulls

  }
}

output "length_l" {
  value = length(local.l)
}
