# Terraform's nulls have types: a variable's null string decides that a result is a string
# (terraform-aws-modules' rds-aurora: `coalesce(var.port, 5432)` is "5432"), and a null list is skipped
# by coalescelist (terraform-aws-modules' kms).
variable "port" {
  type    = string
  default = null
}

variable "config" {
  type = object({
    ids  = optional(list(string))
    zone = optional(string)
  })
  default = {}
}

variable "sources" {
  type = list(object({
    account_ids = optional(list(string))
  }))
  default = [{}]
}

resource "terraform_data" "r" {
  input = {
    coalesce     = coalesce(var.port, 5432)
    conditional  = var.port != null ? var.port : 5432
    coalescelist = coalescelist(var.config.ids, ["a"])
    attribute    = var.config.zone == null ? 1 : var.config.zone
    from_a_for   = [for s in var.sources : coalescelist(s.account_ids, ["b"])]
  }
}

variable "names" {
  type    = list(string)
  default = null
}

# toset(null) is a null set, so the empty tuple beside it becomes an empty set: for_each accepts it
# (aws-ia's ipam: `local.enabled ? toset(var.principals) : []`).
resource "terraform_data" "each" {
  for_each = var.names != null ? toset(var.names) : []
  input    = each.key
}
