variable "name" {
  type = string
}

variable "subnets" {
  type    = number
  default = 2
}

resource "terraform_data" "subnet" {
  count = var.subnets
  input = "${var.name}-subnet-${count.index}"
}

output "subnet_names" {
  value = terraform_data.subnet[*].input
}
