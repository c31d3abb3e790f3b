# Issue 11, defect 2: a comparison with null is known as soon as the other side is known as a whole,
# even when it holds unknowns (the `var.x != null ? [var.x] : []` idiom of optional blocks).
resource "terraform_data" "u" {
  input = "bucket"
}

locals {
  logs = { bucket = terraform_data.u.id, enabled = true }
}

resource "terraform_data" "r" {
  input = {
    blocks      = local.logs != null ? [local.logs] : []
    is_null     = local.logs == null
    list        = [terraform_data.u.id] != null
    lengths     = [terraform_data.u.id, 1] == [terraform_data.u.id, 1, 2]
    other_keys  = { a = terraform_data.u.id } == { b = 1 }
    other_value = [terraform_data.u.id, "x"] == ["y", "z"]
    second_only = ["x", terraform_data.u.id] == ["y", "z"]
  }
}

output "blocks" {
  value = local.logs != null ? [local.logs] : []
}

# Equal where both are known, unknown where one is not: unknown. (Where the known attributes differ,
# terraform answers false or unknown depending on the order it happens to visit the attributes in.)
output "same_shape" {
  value = local.logs == { bucket = "x", enabled = true }
}
