# Values where True == 1 == 1.0 in Python would hide a difference from terraform.
variable "flag" {
  type    = bool
  default = true
}

variable "n" {
  type    = number
  default = 2.0
}

variable "mixed" {
  type    = map(string)
  default = { a = true, b = 1, c = 1.50 }
}

locals {
  values = {
    whole_float   = 1.0
    halves        = 5 / 2
    sum_to_whole  = sum([1.5, 1.5])
    tenth         = 0.1 + 0.2
    exponent      = 2e3
    max_mixed     = max(1, 2.0)
    cond_unify    = var.flag ? 1 : "a"
    cond_number   = var.flag ? 1 : 0
    bool_list     = [true, false, 1 == 1]
    tonumber_s    = tonumber("1.0")
    tobool_s      = tobool("true")
    jsondecoded   = jsondecode("[1.0, true, 2.5]")
    parsed        = parseint("10", 2)
    floored       = floor(2.5)
    n             = var.n
    flag          = var.flag
    mixed         = var.mixed
    tostring_bool = tostring(true)
    pow           = pow(2, 0.5)
    mod           = 7.5 % 2
    neg           = -0
    infinity_str  = tostring(1 / 0)
    core_upper    = core::upper("x")
    modulo_zero   = 7 % 0
  }
}

resource "terraform_data" "numbers" {
  input = local.values
}

output "values" {
  value = local.values
}

output "bools" {
  value = [var.flag, !var.flag, var.n == 2]
}
