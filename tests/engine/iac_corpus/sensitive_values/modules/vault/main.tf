variable "token" {
  type = string
}

variable "label" {
  type = string
}

output "token" {
  value     = var.token
  sensitive = true
}

# Not declared sensitive, and not an error: only root module outputs must say so.
output "token_again" {
  value = var.token
}

output "label" {
  value = upper(var.label)
}
