# A child module's `sensitive = true` output is not sensitive for its caller during the plan (terraform
# 1.11): only marks the value carries itself travel (terraform-aws-modules' redshift re-exports the
# module's sensitive master username from an example root without declaring it).
module "child" {
  source = "./child"
  token  = "t"
}

resource "terraform_data" "r" {
  input = {
    declared_is_sensitive = issensitive(module.child.declared)
    token_is_sensitive    = issensitive(module.child.token)
    declared              = module.child.declared
  }
}

output "token" {
  value = nonsensitive(module.child.token)
}

output "declared" {
  value = module.child.declared
}

output "declared_unknown" {
  value = module.child.declared_unknown
}
