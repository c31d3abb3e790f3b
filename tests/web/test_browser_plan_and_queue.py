"""In a real browser (Playwright, Debian's chromium): an approver's queue says why and how urgently each
deployment waits, the plan view reads like `terraform plan` (coloured actions, what forces a replacement,
unchanged attributes folded, the raw plan one click away, nothing sensitive), and a plan already opened is
approved from the queue with the keyboard alone. Screenshots in artifacts/screenshots/."""

from datetime import timedelta

import pytest
from django.utils import timezone

from policies_app.deployments import lifecycle
from policies_app.models import Approval, Deployment, Environment
from tests.builders import make_policy
from tests.web import test_browser_flows as flows

# The browser, the live site and signed-in pages of the other browser flows.
browser, site, page_for, photograph = flows.browser, flows.site, flows.page_for, flows.photograph

pytestmark = pytest.mark.django_db(transaction=True)

TWO_AND_SECURITY = """# METADATA
# custom:
#   requirements:
#     - approvals: 2
#     - team: security team
package env0

pending contains "a production change needs two approvals and the security team" if count(input.approvers) < 2
allow contains "approved" if count(input.approvers) >= 2
"""


def change(address, actions, before, after, mode="managed", **extra):
    kind, name = address.split(".")[-2:]
    return {
        "address": address,
        "mode": mode,
        "type": kind,
        "name": name,
        "change": {"actions": actions, "before": before, "after": after, **extra},
    }


PLAN = {
    "format_version": "1.2",
    "variables": {"db_password": {"value": "hunter2-secret"}},
    "resource_changes": [
        change(
            "aws_db_instance.main",
            ["delete", "create"],
            {"engine": "postgres", "identifier": "payments", "password": "hunter2-secret", "port": 5432},
            {"engine": "mysql", "identifier": "payments", "password": "rotated-secret", "port": 5432},
            after_unknown={"id": True, "endpoint": True},
            before_sensitive={"password": True},
            after_sensitive={"password": True},
            replace_paths=[["engine"]],
        ),
        change("aws_s3_bucket.old_logs", ["delete"], {"bucket": "old-logs"}, None),
        change(
            "aws_s3_bucket.reports",
            ["create"],
            None,
            {"bucket": "payments-reports", "arn": None},
            after_unknown={"arn": True},
        ),
        change(
            "aws_instance.web",
            ["update"],
            {"instance_type": "t3.small", "ami": "ami-1", "tags": {"team": "payments"}},
            {"instance_type": "t3.large", "ami": "ami-1", "tags": {"team": "payments"}},
        ),
        change(
            "data.aws_ami.latest",
            ["read"],
            None,
            {"owners": ["amazon"], "id": None},
            mode="data",
            after_unknown={"id": True},
        ),
        change("aws_iam_role.ci", ["no-op"], {"name": "ci"}, {"name": "ci"}),
    ],
}
PLAN_TEXT = """Terraform will perform the following actions:

  # aws_db_instance.main must be replaced
-/+ resource "aws_db_instance" "main" {
      ~ engine     = "postgres" -> "mysql" # forces replacement
      ~ id         = "db-1" -> (known after apply)
        identifier = "payments"
      ~ password   = (sensitive value)
    }

Plan: 2 to add, 1 to change, 2 to destroy.
"""


def waiting(world, environment, hours, **extra):
    deployment, _ = lifecycle.trigger_deployment(environment, world.bob, **extra)
    Deployment.objects.filter(pk=deployment.pk).update(expires_at=timezone.now() + timedelta(hours=hours))
    deployment.refresh_from_db()
    assert deployment.status == "pending_approval", (deployment.status, deployment.error)
    return deployment


def test_the_queue_and_the_plan_view_and_approving_from_the_queue_with_the_keyboard(world, page_for, site):
    world.platform.approval_policies.add(make_policy("production", TWO_AND_SECURITY))
    staging = Environment.objects.create(name="staging", project=world.payments, template=world.template)
    later = waiting(world, staging, 30, plan={"format_version": "1.2", "resource_changes": []})
    urgent = waiting(
        world,
        world.environment,
        2,
        plan=PLAN,
        plan_text=PLAN_TEXT,
        total_monthly_cost=420.0,
        monthly_cost_diff=35.5,
    )
    page = page_for("alice")
    page.goto(f"{site}/?view=waiting")
    rows = page.locator("table.queue tbody tr")
    assert rows.count() == 2
    first = rows.nth(0).inner_text()
    assert f"#{urgent.pk}" in first, "soonest expiry first"
    assert "0/2 approvals ✗" in first and "security team 0/1 ✗" in first
    assert "needs two approvals and the security team" in first
    assert "1 delete" in first and "1 replace" in first and "1 update" in first and "1 read" in first
    assert "420.00" in first and "+35.50" in first
    assert "no changes" in rows.nth(1).inner_text()
    assert page.locator("form.quick-approve").count() == 0, "no plan opened yet"
    photograph(page, "queue")

    page.click(f"text=#{urgent.pk}")
    plan = page.locator("#plan")
    plan.wait_for()
    counts = page.locator("ul.counts").inner_text()
    for label in (
        "1\nto delete",
        "1\nto replace",
        "1\nto create",
        "1\nto update",
        "1\nto read",
        "1\nunchanged",
    ):
        assert label.replace("\n", " ") in counts.replace("\n", " "), counts
    colour = page.eval_on_selector("ul.counts .action-delete strong", "e => getComputedStyle(e).color")
    assert colour != page.eval_on_selector(
        "ul.counts .action-create strong", "e => getComputedStyle(e).color"
    )
    assert "Plan: 2 to add, 1 to change, 2 to destroy." in page.inner_text("p.tf-line")
    replaced = page.locator("details.resource", has_text="aws_db_instance.main")
    replaced.locator("summary").first.click()
    text = replaced.inner_text()
    assert "must be replaced" in text and "forced by engine" in text and "# forces replacement" in text
    assert "(sensitive value)" in text and "(known after apply)" in text
    assert "2 unchanged attributes" in text, "identifier and port folded"
    assert "hunter2-secret" not in page.content() and "rotated-secret" not in page.content()
    page.locator("details.resource", has_text="aws_instance.web").locator("summary").first.click()
    page.click("text=Plan output as")
    assert "# forces replacement" in page.inner_text("pre.plan-text")
    photograph(page, "plan-view")

    # Back to the queue: the opened plan can be approved from its row, with the keyboard alone.
    page.goto(f"{site}/?view=waiting")
    assert page.locator("form.quick-approve").count() == 1
    for _ in range(80):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.classList.contains('approve')"):
            break
    else:
        pytest.fail("the queue's approve button cannot be reached with the keyboard")
    assert page.evaluate("document.activeElement.accessKey") == "a"
    photograph(page, "queue-approve-focused")
    page.keyboard.press("Enter")
    page.wait_for_selector("text=You approved deployment")
    assert Approval.objects.get(deployment=urgent).user == world.alice
    assert page.locator("table.queue tbody tr").count() == 1, "what she approved no longer waits for her"
    assert later.pk != urgent.pk
