variable "settings" {
  type = object({
    name    = string
    replicas = optional(number, 1)
    extra   = optional(map(string), {})
  })
  default = { name = "svc" }
}

locals {
  maybe_null = null
  one        = "single"
  config     = { a = { b = [10, 20] } }
}

resource "terraform_data" "edge" {
  input = {
    splat_null   = local.maybe_null[*]
    splat_single = local.one[*]
    splat_list   = [{ id = 1 }, { id = 2 }][*].id
    legacy_splat = [{ id = 3 }].*.id
    index_chain  = local.config.a.b[1]
    index_string = local.config["a"]["b"][0]
    try_missing  = try(local.config.a.c, "fallback")
    can_missing  = can(local.config.a.c)
    can_present  = can(local.config.a.b)
    path         = [path.module, path.root, terraform.workspace]
    cond_object  = true ? { a = 1 } : { a = 2 }
    cond_mixed   = false ? 5 : "five"
    settings     = var.settings
    modulo       = [10 % 3, -10 % 3, 5.5 % 2]
    compare      = ["a" == "a", 1 == 1.0, [1] == [1], { a = 1 } == { a = 1 }]
    nested_for   = { for k, v in { x = [1, 2], y = [3] } : k => [for n in v : n * 2] }
    grouped      = { for s in ["apple", "avocado", "banana"] : substr(s, 0, 1) => s... }
    filtered_map = { for k, v in { a = 1, b = 2, c = 3 } : k => v if v != 2 }
    tolist_set   = tolist(toset(["b", "a"]))
    tomap        = tomap({ a = 1, b = "x" })
    numbers      = [1e3, 1.5e-1, 0.5 * 4, 2 / 8]
    unary        = [-(-3), !false]
    precision    = [1 / 3, 2 / 3, 10 / 3, 0.1 * 3, 1.1 * 1.1, 100 / 7, 1e21, 5 % 0.3, 9007199254740993, "${1 / 3}"]
    heredoc      = <<EOT
line ${local.one}
%{ if local.maybe_null == null }was null%{ else }not null%{ endif }
EOT
  }
}
