"""End to end in a real headless browser: Playwright for Python driving Debian's chromium against the
live server. An approver follows the email's link, reads the plan and approves, and the page turns
approved by itself; a destroy asks for confirmation (reached with the keyboard alone); a rejection's
comment reaches the pipeline's gate; an admin builds a project without the Django admin. Every main
page is photographed at 1400 px and 390 px under artifacts/ and must not scroll sideways on a phone."""

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.core import mail

from policies_app.deployments import approvals, lifecycle
from policies_app.models import Approval, Deployment, Project, ProjectMembership
from policy_gate import gate
from tests.builders import ONE_APPROVER, api_key_for, make_policy

pytestmark = pytest.mark.django_db(transaction=True)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
WIDE, PHONE = {"width": 1400, "height": 900}, {"width": 390, "height": 844}
TWO_APPROVERS = """package env0

pending contains sprintf("needs two approvals, has %d", [count(input.approvers)]) if count(input.approvers) < 2
allow contains "two approvals" if count(input.approvers) >= 2
"""
PLAN = {
    "format_version": "1.2",
    "resource_changes": [
        {
            "address": "aws_db_instance.main",
            "mode": "managed",
            "type": "aws_db_instance",
            "name": "main",
            "change": {
                "actions": ["delete"],
                "before": {"identifier": "payments", "password": "hunter2"},
                "after": None,
                "before_sensitive": {"password": True},
            },
        },
        {
            "address": "aws_s3_bucket.reports",
            "mode": "managed",
            "type": "aws_s3_bucket",
            "name": "reports",
            "change": {
                "actions": ["create"],
                "before": None,
                "after": {"bucket": "payments-reports", "arn": None},
                "after_unknown": {"arn": True},
            },
        },
    ],
}


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip("needs Debian's chromium at /usr/bin/chromium (bin/run-tests installs it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (requirements.txt)")
    # Playwright's synchronous API runs an event loop in this thread; the ORM calls of these tests stay
    # synchronous and on this thread.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()
    os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)


@pytest.fixture
def site(live_server, settings, world):
    settings.PLATFORM_URL = live_server.url
    settings.DEPLOYMENT_PAGE_POLL_SECONDS = 0.5
    return live_server.url


@pytest.fixture
def page_for(browser, site):
    contexts = []

    def open_as(username: str, viewport=WIDE):
        context = browser.new_context(viewport=viewport)
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15_000)
        if username:
            page.goto(f"{site}/accounts/login/")
            sign_in(page, username)
        return page

    yield open_as
    for context in contexts:
        context.close()


def sign_in(page, username: str) -> None:
    try:
        page.wait_for_selector("#id_username")
    except Exception as error:  # Playwright's TimeoutError: say what the browser got instead of the form
        raise AssertionError(
            f"no sign-in form at {page.url}: {page.evaluate('document.body && document.body.innerText')!r:.2000}"
        ) from error
    page.fill("#id_username", username)
    page.fill("#id_password", "pw")
    page.click("button[type=submit]")


