# Issue 21: yamlencode of nested values (quoting, block scalars, empty collections, big numbers)
# and of values holding unknowns (wholly unknown, as terraform gives it).

resource "terraform_data" "t" {
  input = "t"
}

locals {
  nested = {
    name     = "x"
    count    = 3
    ok       = true
    none     = null
    list     = ["a", 1, false, "true", "1.5", "", "multi\nline", "with: colon", "#hash", "- dash"]
    map      = { b = { c = [{ d = "e" }] }, a = [], z = {} }
    float    = 1.5
    big      = 12345678901234567890
    neg      = -2
    quote    = "it's \"quoted\""
    star     = "*"
    tilde    = "~"
    yes      = "yes"
    nulls    = "null"
    unicode  = "caf\u00e9"
    trailing = "a "
    lead     = " a"
    tab      = "a\tb"
  }
}

resource "terraform_data" "yaml" {
  input = {
    nested        = yamlencode(local.nested)
    list_top      = yamlencode([1, [2, [3]], { a = [] }])
    scalar        = yamlencode("x")
    number        = yamlencode(1.25)
    empty_string  = yamlencode("")
    unknown       = yamlencode({ a = terraform_data.t.id })
    unknown_deep  = yamlencode({ a = [1, { b = terraform_data.t.id }] })
    unknown_whole = yamlencode(terraform_data.t.id)
    roundtrip     = yamldecode(yamlencode(local.nested))
  }
}
