variable "token" {
  sensitive = true
}

resource "terraform_data" "u" {
  input = "x"
}

output "token" {
  value = var.token
}

output "declared" {
  value     = "x"
  sensitive = true
}

output "declared_unknown" {
  value     = terraform_data.u.output
  sensitive = true
}