def photograph(page, name: str) -> None:
    """A screenshot at both widths; on the phone width the page must not scroll sideways."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for label, viewport in (("1400", WIDE), ("390", PHONE)):
        page.set_viewport_size(viewport)
        page.screenshot(path=str(ARTIFACTS / f"{name}-{label}.png"), full_page=True)
        if viewport is PHONE:
            overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 1, f"{name} scrolls sideways by {overflow}px at 390px"
    page.set_viewport_size(WIDE)


def trigger(world, deployment_type="deploy", plan=PLAN) -> Deployment:
    deployment, _ = lifecycle.trigger_deployment(
        world.environment,
        world.bob,
        type=deployment_type,
        plan=plan,
        total_monthly_cost=120,
        monthly_cost_diff=30,
    )
    deployment.refresh_from_db()
    return deployment


def test_an_approver_follows_the_email_reads_the_plan_approves_and_sees_it_approved_without_reload(
    world, page_for, site
):
    world.platform.approval_policies.add(make_policy("two approvers", TWO_APPROVERS))
    deployment = trigger(world)
    assert deployment.status == "pending_approval"
    [email] = [m for m in mail.outbox if m.to == ["alice@example.com"]]
    link = re.search(r"(http://\S+/deployments/\d+/)", email.body).group(1)

    page = page_for("")
    page.goto(link)
    sign_in(page, "alice")  # the link leads to the login page, then back to the deployment
    page.wait_for_url(link)
    summary = page.locator("#plan")
    assert "1 to delete, 1 to create" in summary.inner_text()
    destroyed = page.locator("details.resource").first
    assert "aws_db_instance.main" in destroyed.inner_text(), "destroys come first"
    destroyed.locator("summary").click()
    assert "(sensitive value)" in destroyed.inner_text() and "hunter2" not in page.content()
    created = page.locator("details.resource", has_text="aws_s3_bucket.reports")
    created.locator("summary").click()
    assert "(known after apply)" in created.inner_text()
    assert "+30.00 a month" in page.inner_text("#live")
    photograph(page, "deployment")

    page.fill("#id_comment", "schema checked")
    page.click("button[value=approve]")
    page.wait_for_selector("text=You approved deployment")
    assert "needs two approvals, has 1" in page.inner_text("#live")
    assert page.locator("button[value=approve]").count() == 0, "no buttons once she acted"

    # Sam approves from elsewhere; Alice's open page follows without being reloaded.
    marker = page.evaluate("window.__stillTheSamePage = true")
    approvals.record_approval(Deployment.objects.get(pk=deployment.pk), world.sam, "approve", "ok")
    page.wait_for_selector("#live .badge.tone-good:has-text('Approved')", timeout=15_000)
    assert page.evaluate("window.__stillTheSamePage") is True, marker
    assert Deployment.objects.get(pk=deployment.pk).status == "approved"


def test_a_destroy_asks_for_confirmation_and_the_keyboard_alone_gets_there(world, page_for, site):
    world.platform.approval_policies.add(make_policy("one approver", ONE_APPROVER))
    deployment = trigger(world, "destroy")
    page = page_for("alice")
    page.goto(f"{site}/deployments/{deployment.pk}/")
    page.click("button[value=approve]")
    time.sleep(0.3)
    assert not Approval.objects.exists(), "the browser refuses to approve a destroy without the confirmation"
    page.goto(f"{site}/deployments/{deployment.pk}/")
    for _ in range(80):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == "id_confirm_destroy":
            break
    else:
        pytest.fail("the destroy confirmation cannot be reached with the keyboard")
    page.keyboard.press("Space")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.value") == "approve"
    page.keyboard.press("Enter")
    page.wait_for_selector("text=You approved deployment")
    assert Approval.objects.get().decision == "approve"
    assert Deployment.objects.get(pk=deployment.pk).status == "approved"


def test_a_rejection_with_a_comment_shows_in_the_gates_output(world, page_for, site, tmp_path):
    world.platform.approval_policies.add(make_policy("one approver", ONE_APPROVER))
    copy = tmp_path / "gate.py"
    shutil.copy(gate.__file__, copy)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(PLAN))
    process = subprocess.Popen(
        [
            sys.executable,
            "-I",
            str(copy),
            "deploy",
            "--wait",
            "--poll-interval",
            "0.3",
            "--timeout",
            "60",
            "--url",
            site,
            "--token",
            api_key_for(world.bob),
            "--environment",
            str(world.environment.pk),
            "--plan",
            str(plan_file),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not Deployment.objects.filter(status="pending_approval").exists():
            assert time.monotonic() < deadline and process.poll() is None, process.stderr.read()
            time.sleep(0.2)
        deployment = Deployment.objects.get()
        page = page_for("alice")
        page.goto(f"{site}/deployments/{deployment.pk}/")
        page.fill("#id_comment", "the reports bucket needs a retention policy")
        page.click("button[value=reject]")
        page.wait_for_selector("text=You rejected deployment")
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == gate.EXIT_STOPPED, out + err
    assert "rejected by alice: the reports bucket needs a retention policy" in out


def test_an_admin_creates_a_project_adds_a_member_and_attaches_a_policy_without_the_django_admin(
    world, page_for, site
):
    policy = make_policy("change freeze", ONE_APPROVER)
    page = page_for("admin")
    page.click("header >> text=Projects")
    photograph(page, "projects")
    page.click("text=New project")
    page.fill("#id_name", "Cards")
    page.select_option("#id_parent", str(world.payments.pk))
    page.fill("#id_pending_expiry_hours", "24")
    page.click("text=Create the project")
    page.wait_for_selector("text=Project Cards is created.")
    cards = Project.objects.get(name="Cards")
    assert (cards.parent_id, cards.pending_expiry_hours) == (world.payments.pk, 24)

    page.fill("#member_username", "charlie")
    page.select_option("#member_role", "approver")
    page.click("text=Add member")
    page.wait_for_selector("text=charlie is now approver of Cards.")
    assert ProjectMembership.objects.get(project=cards, user=world.charlie).role == "approver"

    page.select_option("#id_attach_policy", str(policy.pk))
    page.click("button:has-text('Attach')")
    page.wait_for_selector("text=Policy change freeze is attached to Cards")
    assert list(cards.approval_policies.all()) == [policy]
    photograph(page, "project")

    for path, name in (
        ("/?view=all", "queue"),
        (f"/environments/{world.environment.pk}/", "environment"),
        ("/templates/", "templates"),
        (f"/templates/{world.template.pk}/", "template"),
        ("/policies/", "policies"),
        ("/users/", "users"),
        ("/audit/", "audit"),
        ("/account/", "account"),
    ):
        page.goto(f"{site}{path}")
        assert page.locator("h1").count() == 1, path
        photograph(page, name)
    assert "policy.attached" in page.goto(f"{site}/audit/").text()


REQUIREMENTS = """# METADATA
# custom:
#   approvals: 2
#   team: security team
package env0

