"""``manage.py iac_evaluate DIR``: the same as ``python -m policies_app.iac DIR`` (see iac/cli.py), which
starts faster: it sets no Django up.

Kept thin, and the evaluator is imported only when the command runs, so that listing commands or
running others never pays for it. Without ``--cache-dir`` the parse cache is the platform's own
(settings.IAC_PARSE_CACHE_DIR), shared with the evaluations done for deployments.
"""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = (
        "Evaluate a Terraform/OpenTofu configuration statically and print the result as JSON "
        "(python -m policies_app.iac takes the same arguments and starts faster, without Django)."
    )
    requires_system_checks: list = []  # no models are touched: skip the checks, keep startup cheap
    requires_migrations_checks = False

    def add_arguments(self, parser):
        from policies_app.iac.bytecode import keep_bytecode_in_user_cache

        keep_bytecode_in_user_cache()  # before the evaluator's modules are imported
        from policies_app.iac.cli import add_arguments

        add_arguments(parser)

    def handle(self, *args, **options):
        from policies_app.iac.cli import parse_var_flags, run

        try:
            parse_var_flags(options["var"])
        except ValueError as error:
            raise CommandError(str(error), returncode=2) from None
        cache_dir = options["cache_dir"] or getattr(settings, "IAC_PARSE_CACHE_DIR", None)
        status = run(
            options["directory"],
            options["var"],
            options["var_file"],
            cache_dir,
            options["compact"],
            self.stdout,
            self.stderr,
            options["source_root"],
            options["provider_schema"],
            options["sensitive_var"],
        )
        if status:
            raise CommandError("the configuration has errors (see the diagnostics above)", returncode=status)
