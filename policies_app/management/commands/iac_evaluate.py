"""``manage.py iac_evaluate DIR``: the same as ``python -m policies_app.iac DIR`` (see iac/cli.py).

Kept thin, and the evaluator is imported only when the command runs, so that listing commands or
running others never pays for it.
"""

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Evaluate a Terraform/OpenTofu configuration statically and print the result as JSON."
    requires_system_checks: list = []  # no models are touched: skip the checks, keep startup cheap
    requires_migrations_checks = False

    def add_arguments(self, parser):
        from policies_app.iac.cli import add_arguments

        add_arguments(parser)

    def handle(self, *args, **options):
        from policies_app.iac.cli import run

        status = run(options["directory"], options["var"], options["var_file"], options["cache_dir"],
                     options["compact"], self.stdout, self.stderr)
        if status:
            raise CommandError("the configuration has errors", returncode=status)