import rego.v1

import data.lib.approvals

pending contains "two approvals, one from the security team" if count(input.approvers) < 2

pending contains "two approvals, one from the security team" if approvals.count_in_team("security team") < 1

allow contains "cleared" if {
	count(input.approvers) >= 2
	approvals.count_in_team("security team") >= 1
}
"""


def test_an_approver_sees_what_clears_the_deployment_and_the_change_behind_it(world, page_for, site):
    world.platform.approval_policies.add(make_policy("production", REQUIREMENTS))
    deployment, _ = lifecycle.trigger_deployment(
        world.environment,
        world.bob,
        plan=PLAN,
        links={
            "commit_sha": "9fceb02d0ae598e95dc970b74767f19372d61af8",
            "pull_request_url": "https://github.com/acme/infra/pull/42",
            "ci_run_url": "https://github.com/acme/infra/actions/runs/123456",
        },
    )
    approvals.record_approval(Deployment.objects.get(pk=deployment.pk), world.alice, "approve", "ok")
    page = page_for("sam")
    page.goto(f"{site}/deployments/{deployment.pk}/")
    cleared = page.locator("#requirements + ul").inner_text()
    assert "1/2 approvals ✗" in cleared and "security team 0/1 ✗" in cleared
    assert "can be cleared by sam" in cleared
    assert (
        page.locator("a", has_text="pull request").get_attribute("href")
        == "https://github.com/acme/infra/pull/42"
    )
    assert "deployResume" not in page.content()
    photograph(page, "deployment-requirements")

    page.click("button[value=approve]")
    page.wait_for_selector("text=You approved deployment")
    assert "security team 1/1 ✓" in page.locator("#requirements + ul").inner_text()

    page.goto(f"{site}/environments/{world.environment.pk}/")
    page.click("#pipeline summary")
    assert "--environment 'Platform/Payments/Payments EU/prod'" in page.inner_text("#pipeline")
    photograph(page, "environment-pipeline")
