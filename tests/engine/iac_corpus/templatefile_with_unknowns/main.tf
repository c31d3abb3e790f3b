# Issue 11, defect 3: templatefile renders the template, unknown only where an unknown value lands.
resource "terraform_data" "u" {
  input = "endpoint"
}

resource "terraform_data" "r" {
  input = {
    disabled = templatefile("${path.module}/endpoint.tpl", { enabled = false, endpoint = terraform_data.u.id, name = "a" })
    enabled  = templatefile("${path.module}/endpoint.tpl", { enabled = true, endpoint = terraform_data.u.id, name = "a" })
  }
}

output "disabled" {
  value = templatefile("${path.module}/endpoint.tpl", { enabled = false, endpoint = terraform_data.u.id, name = "a" })
}
