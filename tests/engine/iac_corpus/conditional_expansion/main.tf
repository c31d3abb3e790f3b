variable "create" {
  type    = bool
  default = true
}

variable "services" {
  type = map(object({
    replicas = optional(number, 1)
    ports    = optional(list(number), [80])
  }))
  default = {
    api = { replicas = 2, ports = [80, 443] }
    web = {}
  }
}

resource "terraform_data" "maybe" {
  count = var.create ? 1 : 0
  input = "created"
}

resource "terraform_data" "never" {
  count = var.create ? 0 : 1
  input = "not created"
}

module "svc" {
  source   = "./modules/svc"
  for_each = var.services
  name     = each.key
  replicas = each.value.replicas
  ports    = each.value.ports
}

module "none" {
  source   = "./modules/svc"
  count    = 0
  name     = "none"
  replicas = 1
  ports    = []
}

locals {
  maybe_input = one(terraform_data.maybe[*].input)
  never_input = try(terraform_data.never[0].input, null)
  all_ports   = flatten([for name, m in module.svc : m.ports])
  replicas    = { for name, m in module.svc : name => length(m.instances) }
}

resource "terraform_data" "summary" {
  input = {
    maybe    = local.maybe_input
    never    = local.never_input
    ports    = local.all_ports
    replicas = local.replicas
    none     = module.none[*].name
  }
}

output "instances" {
  value = { for name, m in module.svc : name => m.instances }
}
