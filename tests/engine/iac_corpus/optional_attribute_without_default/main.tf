# Issue 21, defect B: optional(T, ) is an optional attribute without a default (a call's arguments
# may end with a comma), and so may any type constructor's.

variable "x" {
  type = object({
    a = optional(list(string), )
    b = optional(string, "b")
    c = optional(map(number), )
    d = list(string, )
  })
  default = { d = [] }
}

variable "y" {
  type    = tuple([string, number, ])
  default = ["a", 1]
}

resource "terraform_data" "x" {
  input = var.x
}

output "x" {
  value = var.x
}

output "y" {
  value = var.y
}
