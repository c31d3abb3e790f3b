variable "id" {
  type = string
}

variable "name" {
  type = string
}

resource "terraform_data" "inner" {
  input = var.id
}

output "id_upper" {
  value = upper(var.id)
}

output "name" {
  value = var.name
}
