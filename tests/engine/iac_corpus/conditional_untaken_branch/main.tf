# Issue 11, defect 1: HCL evaluates both results of a conditional but reports only the chosen one's
# errors, and none when the condition is unknown.
variable "x" {
  default = null
}

variable "label_order" {
  type    = list(string)
  default = null
  validation {
    condition     = var.label_order == null ? true : length(var.label_order) >= 2
    error_message = "Give at least two labels."
  }
}

variable "ipv6_block" {
  type    = string
  default = null
}

variable "addons" {
  type    = map(object({ version = string }))
  default = null
}

locals {
  none = []
}

resource "terraform_data" "u" {
  input = "later"
}

resource "terraform_data" "values" {
  input = {
    contains_null = var.x == null ? true : contains(["a"], var.x)
    subnet        = var.ipv6_block != null ? cidrsubnet(var.ipv6_block, 8, 1) : null
    first         = length(local.none) > 0 ? local.none[0] : "none"
    addons        = var.addons != null ? { for k, v in var.addons : k => v.version } : {}
    unknown_cond  = terraform_data.u.output == "later" ? contains(["a"], var.x) : 1
  }
}

output "contains_null" {
  value = var.x == null ? true : contains(["a"], var.x)
}

output "unknown_condition" {
  value = terraform_data.u.output == "later" ? local.none[0] : "fallback"
}
