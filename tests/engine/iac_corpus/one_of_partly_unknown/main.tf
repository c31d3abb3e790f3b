# Issue 21, defect D: one() of a known collection is its element with only the unknown parts
# unknown; only an unknown collection (or a set whose unknowns may merge) makes it wholly unknown.

resource "terraform_data" "t" {
  input = "t"
}

resource "terraform_data" "one" {
  input = {
    object  = one([{ a = 1, b = terraform_data.t.id }])
    list    = one([[1, terraform_data.t.id]])
    set     = one(toset([terraform_data.t.id]))
    empty   = one([])
    wrapped = one([terraform_data.t.id])
  }
}

output "D" {
  value = one([{ a = 1, b = terraform_data.t.id }])
}
