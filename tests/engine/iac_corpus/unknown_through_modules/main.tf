resource "terraform_data" "seed" {
  input = "seed"
}

module "child" {
  source = "./child"
  id     = terraform_data.seed.id
  name   = "fixed"
}

resource "terraform_data" "user" {
  input = {
    id   = module.child.id_upper
    name = module.child.name
    both = "${module.child.name}/${module.child.id_upper}"
  }
}

output "name" {
  value = module.child.name
}

output "id" {
  value = module.child.id_upper
}

output "mixed" {
  value = [module.child.name, module.child.id_upper]
}
