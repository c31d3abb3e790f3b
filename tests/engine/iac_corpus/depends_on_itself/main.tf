# A resource may name itself in depends_on: terraform drops the self-edge
# (Azure/terraform-azurerm-avm-res-network-virtualnetwork's ipam_vnet_only example does it). Anywhere
# else in the block such a reference is an error.
resource "terraform_data" "a" {
  input      = "x"
  depends_on = [terraform_data.a]
}

resource "terraform_data" "b" {
  input      = terraform_data.a.input
  depends_on = [terraform_data.a, terraform_data.b]
}

output "o" {
  value = terraform_data.b.input
}
