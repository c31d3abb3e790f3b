"""``python manage.py policy_test POLICY``: run a policy's tests like ``opa test`` and print each
test's result and the line coverage. Exits 1 when a test fails or the tests cannot run."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from policies_app.errors import DomainError
from policies_app.models import ApprovalPolicy
from policies_app.policies.policy_tests import report_lines, revision_to_test, run_revision_tests


class Command(BaseCommand):
    help = "Run a policy's tests (its *_test.rego modules) and print each result and the line coverage."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("policy", help="the policy's name or id")
        parser.add_argument("--revision", type=int, help="the revision to test (default: the newest)")

    def handle(self, *args: Any, policy: str, revision: int | None = None, **options: Any) -> None:
        found = ApprovalPolicy.objects.filter(name=policy).first()
        if found is None and policy.isdigit():
            found = ApprovalPolicy.objects.filter(pk=int(policy)).first()
        if found is None:
            raise CommandError(f"no policy named {policy!r}")
        try:
            tested = revision_to_test(found, revision)
            report = run_revision_tests(tested)
        except DomainError as problem:
            raise CommandError(problem.message) from None
        for line in report_lines(tested, report):
            self.stdout.write(line)
        if not report.passed:
            raise CommandError("tests failed" if report.error is None else "the tests could not run")
