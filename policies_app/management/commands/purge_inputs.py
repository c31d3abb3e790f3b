"""Remove the policy inputs and plans older than the retention period (EVALUATION_INPUT_RETENTION_DAYS, or
--days), in batches; decisions, messages, outcomes and the audit trail are kept."""

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from policies_app.deployments.stored_inputs import purge_inputs


class Command(BaseCommand):
    help = (
        "Purge the stored inputs of evaluations (and the plans of finished deployments) older than N days, "
        "and the stored plans nothing references any more. Decisions, messages and the audit trail are kept."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--days", type=float, help="keep this many days (default: EVALUATION_INPUT_RETENTION_DAYS)"
        )
        parser.add_argument(
            "--batch", type=int, help="rows per transaction (default: EVALUATION_INPUT_PURGE_BATCH)"
        )

    def handle(self, *args: Any, days: float | None, batch: int | None, **options: Any) -> None:
        days = days if days is not None else settings.EVALUATION_INPUT_RETENTION_DAYS
        if days is None:
            raise CommandError("No retention period: set EVALUATION_INPUT_RETENTION_DAYS or give --days.")
        if days <= 0 or (batch is not None and batch <= 0):
            raise CommandError("--days and --batch must be greater than zero.")
        counts = purge_inputs(days, batch=batch)
        self.stdout.write(
            f"purged {counts.evaluations} evaluation inputs, {counts.plans} deployment plans, "
            f"{counts.documents} stored documents"
        )
