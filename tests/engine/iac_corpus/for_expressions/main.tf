locals {
  users = {
    carol = { team = "ops", admin = true }
    alice = { team = "dev", admin = false }
    bob   = { team = "dev", admin = true }
  }
  names       = [for name, u in local.users : name]
  admins      = [for name, u in local.users : upper(name) if u.admin]
  by_team     = { for name, u in local.users : u.team => name... }
  indexed     = { for i, v in ["x", "y", "z"] : v => i }
  from_set    = [for s in toset(["b", "a", "c", "a"]) : "${s}!"]
  nested      = [for t in ["p", "q"] : [for n in [1, 2] : "${t}${n}"]]
  template    = <<EOT
%{ for name, u in local.users ~}
${name}:${u.team}
%{ endfor ~}
EOT
  flushed = <<-EOT
    a
      b
    EOT
  strip       = "a  %{~ if true ~}  b  %{~ endif ~}  c"
}

resource "terraform_data" "for" {
  input = {
    names    = local.names
    admins   = local.admins
    by_team  = local.by_team
    indexed  = local.indexed
    from_set = local.from_set
    nested   = local.nested
    template = local.template
    flushed = local.flushed
    strip    = local.strip
  }
}

output "by_team" {
  value = local.by_team
}
