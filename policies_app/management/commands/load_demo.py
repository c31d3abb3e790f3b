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

from typing import Any

from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils.crypto import salted_hmac

from policies_app.accounts import tokens
from policies_app.choices import TriggerName
from policies_app.deployments.comments import post_comment
from policies_app.deployments.lifecycle import trigger_deployment
from policies_app.management.demo_world import (
    ARCHIVE_NAME,
    DEMO_PASSWORD,
    DEMO_TOKEN_NAME,
    DEPLOYMENTS,
    ENVIRONMENTS,
    FORMER_REPOSITORY,
    MEMBERSHIPS,
    POLICIES,
    PROJECTS,
    TEAMS,
    TEMPLATES,
    USERS,
    demo_archive,
)
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
                defaults={
                    "prefix": tokens.key_prefix(key),
                    "key_hash": tokens.key_hash(key),
                    "expires_at": tokens.expiry(None),
                },
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
            note = spec.pop("comment", None)
            deployment, created = trigger_deployment(
                environment, deployer, type="deploy", trigger_name=TriggerName.CD, **spec
            )
            if created:
                if note:
                    post_comment(deployer, deployment, note)
                deployment.refresh_from_db()
                self.stdout.write(
                    f"Triggered deployment #{deployment.pk} of {environment}: {deployment.status}"
                )

    def report(self, users: dict[str, Any], keys: dict[str, str]) -> None:
        self.stdout.write(self.style.SUCCESS("Demo data is loaded."))
        self.stdout.write(f"Every demo user's password is {DEMO_PASSWORD!r} (unless changed since).")
        for demo in USERS:
            self.stdout.write(f"  {demo.username:<7} token {keys[demo.username]}  {demo.what}")
