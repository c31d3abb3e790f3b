# Issue 21, defect A: functions taking several arguments (coalesce) and conditionals unify their
# types as cty's convert.UnifyUnsafe does: an object beside an empty map is the object; objects as
# maps, tuples as lists, strings absorbing numbers.

resource "terraform_data" "u" {
  input = "later"
}

variable "names" {
  type    = map(string)
  default = { a = "x" }
}

locals {
  rules = coalesce({ a = { p = 1 }, b = { d = true } }, tomap({}))
}

resource "terraform_data" "unified" {
  input = {
    objects_beside_empty_map = coalesce({ a = { p = 1 }, b = { d = true } }, tomap({}))
    empty_map_first          = coalesce(tomap({}), { a = "x" })
    object_beside_map        = coalesce({ a = 1 }, var.names)
    number_beside_string     = coalesce(1, "b")
    null_then_list           = coalesce(null, ["a", 1])
    tuples_same_length       = coalesce(["a", 1], [true, "b"])
    tuples_as_list           = coalesce(["a"], ["b", "c"])
    objects_same_names       = coalesce({ a = 1 }, { a = "x" })
    rule_keys                = keys(local.rules)
    cond_objects             = terraform_data.u.output == "x" ? { a = 1 } : { a = "y" }
    cond_chosen_object       = true ? { a = 1 } : { a = "y" }
    cond_chosen_map          = true ? { a = 1 } : var.names
    cond_tuples              = true ? [1, "a"] : ["b", "c", "d"]
  }
}

resource "terraform_data" "per_rule" {
  for_each = local.rules
  input    = each.value
}

output "rules" {
  value = local.rules
}
