"""Make a project's service account (or reuse it) and a token for it; print the token's key (shown once)."""

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from policies_app.accounts import service_accounts
from policies_app.errors import DomainError
from policies_app.models import Project, ServiceAccount


class Command(BaseCommand):
    help = (
        "Create service account NAME on --project (if it does not exist) and a token for it, scoped to "
        "--capabilities and --scope; print its key (e.g. for a pipeline's PLATFORM_TOKEN)."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("name", help="lower-case letters, digits and dashes (e.g. deploy-pipeline)")
        parser.add_argument("--project", required=True, help="the owning project's id or name")
        parser.add_argument("--by", required=True, help="username of an admin of the project (audited)")
        parser.add_argument("--capabilities", default="read,deploy", help="comma-separated: read, deploy")
        parser.add_argument("--scope", default=None, help="id of a sub-project the token acts in")
        parser.add_argument(
            "--days", type=int, default=None, help="lifetime (default API_TOKEN_DEFAULT_DAYS)"
        )

    def handle(self, *args: Any, name: str, project: str, by: str, **options: Any) -> None:
        admin = get_user_model().objects.filter(username=by).first()
        if admin is None:
            raise CommandError(f"No user is named {by!r}.")
        owner = self.project(project)
        scope = self.project(options["scope"]) if options["scope"] else None
        try:
            account = ServiceAccount.objects.filter(project=owner, name=name).first()
            if account is None:
                account = service_accounts.create_service_account(admin, owner, name)
            _, key = service_accounts.create_account_token(
                admin,
                account,
                capabilities=[c.strip() for c in options["capabilities"].split(",") if c.strip()],
                project=scope,
                expires_in_days=options["days"],
            )
        except DomainError as refusal:
            raise CommandError(refusal.message) from None
        self.stdout.write(key)

    def project(self, reference: str) -> Project:
        found = (
            Project.objects.filter(pk=int(reference))
            if reference.isdigit()
            else Project.objects.filter(name=reference)
        )
        if found.count() != 1:
            raise CommandError(f"No single project is {reference!r}.")
        return found.get()
