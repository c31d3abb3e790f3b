# HCL accepts spaces after a heredoc's closing marker (Azure verified modules write "DESCRIPTION  ").
variable "key" {
  type        = string
  default     = null
  description = <<DESCRIPTION
The key.
DESCRIPTION  
}

variable "names" {
  default = ["a"]
  description = <<-EOT
    Names.
    EOT	
}

resource "terraform_data" "r" {
  input = {
    key   = var.key
    names = var.names
    text  = <<-EOT
      one
    EOT  
  }
}
