resource "terraform_data" "greeting" {
  input = file("${path.module}/greeting.txt")
}

output "text" {
  value = trimspace(file("${path.module}/greeting.txt"))
}
