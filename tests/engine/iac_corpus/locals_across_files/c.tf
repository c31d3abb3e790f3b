locals {
  base   = 2
  prefix = "app"
}
