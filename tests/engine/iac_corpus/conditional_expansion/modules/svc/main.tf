variable "name" {
  type = string
}

variable "replicas" {
  type = number
}

variable "ports" {
  type = list(number)
}

resource "terraform_data" "instance" {
  for_each = { for i in range(var.replicas) : "${var.name}-${i}" => i }
  input = {
    index = each.value
    ports = [for p in var.ports : "${each.key}:${p}"]
  }
}

output "name" {
  value = var.name
}

output "ports" {
  value = var.ports
}

output "instances" {
  value = [for k, r in terraform_data.instance : r.input.ports]
}
