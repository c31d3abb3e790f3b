locals {
  label   = "${local.prefix}-${local.total}%{if local.total > 5} (large)%{endif}"
  total   = local.base * 3
  servers = [{ name = "a", port = 80 }, { name = "b", port = 443 }]
  nested  = { inner = { list = [1, 2, local.base] } }
}
