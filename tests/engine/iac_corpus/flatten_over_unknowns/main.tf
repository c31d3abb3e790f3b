# Issue 11, defect 4: flatten keeps the known parts of elements that hold unknowns.
resource "terraform_data" "u" {
  input = "arn"
}

locals {
  admins = flatten([[{ arn = terraform_data.u.id, key = "a_admin" }], [{ arn = "x", key = "b_admin" }]])
}

resource "terraform_data" "r" {
  input = {
    keys = [for v in local.admins : v.key]
  }
}

output "keys" {
  value = [for v in local.admins : v.key]
}
