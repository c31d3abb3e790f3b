# Issue 11, defect 6: a module outside the root module's directory reads its own files.
module "m" {
  source = "../mod"
}

output "text" {
  value = module.m.text
}
