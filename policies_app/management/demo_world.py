"""The demonstration world ``manage.py load_demo`` loads: its users, teams, projects, templates (an
archive of Terraform files made here, so the demo reads no remote repository), policies written in the
style of env0's examples, environments and the deployments it triggers. Data only; the command creates it."""

import gzip
import io
import tarfile
from dataclasses import dataclass
from typing import Any

from policies_app.choices import Role, TemplateType

DEMO_PASSWORD = "demo-password"
DEMO_TOKEN_NAME = "demo"


@dataclass(frozen=True)
class DemoUser:
    username: str
    what: str
    superuser: bool = False


USERS = [
    DemoUser("admin", "superuser, administers everything", superuser=True),
    DemoUser("alice", "approver (approvers team) on Platform and below"),
    DemoUser("bob", "deployer (deployers team) on Platform and below"),
    DemoUser("victor", "viewer on Platform and below"),
    DemoUser("sam", "approver from the security team"),
]
TEAMS = {
    "approvers team": ("People who approve production changes.", ["alice"]),
    "security team": ("Approves anything that deletes resources.", ["sam"]),
    "deployers team": ("People who run deployments.", ["bob"]),
}
# (project path, team or user, role); given on the root, so inherited by every sub-project.
MEMBERSHIPS = [
    (("Platform",), "team:approvers team", Role.APPROVER),
    (("Platform",), "team:security team", Role.APPROVER),
    (("Platform",), "team:deployers team", Role.DEPLOYER),
    (("Platform",), "user:victor", Role.VIEWER),
]
PROJECTS = [
    (("Platform",), "Shared infrastructure; its policies apply to every project below."),
    (("Platform", "Payments"), "Payment services."),
    (("Platform", "Payments", "Payments EU"), "Payment services hosted in the EU."),
    (("Platform", "Data"), "Data platform."),
]
TEMPLATES = [
    ("network-terraform", TemplateType.TERRAFORM, "network"),
    ("payments-terragrunt", TemplateType.TERRAGRUNT, "live/payments"),
    ("services-k8s", TemplateType.K8S, "k8s/services"),
]
# What earlier demos named as the templates' repository (a public Git host): replaced by the archive.
FORMER_REPOSITORY = "https://github.com/example/infrastructure"
ARCHIVE_NAME = "demo-infrastructure.tar.gz"
# The files of every demo template, one folder per template path.
ARCHIVE_FILES = {
    "network/main.tf": """variable "instance_type" {
  type    = string
  default = "t3.micro"
}

resource "aws_s3_bucket" "reports" {
  bucket = "payments-eu-reports"
}

resource "aws_instance" "legacy" {
  ami           = "ami-0123456789abcdef0"
  instance_type = var.instance_type
}

output "reports_bucket" {
  value = aws_s3_bucket.reports.bucket
}
""",
    "live/payments/terragrunt.hcl": """terraform {
  source = "../../network"
}

inputs = {
  instance_type = "t3.small"
}
""",
    "k8s/services/deployment.yaml": """apiVersion: apps/v1
kind: Deployment
metadata:
  name: reports
spec:
  replicas: 2
  selector:
    matchLabels: {app: reports}
  template:
    metadata:
      labels: {app: reports}
    spec:
      containers:
        - name: reports
          image: registry.example.com/reports:1.0
""",
}


def demo_archive() -> bytes:
    """The demo templates' files as a .tar.gz, the same bytes at every run (no timestamps)."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as compressed:
        with tarfile.open(fileobj=compressed, mode="w") as archive:
            for name, text in sorted(ARCHIVE_FILES.items()):
                content = text.encode()
                member = tarfile.TarInfo(name)
                member.size, member.mode, member.mtime = len(content), 0o644, 0
                archive.addfile(member, io.BytesIO(content))
    return buffer.getvalue()


TWO_APPROVERS = """package env0

# Four eyes on every change: two different people must approve.
pending contains msg if {
	count(input.approvers) < 2
	msg := sprintf("Needs two approvals, has %d", [count(input.approvers)])
}

allow contains "Approved by two people" if {
	count(input.approvers) >= 2
}
"""

SECURITY_FOR_DELETES = """package env0

# Deleting resources can lose data: someone from the security team must agree.
deleted contains change.address if {
	some change in input.plan.resource_changes
	"delete" in change.change.actions
}

