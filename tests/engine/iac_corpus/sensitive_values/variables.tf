variable "password" {
  type      = string
  default   = "hunter2"
  sensitive = true
}

variable "settings" {
  type = object({ user = string, port = number })
  default = {
    user = "admin"
    port = 5432
  }
  sensitive = true
}

variable "plain" {
  type    = list(string)
  default = ["a", "b"]
}
