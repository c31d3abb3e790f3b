# A conditional's result carries the marks of its condition and of both results, whichever is chosen
# (terraform-aws-modules' lambda: `var.build_in_docker ? sensitive(x) : x`); with an unknown condition,
# two null results still make null.
variable "in_docker" {
  default = false
}

resource "terraform_data" "u" {
  input = "plan"
}

resource "terraform_data" "r" {
  input = {
    content   = var.in_docker ? sensitive(terraform_data.u.output) : terraform_data.u.output
    known     = var.in_docker ? sensitive("a") : "b"
    null_both = terraform_data.u.output == "x" ? null : null
    inner     = var.in_docker ? ["a"] : [sensitive("b")]
  }
}
