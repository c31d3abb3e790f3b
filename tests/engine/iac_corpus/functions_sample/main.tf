locals {
  words = ["banana", "apple", "cherry"]
}

resource "terraform_data" "functions" {
  input = {
    join      = join(",", sort(local.words))
    format    = format("%s-%03d", "id", 7)
    lookup    = lookup({ a = 1 }, "b", 2)
    merge     = merge({ a = 1 }, { b = 2 }, { a = 3 })
    concat    = concat([1], [2, 3])
    length    = length(local.words)
    keys      = keys({ z = 1, y = 2 })
    flatten   = flatten([[1, [2]], [3]])
    replace   = replace("a-b-c", "-", "_")
    split     = split(",", "a,b")
    max       = max(3, 9, 1)
    range     = range(1, 7, 2)
    coalesce  = coalesce("", "x")
    jsonenc   = jsonencode({ b = [1, true], a = null })
    jsondec   = jsondecode("{\"k\": [1, 2.5]}")
    cidr      = cidrsubnet("10.0.0.0/16", 8, 2)
    regex     = regexall("[a-z]+", "ab12cd")
    tostr     = tostring(5)
    distinct  = distinct([1, 2, 1])
    element   = element(local.words, 4)
    zipmap    = zipmap(["a", "b"], [1, 2])
    contains  = contains(local.words, "apple")
    substr    = substr("terraform", 2, 4)
    trimspace = trimspace("  x  ")
    base64    = base64encode("hello")
    sha256    = sha256("abc")
    upper     = upper(title("hello world"))
    slice     = slice(local.words, 1, 3)
    setunion  = setunion(["a"], ["b", "a"])
    abs       = abs(-3.5)
    floor     = floor(2.7)
    template  = templatefile("${path.module}/greeting.tpl", { names = local.words })
    file      = file("greeting.tpl")
    fileexists = fileexists("${path.module}/nope.txt")
  }
}
