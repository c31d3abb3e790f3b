# Every function that takes collections, called on collections holding sensitive values: which keep
# the marks on the elements they move, and which make their whole result sensitive.
locals {
  s      = sensitive("secret")
  list   = [local.s, "b"]
  object = { a = local.s, b = "x" }
  nested = [[local.s], ["y"]]
}

resource "terraform_data" "collections" {
  input = {
    chunklist    = chunklist(local.list, 1)
    coalesce     = coalesce("", local.s)
    coalescelist = coalescelist([], local.list)
    compact      = compact(local.list)
    concat       = concat(local.list, ["c"])
    contains     = contains(local.list, "b")
    distinct     = distinct(local.list)
    element      = element(local.list, 1)
    flatten      = flatten(local.nested)
    index        = index(local.list, "b")
    keys         = keys(local.object)
    length       = length(local.list)
    lookup       = lookup(local.object, "b", "d")
    matchkeys    = matchkeys(["x", "y"], local.list, ["b"])
    merge        = merge(local.object, { c = "z" })
    one          = one([local.s])
    reverse      = reverse(local.list)
    setunion     = setunion(["a"], local.list)
    slice        = slice(local.list, 0, 1)
    sort         = sort(local.list)
    values       = values(local.object)
    zipmap       = zipmap(["k1", "k2"], local.list)
    transpose    = transpose({ a = [local.s], b = ["c"] })
    setproduct   = setproduct(["a"], local.list)
    tolist       = tolist(local.list)
    toset        = toset(local.list)
    tomap        = tomap(local.object)
    jsonencode   = jsonencode(local.object)
    join         = join(",", local.list)
    formatlist   = formatlist("%s!", local.list)
    for_list     = [for v in local.list : v]
    splat        = local.nested[*][0]
  }
}
