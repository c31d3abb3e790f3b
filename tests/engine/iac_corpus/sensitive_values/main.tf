locals {
  # Marks stay where they were put: the object is not sensitive, its attribute is.
  credentials = { user = "admin", password = var.password }
  pair        = ["visible", var.password]
  url         = "postgres://${var.settings.user}:${var.password}@db:${var.settings.port}"
  doubled     = [for p in var.plain : "${p}-${var.password}"]
  by_password = { for k, v in local.credentials : k => v }
  chosen      = length(var.password) > 3 ? "long" : "short"
  merged      = merge(local.credentials, { extra = 1 })
  joined      = concat(local.pair, ["tail"])
  encoded     = jsonencode(local.credentials)
  wrapped     = sensitive({ a = 1, b = [1, 2] })
  unwrapped   = nonsensitive(var.password)
}

module "vault" {
  source = "./modules/vault"
  token  = var.password
  label  = "main"
}

resource "terraform_data" "credentials" {
  input = local.credentials
}

resource "terraform_data" "pair" {
  input = local.pair
}

resource "terraform_data" "url" {
  input = local.url
}

resource "terraform_data" "mixed" {
  input = {
    doubled = local.doubled
    nested  = { deep = [1, { secret = var.settings.port }] }
    merged  = local.merged
    joined  = local.joined
    plain   = var.plain
  }
  triggers_replace = [local.chosen, module.vault.label]
}

resource "terraform_data" "whole" {
  input = local.wrapped
}

resource "terraform_data" "from_module" {
  input = [module.vault.token, module.vault.token_again]
}

resource "terraform_data" "counted" {
  count = length(var.password)
  input = count.index
}

resource "terraform_data" "per_key" {
  for_each = local.credentials
  input    = each.value
}

resource "terraform_data" "public" {
  input = local.unwrapped
}

output "checks" {
  value = {
    variable         = issensitive(var.password)
    object           = issensitive(local.credentials)
    attribute        = issensitive(local.credentials.password)
    index            = issensitive(local.credentials["password"])
    element          = issensitive(local.pair[0])
    template         = issensitive(local.url)
    for_result       = issensitive(local.doubled)
    for_element      = issensitive(local.doubled[0])
    for_object       = issensitive(local.by_password.password)
    conditional      = issensitive(local.chosen)
    comparison       = issensitive(var.password == "x")
    arithmetic       = issensitive(var.settings.port + 1)
    function         = issensitive(upper(var.password))
    length_of_object = issensitive(length(local.credentials))
    length_of_secret = issensitive(length(var.password))
    merged           = issensitive(local.merged)
    merged_plain     = issensitive(local.merged.user)
    merged_secret    = issensitive(local.merged.password)
    concat_plain     = issensitive(local.joined[2])
    concat_secret    = issensitive(local.joined[1])
    keys             = issensitive(keys(local.credentials))
    encoded          = issensitive(local.encoded)
    wrapped          = issensitive(local.wrapped)
    wrapped_member   = issensitive(local.wrapped.a)
    unwrapped        = issensitive(local.unwrapped)
    nonsensitive_obj = issensitive(nonsensitive(local.wrapped))
    module_output    = issensitive(module.vault.token)
    module_undeclared = issensitive(module.vault.token_again)
    module_label     = issensitive(module.vault.label)
    try_secret       = issensitive(try(var.password, "x"))
    can_secret       = issensitive(can(var.password))
    null_secret      = issensitive(sensitive(null))
    splat            = issensitive(local.pair[*])
    unknown          = issensitive(terraform_data.public.output)
  }
}

output "secret_url" {
  value     = local.url
  sensitive = true
}

output "credentials" {
  value     = local.credentials
  sensitive = true
}

output "revealed" {
  value = nonsensitive(local.url)
}

output "user" {
  value = local.merged.user
}
