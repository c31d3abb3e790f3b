"""Print the public half of AUDIT_SIGNING_KEY (PEM), to hand to whoever verifies the audit log."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from policies_app.accounts import audit_chain


class Command(BaseCommand):
    help = "Print the Ed25519 public key that verifies the audit log's checkpoints (from AUDIT_SIGNING_KEY)."

    def handle(self, *args: Any, **options: Any) -> None:
        key = audit_chain.signing_key()
        if key is None:
            raise CommandError("AUDIT_SIGNING_KEY is not set: checkpoints are not signed.")
        self.stdout.write(audit_chain.public_key_pem(key.public_key()), ending="")
