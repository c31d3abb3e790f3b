# Every function that takes collections, called on known collections holding unknown values: what
# terraform still knows of the result (element-wise evaluation) and what it leaves unknown.
resource "terraform_data" "u" {
  input = "later"
}

locals {
  u      = terraform_data.u.output # an unknown string
  b      = local.u == "x"          # an unknown bool
  list   = [local.u, "b"]
  object = { a = local.u, b = "x" }
  nested = [[{ arn = local.u, key = "k1" }], [{ arn = "y", key = "k2" }]]
}

resource "terraform_data" "collections" {
  input = {
    alltrue_false    = alltrue([false, local.b])
    alltrue_unknown  = alltrue([true, local.b])
    anytrue_true     = anytrue([true, local.b])
    anytrue_unknown  = anytrue([false, local.b])
    chunklist        = chunklist(local.list, 1)
    coalesce         = coalesce("", local.u, "z")
    coalesce_first   = coalesce("a", local.u)
    coalescelist     = coalescelist([], local.list)
    compact          = compact(local.list)
    concat           = concat(local.list, ["c"])
    contains_found   = contains(local.list, "b")
    contains_unknown = contains(local.list, "c")
    distinct         = distinct(["a", "a", local.u])
    element          = element(local.list, 1)
    flatten          = flatten(local.nested)
    flatten_keys     = [for v in flatten(local.nested) : v.key]
    index            = index(local.list, "b")
    keys             = keys(local.object)
    length           = length(local.list)
    length_object    = length(local.object)
    lookup           = lookup(local.object, "b", "d")
    matchkeys        = matchkeys(["x", "y"], local.list, ["b"])
    merge            = merge(local.object, { c = "z" })
    one              = one([local.u])
    reverse          = reverse(local.list)
    setunion         = setunion(["a"], ["b"])
    slice            = slice(local.list, 0, 1)
    sort             = sort(local.list)
    values           = values(local.object)
    zipmap           = zipmap(["k1", "k2"], local.list)
    zipmap_keys      = zipmap(local.list, ["v1", "v2"])
    transpose        = transpose({ a = [local.u], b = ["c"] })
    setproduct       = setproduct(["a"], local.list)
    for_list         = [for v in local.list : v]
    splat            = local.nested[*][0].key
  }
}

resource "terraform_data" "conversions" {
  input = {
    tolist     = tolist(local.list)
    toset      = toset(local.list)
    toset_one  = toset([local.u])
    set_length = length(toset([local.u]))
    tomap      = tomap(local.object)
    jsonencode = jsonencode(local.object)
    yamlencode = yamlencode(local.list)
    tostring   = tostring(local.u)
    format     = format("%s-%s", "a", local.u)
    formatlist = formatlist("%s!", local.list)
    join       = join(",", local.list)
    split      = split(",", local.u)
    length_str = length(local.u)
    upper      = upper(local.u)
    try        = try(local.object.a, "fallback")
    try_fails  = try(local.object.missing, "fallback")
    can        = can(local.object.a)
    sum        = sum([1, length(local.u)])
    max        = max(1, length(local.u))
    range      = range(length(local.list))
  }
}
