variable "name" {
  type = string
}

variable "size" {
  type    = number
  default = 1
}

variable "tags" {
  type    = map(string)
  default = {}
}

variable "servers" {
  type = list(object({
    name = string
    port = optional(number, 8080)
  }))
  default = []
}

variable "flag" {
  type    = bool
  default = false
}

resource "terraform_data" "vars" {
  input = {
    name    = var.name
    size    = var.size
    tags    = var.tags
    servers = var.servers
    flag    = var.flag
  }
}

output "size" {
  value = var.size
}
