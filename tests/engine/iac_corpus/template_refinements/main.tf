# A template that becomes unknown is a string refined as not null, starting with the text its parts
# rendered before the first unknown one (HCL's TemplateExpr, cty's StringPrefix: a trailing letter
# is dropped, since a combining mark could yet change it; a delimiter such as "-" is kept).
# Functions' unknown results are not null (cty's refineNonNull) except where terraform says not;
# a conditional of two non-null primitives is not null; the to* functions keep nothing.
resource "terraform_data" "u" {
  input = "v"
}

locals {
  u = terraform_data.u.output
  t = "a-${local.u}"
}

resource "terraform_data" "r" {
  input = {
    not_null          = local.t != null
    is_null           = local.t == null
    chosen            = local.t == null ? "null" : "set"
    starts            = startswith(local.t, "a-")
    starts_shorter    = startswith(local.t, "a")
    starts_other      = startswith(local.t, "b-")
    starts_longer     = startswith(local.t, "a-x")
    starts_letter     = startswith("ab${local.u}", "ab")
    starts_empty      = startswith(local.u, "")
    equal_other       = local.t == "b"
    equal_prefix      = local.t == "a-"
    not_empty         = local.t != ""
    equal_number      = local.t == 3
    in_list           = [local.t] == ["b"]
    in_object         = { a = local.t } == { a = "b" }
    both_unknown      = local.t == "a-${local.u}"
    suffix_not_null   = "${local.u}-b" != null
    wrapped           = "${local.u}" != null
    if_directive      = "%{if local.u == "v"}a-%{endif}" != null
    directive_part    = startswith("a-%{if true}b-${local.u}%{endif}", "a-b-")
    for_then_unknown  = startswith("a-%{for v in ["b"]}${v}-%{endfor}${local.u}", "a-b-")
    heredoc           = startswith(<<-EOT
      x-${local.u}
    EOT
    , "x-")
    format_prefix     = startswith(format("a-%s", local.u), "a-")
    format_letter     = startswith(format("x%%-%s", local.u), "x%-")
    format_not_null   = format("%s-a", local.u) != null
    upper_not_null    = upper(local.u) != null
    lookup_maybe_null = lookup({ a = local.u }, "a") != null
    coalesce_prefix   = startswith(coalesce(local.t, "b"), "a-")
    tostring_keeps    = tostring(local.t) != null
    tolist_length     = length(tolist(local.u == "v" ? ["a"] : ["b"]))
    cond_number       = (local.u == "v" ? 1 : 2) != null
    cond_maybe_null   = (local.u == "v" ? "a" : null) != null
    cond_no_prefix    = startswith(local.u == "v" ? "ab-1" : "ab-2", "ab-")
    sensitive_starts  = startswith(sensitive(local.t), "a-")
  }
}

output "t" {
  value = local.t
}

output "starts" {
  value = startswith(local.t, "a-")
}
