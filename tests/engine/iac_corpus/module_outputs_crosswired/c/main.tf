variable "x" {}

output "y" {
  value = 5
}

output "z" {
  value = var.x * 2
}
