"""The forms for people in a real browser (Debian's chromium through Playwright): an admin adds
variables row by row (one sensitive, one row added by the script), sees the sensitive one masked; installs a
catalog policy through its generated form after a problem shown beside its field; opens the repository
pages. Screenshots go to artifacts/screenshots/."""

import pytest

from policies_app.models import ApprovalPolicy, Environment
from tests.web.test_browser_flows import browser, page_for, photograph, site  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_admin_edits_variables_row_by_row_and_installs_a_catalog_policy(world, page_for, site):  # noqa: F811
    page = page_for("admin")
    page.goto(f"{site}/environments/{world.environment.pk}/edit/")
    page.fill("#id_environment-0-name", "AWS_REGION")
    page.fill("#id_environment-0-value", "eu-west-1")
    page.fill("#id_environment-1-name", "API_TOKEN")
    page.fill("#id_environment-1-value", "tok-visible-nowhere")
    page.check("#id_environment-1-sensitive")
    rows = page.locator("fieldset[data-kind=terraform] tr.variable-row")
    before = rows.count()
    page.click("fieldset[data-kind=terraform] >> text=Add a row")
    assert rows.count() == before + 1
    page.fill(f"#id_terraform-{before}-name", "replicas")
    page.fill(f"#id_terraform-{before}-value", "3")
    page.click("button:has-text('Save')")
    page.wait_for_selector("text=is saved")
    environment = Environment.objects.get(pk=world.environment.pk)
    assert environment.environment_variables["API_TOKEN"] == "tok-visible-nowhere"
    assert environment.terraform_variables["replicas"] == 3
    page.goto(f"{site}/environments/{world.environment.pk}/edit/")
    assert "tok-visible-nowhere" not in page.content()
    photograph(page, "environment-form")

    page.goto(f"{site}/policies/catalog/")
    window = page.locator("#entry-change-window")
    window.locator("input[name='change-window-start_hour']").fill("30")
    window.locator("button:has-text('Install')").click()
    row = page.locator("#entry-change-window .form-row.has-errors")
    assert "greater than the maximum of 23" in row.inner_text()
    photograph(page, "catalog-form-error")
    page.locator("#entry-change-window input[name='change-window-start_hour']").fill("8")
    page.locator("#entry-change-window button:has-text('Install')").click()
    page.wait_for_selector("h1")
    assert (
        ApprovalPolicy.objects.get(catalog_entry="change-window").active_revision.data["policyData"][
            "start_hour"
        ]
        == 8
    )

    page.goto(f"{site}/policies/repositories/")
    photograph(page, "repositories")
    page.click("text=New repository")
    photograph(page, "repository-form")
