variable "base" {
  type = number
}

output "count" {
  value = var.base
}

output "names" {
  value = { a = "alpha", b = "beta" }
}
