resource "terraform_data" "seed" {
  input = "seed"
}

resource "terraform_data" "empty" {}

locals {
  id       = terraform_data.seed.id
  template = "id-${local.id}"
  cond     = local.id == "" ? "empty" : "set"
  list     = [1, local.id, "x"]
  obj      = { known = 1, unknown = local.id }
  upper    = upper(local.id)
  length   = length([local.id, local.id])
}

resource "terraform_data" "uses" {
  input = {
    template = local.template
    cond     = local.cond
    list     = local.list
    obj      = local.obj
    upper    = local.upper
    length   = local.length
    output   = terraform_data.seed.output
  }
}

resource "terraform_data" "whole" {
  input = terraform_data.seed.id
}

output "list" {
  value = local.list
}

output "length" {
  value = local.length
}

output "try_unknown" {
  value = try(local.id, "z")
}
