module "sizes" {
  source = "./modules/sizes"
  base   = 2
}

module "net" {
  source = "./modules/net"
  count  = module.sizes.count
  name   = "net${count.index}"
}

module "named" {
  source   = "./modules/net"
  for_each = module.sizes.names
  name     = each.value
}

resource "terraform_data" "root" {
  count = module.sizes.count
  input = module.net[count.index].subnet_names
}

output "subnets" {
  value = module.net[*].subnet_names
}

output "named" {
  value = { for k, m in module.named : k => m.subnet_names }
}
