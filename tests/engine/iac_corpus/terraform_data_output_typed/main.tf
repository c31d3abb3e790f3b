# terraform_data.output is an unknown of its input's type (the built-in provider plans it so): a string
# output is not equal to a number, the length and keys of an object output are known.
resource "terraform_data" "s" { input = "v" }
resource "terraform_data" "o" { input = { a = 1, b = "x" } }
resource "terraform_data" "l" { input = ["a", "b"] }
output "eq_number" { value = terraform_data.s.output == 3 }
output "eq_string" { value = terraform_data.s.output == "w" }
output "not_null" { value = terraform_data.s.output != null }
output "len_object" { value = length(terraform_data.o.output) }
output "len_tuple" { value = length(terraform_data.l.output) }
output "keys_object" { value = keys(terraform_data.o.output) }
output "attr" { value = terraform_data.o.output.a }
