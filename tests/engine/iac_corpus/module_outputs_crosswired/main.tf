# Each module's input comes from the other's output that does not depend on that input: no cycle.
module "a" {
  source = "./c"
  x      = module.b.y
}

module "b" {
  source = "./c"
  x      = module.a.y
}

# A module fed by one of its own outputs that does not depend on the input.
module "m" {
  source = "./c"
  x      = module.m.y
}

module "k" {
  source = "./c"
  count  = 2
  x      = module.a.z + count.index
}

resource "terraform_data" "r" {
  input = [module.a.z, module.b.z, module.m.z, module.k[1].z, module.k[0].y]
}

output "za" {
  value = module.a.z
}

output "zb" {
  value = module.b.z
}

output "zm" {
  value = module.m.z
}

output "zk" {
  value = module.k[*].z
}

output "whole" {
  value = module.b
}
