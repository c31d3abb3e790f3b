"""Make a named API token for a user and print its key (shown once; only a hash is kept)."""

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from policies_app.accounts.tokens import create_token
from policies_app.errors import Invalid


class Command(BaseCommand):
    help = "Create a named API token for USER and print its key (e.g. for a pipeline's PLATFORM_TOKEN)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="pipeline", help="what uses the token (default: pipeline)")

    def handle(self, *args: Any, username: str, name: str, **options: Any) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user is named {username!r}.")
        try:
            _, key = create_token(user, name)
        except Invalid as refusal:
            raise CommandError(refusal.message) from None
        self.stdout.write(key)
