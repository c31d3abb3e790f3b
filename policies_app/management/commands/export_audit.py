"""Write the audit log's hash chain and its checkpoints as JSON lines, for a third party to verify with
docs/verify_audit_export.py (docs/audit-verification.md)."""

from typing import Any

from django.core.management.base import BaseCommand

from policies_app.accounts import audit_chain


class Command(BaseCommand):
    help = "Export the audit log's hash chain and signed checkpoints as JSON lines."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--output", required=True, metavar="FILE", help="where to write (- for stdout)")

    def handle(self, *args: Any, output: str, **options: Any) -> None:
        if output == "-":
            for line in audit_chain.export_lines():
                self.stdout.write(line, ending="")
            return
        with open(output, "w", encoding="ascii") as file:
            file.writelines(audit_chain.export_lines())
