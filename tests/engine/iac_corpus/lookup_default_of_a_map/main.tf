# Issue 11, defect 5: lookup in a map(string) converts its default to the map's element type.
variable "rules" {
  type    = list(map(string))
  default = [{ rule = "x" }]
}

variable "ports" {
  type    = map(number)
  default = { http = 80 }
}

resource "terraform_data" "r" {
  input = {
    self  = lookup(var.rules[0], "self", true)
    port  = lookup(var.ports, "https", "443")
    found = lookup(var.rules[0], "rule", 1)
  }
}

output "self" {
  value = lookup(var.rules[0], "self", true)
}
