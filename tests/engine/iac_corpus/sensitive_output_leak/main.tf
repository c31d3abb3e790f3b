variable "password" {
  type      = string
  default   = "hunter2"
  sensitive = true
}

locals {
  credentials = { user = "admin", password = var.password }
}

output "user" {
  value = local.credentials.user
}

# The secret is nested inside the object: still an error without sensitive = true.
output "leak" {
  value = local.credentials
}
