"""Re-encrypt every stored secret with the first key of SECRET_ENCRYPTION_KEYS (guards/encryption.py).

Rotation: put a new key first in SECRET_ENCRYPTION_KEYS (keeping the old ones after it), restart, run this
command, then remove the old keys. Safe to run again, also after being stopped half-way."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from policies_app.guards import encryption


class Command(BaseCommand):
    help = "Re-encrypt every stored secret with the first key of SECRET_ENCRYPTION_KEYS, in batches."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--batch-size", type=int, default=encryption.ROTATION_BATCH, help="rows per transaction"
        )

    def handle(self, *args: Any, batch_size: int, **options: Any) -> None:
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1.")
        try:
            rewritten = encryption.rotate_stored_secrets(batch_size)
        except encryption.UnreadableSecret as problem:
            raise CommandError(
                f"{problem} Put every key still in use back into SECRET_ENCRYPTION_KEYS and run it again."
            ) from None
        for label, rows in rewritten.items():
            self.stdout.write(f"{label}: {rows} rows re-encrypted with the first key")
