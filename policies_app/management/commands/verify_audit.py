"""Check the audit log's hash chain and its signed checkpoints (policies_app/accounts/audit_chain.py):
exits 0 when intact, 1 naming the first broken entry (its sequence and row id) otherwise."""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from policies_app.accounts import audit_chain


class Command(BaseCommand):
    help = "Verify the audit log's hash chain and checkpoint signatures; name the first broken entry."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--public-key",
            metavar="FILE",
            help="the Ed25519 public key (PEM or base64 raw) checkpoints must be signed with "
            "(default: the public half of AUDIT_SIGNING_KEY)",
        )

    def handle(self, *args: Any, public_key: str | None = None, **options: Any) -> None:
        key = None
        if public_key:
            try:
                key = audit_chain.public_key_from(Path(public_key).read_bytes())
            except (OSError, audit_chain.UnreadableKey) as problem:
                raise CommandError(f"cannot read the public key {public_key}: {problem}") from None
        report = audit_chain.verify(key)
        if not report.intact:
            for problem in report.problems:
                self.stderr.write(f"BROKEN {problem}")
            raise CommandError(f"the audit log's chain is broken at {report.first_broken}")
        signatures = "signatures checked" if report.signatures_checked else "signatures NOT checked (no key)"
        self.stdout.write(
            f"OK: {report.entries} entries chained up to #{report.head[0]} ({report.head[1]}); "
            f"{report.checkpoints} checkpoints, {signatures}"
        )
