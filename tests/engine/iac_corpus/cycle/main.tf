locals {
  a = local.b
  b = local.c
  c = local.a
}

resource "terraform_data" "x" {
  input = local.a
}