security_approved if {
	some approver in input.approvers
	some team in approver.teams
	team.name == "security team"
}

pending contains msg if {
	count(deleted) > 0
	not security_approved
	msg := sprintf("Deletes %s: needs an approver from the security team", [concat(", ", sort(deleted))])
}
"""

COST_LIMIT = """package env0

# Budget guard: a change that raises the monthly bill by more than 100 is refused outright.
deny contains msg if {
	input.costEstimation.monthlyCostDiff > 100
	msg := sprintf("Monthly cost would rise by %v, over the limit of 100", [input.costEstimation.monthlyCostDiff])
}
"""

MAIN_BRANCH_ONLY = """package env0

# Only reviewed code is deployed: the main branch, nothing else.
deny contains msg if {
	revision := input.deploymentRequest.revision
	revision != "main"
	msg := sprintf("Only the main branch may be deployed, not %q", [revision])
}
"""

WARN_ON_DESTROY_V0 = """package env0

# Written for OPA before 1.0 (Rego v0): no `if`, no `contains`.
warn["Destroying this environment removes every resource in it"] {
	input.deploymentRequest.type == "destroy"
}
"""

# name -> (description, rego version, source, attached to projects, attached to templates)
POLICIES = {
    "require-two-approvers": (
        "Every deployment waits for two approvals.",
        "v1",
        TWO_APPROVERS,
        [("Platform",)],
        [],
    ),
    "security-approves-deletes": (
        "A plan that deletes a resource waits for an approver from the security team.",
        "v1",
        SECURITY_FOR_DELETES,
        [],
        ["network-terraform", "payments-terragrunt"],
    ),
    "monthly-cost-limit": (
        "Deny a monthly cost increase over 100.",
        "v1",
        COST_LIMIT,
        [("Platform",)],
        [],
    ),
    "main-branch-only": (
        "Deny deploying any revision other than main.",
        "v1",
        MAIN_BRANCH_ONLY,
        [],
        ["network-terraform"],
    ),
    "warn-on-destroy": (
        "Warn when an environment is destroyed (Rego v0 syntax).",
        "v0",
        WARN_ON_DESTROY_V0,
        [("Platform", "Data")],
        ["services-k8s"],
    ),
}

# name -> (project path, template)
ENVIRONMENTS = {
    "payments-eu-prod": (("Platform", "Payments", "Payments EU"), "network-terraform"),
    "payments-staging": (("Platform", "Payments"), "payments-terragrunt"),
    "data-services": (("Platform", "Data"), "services-k8s"),
}


def demo_plan(deleting: str) -> dict[str, Any]:
    """A small `terraform show -json` plan that creates a bucket and deletes a resource."""

    def change(address: str, actions: list[str], before: Any, after: Any) -> dict[str, Any]:
        kind, name = address.split(".", 1)
        return {
            "address": address,
            "mode": "managed",
            "type": kind,
            "name": name,
            "provider_name": "registry.terraform.io/hashicorp/aws",
            "change": {"actions": actions, "before": before, "after": after},
        }

    return {
        "format_version": "1.2",
        "terraform_version": "1.11.4",
        "resource_changes": [
            change("aws_s3_bucket.reports", ["create"], None, {"bucket": "payments-eu-reports"}),
            change(deleting, ["delete"], {"id": "legacy-1"}, None),
        ],
    }


# idempotency key -> what to trigger
DEPLOYMENTS = [
    {
        "idempotency_key": "demo-pending-deletes",
        "environment": "payments-eu-prod",
        "revision": "main",
        "plan": demo_plan("aws_instance.legacy"),
        "total_monthly_cost": 812.40,
        "monthly_cost_diff": 42.50,
        # The deployer's note to the approvers, posted on the deployment's thread when it is created.
        "comment": "aws_instance.legacy goes: its traffic moved to the new cluster last week (change CHG-1042).",
    },
    {
        "idempotency_key": "demo-over-budget",
        # Another environment: a newer deployment of payments-eu-prod would supersede the pending one.
        "environment": "payments-staging",
        "revision": "main",
        "plan": demo_plan("aws_db_instance.old"),
        "total_monthly_cost": 1200.00,
        "monthly_cost_diff": 260.00,
    },
    {
        "idempotency_key": "demo-data-services",
        "environment": "data-services",
        "revision": "main",
        "plan": None,
        "total_monthly_cost": None,
        "monthly_cost_diff": None,
    },
]
