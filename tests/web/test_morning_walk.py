"""A morning in a real browser (Playwright, Debian's chromium), as people start their day here.

An approver opens the queue (why each deployment waits, for how long, what its plan changes), opens the
most urgent one (what clears it), reads its plan, approves (what clears it moves to 1/2) and leaves a
comment for the second approver. Then a platform admin checks the policy repository and fills a catalog
form wrongly (the problem is shown beside its field, what was typed kept). Every step is photographed to
artifacts/morning/, to be looked at, not only asserted."""

from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from policies_app.deployments import lifecycle
from policies_app.models import Approval, Deployment, DeploymentComment, Environment, PolicyRepository
from tests.builders import make_policy
from tests.web import test_browser_flows as flows
from tests.web.test_browser_plan_and_queue import PLAN, PLAN_TEXT

browser, site, page_for = flows.browser, flows.site, flows.page_for

pytestmark = pytest.mark.django_db(transaction=True)

MORNING = Path(__file__).resolve().parents[2] / "artifacts" / "morning"
TWO_APPROVALS = """# METADATA
# custom:
#   requirements:
#     - approvals: 2
package env0

pending contains "a production change needs two approvals" if count(input.approvers) < 2
allow contains "approved twice" if count(input.approvers) >= 2
"""


def photograph(page, step: str) -> None:
    MORNING.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(MORNING / f"{step}.png"), full_page=True)


def waiting(world, environment, hours: float, created_hours_ago: float, **extra) -> Deployment:
    deployment, _ = lifecycle.trigger_deployment(environment, world.bob, **extra)
    Deployment.objects.filter(pk=deployment.pk).update(
        expires_at=timezone.now() + timedelta(hours=hours),
        created_at=timezone.now() - timedelta(hours=created_hours_ago),
        pending_since=timezone.now() - timedelta(hours=created_hours_ago),
    )
    deployment.refresh_from_db()
    assert deployment.status == "pending_approval", (deployment.status, deployment.error)
    return deployment


def test_an_approvers_and_a_platform_admins_morning(world, page_for, site):
    world.platform.approval_policies.add(make_policy("production changes", TWO_APPROVALS))
    staging = Environment.objects.create(name="staging", project=world.payments, template=world.template)
    waiting(world, staging, 30, 20, plan={"format_version": "1.2", "resource_changes": []})
    urgent = waiting(
        world,
        world.environment,
        2,
        3,
        plan=PLAN,
        plan_text=PLAN_TEXT,
        total_monthly_cost=420.0,
        monthly_cost_diff=35.5,
    )

    # The approver's queue: the reason, the age and the plan's counts on each row.
    page = page_for("alice")
    page.goto(f"{site}/?view=waiting")
    rows = page.locator("table.queue tbody tr")
    assert rows.count() == 2
    first = rows.nth(0).inner_text()
    assert f"#{urgent.pk}" in first
    assert "needs two approvals" in first
    assert "\t3 hours\t" in first
    assert "1 delete" in first and "1 replace" in first
    photograph(page, "1-queue")

    # The deployment: what clears it, before anyone approved.
    page.click(f"text=#{urgent.pk}")
    requirements = page.locator("ul.requirements")
    requirements.wait_for()
    assert "0/2 approvals ✗" in requirements.inner_text()
    photograph(page, "2-deployment")

    # The plan, as `terraform plan` reads, nothing sensitive.
    page.locator("details.resource", has_text="aws_db_instance.main").locator("summary").first.click()
    page.locator("#plan").scroll_into_view_if_needed()
    assert "must be replaced" in page.inner_text("#live")
    assert "hunter2-secret" not in page.content()
    photograph(page, "3-plan")

    # Approving: the progress moves to 1/2, approved by her, still waiting for another approver.
    page.fill("#id_comment", "Engine change agreed with the DBAs.")
    page.click("button[value=approve]")
    page.wait_for_selector("text=You approved deployment")
    progress = page.locator("ul.requirements").inner_text()
    assert "1/2 approvals ✗" in progress and "approved by alice" in progress
    assert Approval.objects.get(deployment=urgent).user == world.alice
    photograph(page, "4-approved")

    # A comment for the second approver: posted, shown in the thread with its time, escaped.
    page.fill("#id_body", "Sam: the <b>replace</b> of the database is expected,\nsee the PR.")
    page.click("text=Post comment")
    entry = page.locator("ol.comments li").first
    entry.wait_for()
    assert "the <b>replace</b> of the database is expected," in entry.inner_text()
    assert page.locator("ol.comments li b").count() == 0, "typed HTML is shown as text"
    assert "just now" in entry.inner_text()
    assert DeploymentComment.objects.get().author == world.alice
    assert page.url.endswith(f"#comment-{DeploymentComment.objects.get().pk}")
    photograph(page, "5-commented")

    # A platform admin: the policy repository, then a catalog form with a mistake.
    repository = PolicyRepository.objects.create(name="policies", url="https://example.com/policies.git")
    admin = page_for("admin")
    admin.goto(f"{site}/policies/repositories/")
    admin.click(f"a[href='/policies/repositories/{repository.pk}/']")
    admin.wait_for_url(f"**/policies/repositories/{repository.pk}/")
    assert "https://example.com/policies.git" in admin.inner_text("main")
    photograph(admin, "6-repository")

    admin.goto(f"{site}/policies/catalog/")
    window = admin.locator("#entry-change-window")
    window.locator("input[name=change-window-name]").fill("office hours")
    window.locator("input[name=change-window-start_hour]").fill("30")
    window.locator("button[type=submit]").click()
    window = admin.locator("#entry-change-window")
    field = window.locator(".form-row", has=admin.locator("input[name=change-window-start_hour]"))
    field.wait_for()
    assert "30 is greater than the maximum of 23" in field.inner_text()
    assert window.locator("input[name=change-window-start_hour]").input_value() == "30"
    photograph(admin, "7-catalog-error")
    window.screenshot(path=str(MORNING / "7-catalog-error-form.png"))
