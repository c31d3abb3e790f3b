name = "from-tfvars"
size = 2
servers = [{ name = "a" }, { name = "b", port = 9000 }]
