"""Load a small demonstration world: a project tree, teams, one user per role, templates, policies written
in the style of env0's examples, environments, API tokens and a few deployments waiting for a verdict.

Idempotent: everything is looked up before it is created, and nothing that exists is changed, so a second
run (or a run over a world someone has since edited) changes nothing. The one exception: a template that
still names the remote repository earlier demos used gets the demo archive instead, so that the demo
never reaches the network.

Each user's token (named "demo") is stored as a hash like every token; its key is derived from the
secret key, so that every run can print it again.

The templates' files are an archive this command makes and uploads (as a template manager would): a
fresh platform evaluates its demo without fetching anything."""

import gzip
import io
import tarfile
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils.crypto import salted_hmac

from policies_app.accounts import tokens
from policies_app.choices import Role, TemplateType, TriggerName
from policies_app.deployments.lifecycle import trigger_deployment
from policies_app.models import (
    ApiToken,
    ApprovalPolicy,
    Environment,
    Project,
    ProjectMembership,
    Team,
    Template,
)
from policies_app.policies.authoring import create_policy
from policies_app.projects.iac_templates import upload_archive

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


class Command(BaseCommand):
    help = "Load demonstration data (idempotent). Users' password is 'demo-password'; API tokens are printed."

    def handle(self, *args: Any, **options: Any) -> None:
        with transaction.atomic():
            users = self.users()
            teams = self.teams(users)
            projects = self.projects()
            self.memberships(projects, teams, users)
            templates = self.templates(users["admin"])
            self.policies(projects, templates, users["admin"])
            environments = self.environments(projects, templates)
            keys = self.tokens(users)
        # Outside the transaction: each trigger commits, and its evaluation runs on commit.
        self.deployments(environments, users["bob"])
        self.report(users, keys)

    def users(self) -> dict[str, Any]:
        user_model = get_user_model()
        users = {}
        for demo in USERS:
            user, created = user_model.objects.get_or_create(
                username=demo.username,
                defaults={
                    "email": f"{demo.username}@example.com",
                    "first_name": demo.username.capitalize(),
                    "is_staff": demo.superuser,
                    "is_superuser": demo.superuser,
                },
            )
            if created:
                user.set_password(DEMO_PASSWORD)
                user.save(update_fields=["password"])
            users[demo.username] = user
        return users

    def tokens(self, users: dict[str, Any]) -> dict[str, str]:
        """Each user's demo key, or why it cannot be shown (the token was revoked and made again since)."""
        shown = {}
        for name, user in users.items():
            key = tokens.KEY_PREFIX + salted_hmac("demo-token", name, algorithm="sha256").hexdigest()
            token, _ = ApiToken.objects.get_or_create(
                user=user,
                name=DEMO_TOKEN_NAME,
                defaults={"prefix": tokens.key_prefix(key), "key_hash": tokens.key_hash(key)},
            )
            same = token.key_hash == tokens.key_hash(key)
            shown[name] = key if same else "(replaced since: make a new one on the user's page)"
        return shown

    def teams(self, users: dict[str, Any]) -> dict[str, Team]:
        teams = {}
        for name, (description, members) in TEAMS.items():
            team, _ = Team.objects.get_or_create(name=name, defaults={"description": description})
            team.members.add(*(users[member] for member in members))
            teams[name] = team
        return teams

    def projects(self) -> dict[tuple[str, ...], Project]:
        projects: dict[tuple[str, ...], Project] = {}
        for path, description in PROJECTS:
            parent = projects.get(path[:-1])
            project, _ = Project.objects.get_or_create(
                name=path[-1], parent=parent, defaults={"description": description}
            )
            projects[path] = project
        return projects

    def memberships(self, projects: dict, teams: dict[str, Team], users: dict[str, Any]) -> None:
        for path, member, role in MEMBERSHIPS:
            kind, name = member.split(":", 1)
            who = {"team": teams[name]} if kind == "team" else {"user": users[name]}
            ProjectMembership.objects.get_or_create(project=projects[path], **who, defaults={"role": role})

    def templates(self, manager: Any) -> dict[str, Template]:
        templates = {}
        for name, template_type, path in TEMPLATES:
            template, created = Template.objects.get_or_create(
                name=name, defaults={"type": template_type, "path": path, "revision": "main"}
            )
            if created or (template.repository == FORMER_REPOSITORY and not template.archive):
                template.repository = ""
                template.save(update_fields=["repository"])
                upload_archive(manager, template, SimpleUploadedFile(ARCHIVE_NAME, demo_archive()))
            templates[name] = template
        return templates

    def policies(self, projects: dict, templates: dict[str, Template], author: Any) -> None:
        for name, (description, rego_version, source, on_projects, on_templates) in POLICIES.items():
            policy = ApprovalPolicy.objects.filter(name=name).first()
            if policy is None:
                policy = create_policy(
                    name=name,
                    description=description,
                    rego_version=rego_version,
                    modules=[{"filename": "main.rego", "source": source}],
                    user=author,
                )
            for path in on_projects:
                projects[path].approval_policies.add(policy)
            for template_name in on_templates:
                templates[template_name].approval_policies.add(policy)

    def environments(self, projects: dict, templates: dict[str, Template]) -> dict[str, Environment]:
        environments = {}
        for name, (path, template_name) in ENVIRONMENTS.items():
            environment, _ = Environment.objects.get_or_create(
                name=name,
                project=projects[path],
                defaults={
                    "template": templates[template_name],
                    "environment_variables": {"AWS_REGION": "eu-west-1"},
                    "terraform_variables": {"instance_type": "t3.medium"},
                },
            )
            environments[name] = environment
        return environments

    def deployments(self, environments: dict[str, Environment], deployer: Any) -> None:
        for spec in DEPLOYMENTS:
            spec = dict(spec)
            environment = environments[spec.pop("environment")]
            deployment, created = trigger_deployment(
                environment, deployer, type="deploy", trigger_name=TriggerName.CD, **spec
            )
            if created:
                deployment.refresh_from_db()
                self.stdout.write(
                    f"Triggered deployment #{deployment.pk} of {environment}: {deployment.status}"
                )

    def report(self, users: dict[str, Any], keys: dict[str, str]) -> None:
        self.stdout.write(self.style.SUCCESS("Demo data is loaded."))
        self.stdout.write(f"Every demo user's password is {DEMO_PASSWORD!r} (unless changed since).")
        for demo in USERS:
            self.stdout.write(f"  {demo.username:<7} token {keys[demo.username]}  {demo.what}")
