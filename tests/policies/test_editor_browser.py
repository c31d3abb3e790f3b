"""The policy editor in a real browser (Playwright driving Debian's Chromium) against the live server:
the syntax check as one types names the file, line and column the engine reports; modules are added,
renamed and removed; saving makes a new revision."""

import importlib.util
import shutil
from pathlib import Path

import pytest

from policies_app.models import ApprovalPolicy
from tests.builders import make_policy, make_user

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = [
    pytest.mark.skipif(
        not CHROMIUM.exists() and shutil.which("chromium") is None,
        reason="needs Debian's chromium at /usr/bin/chromium (apt-get install -y chromium)",
    ),
    pytest.mark.skipif(
        importlib.util.find_spec("playwright") is None,
        reason="needs Playwright for Python (bin/setup installs it; or pip install playwright==1.65.2)",
    ),
    pytest.mark.django_db(transaction=True),
]

GOOD = 'package env0\n\nimport rego.v1\n\npending contains "look" if input.size > 3\n'


@pytest.fixture
def browser_page(monkeypatch):
    from playwright.sync_api import sync_playwright

    # Playwright's synchronous API runs an event loop in this thread; the ORM calls of the test around it
    # are plain synchronous code.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        page = browser.new_page()
        page.set_default_timeout(20_000)
        yield page
        browser.close()


def sign_in(page, base: str, username: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", "pw")
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")


def test_the_editor_checks_the_syntax_as_one_types_and_saves_a_new_revision(live_server, browser_page):
    make_user("author", is_superuser=True, is_staff=True)
    policy = make_policy("size", GOOD)
    page = browser_page
    sign_in(page, live_server.url, "author")
    page.goto(f"{live_server.url}/policies/{policy.pk}/edit/")
    status = page.locator("#syntax-status")
    status.filter(has_text="no problems").wait_for()

    first = page.locator(".module textarea").first
    first.fill(GOOD.replace("if input.size > 3", "if nosuch(input.size)"))
    problem = page.locator("#syntax-problems li").first
    problem.wait_for()
    assert problem.inner_text() == "main.rego:5:28: undefined function nosuch"
    assert "1 problem" in status.inner_text()
    assert page.locator(".module.has-problem input.filename").input_value() == "main.rego"

    problem.click()  # puts the caret where the engine says the problem is
    caret = page.evaluate("document.querySelector('.module textarea').selectionStart")
    assert GOOD.replace("if input.size > 3", "if nosuch(input.size)")[caret:].startswith("nosuch(")

    first.fill(GOOD)
    status.filter(has_text="no problems").wait_for()

    page.click("#add-module")
    added = page.locator(".module").nth(1)
    added.locator("input.filename").fill("lib/limits.rego")
    added.locator("textarea").fill("package limits\n\nimport rego.v1\n\nsize := \n")
    page.locator("#syntax-problems li").first.wait_for()
    assert (
        page.locator("#syntax-problems li").first.inner_text() == "lib/limits.rego:6:1: expecting expression"
    )

    added.locator("textarea").fill("package limits\n\nimport rego.v1\n\nsize := 3\n")
    status.filter(has_text="no problems").wait_for()
    page.click("button[name=save]")
    page.wait_for_url(f"{live_server.url}/policies/{policy.pk}/")
    assert "r2" in page.locator("#in-force").inner_text()

    page.goto(f"{live_server.url}/policies/{policy.pk}/edit/")
    page.locator(".module").filter(has=page.locator("input.filename[value='lib/limits.rego']")).locator(
        ".remove-module"
    ).click()
    page.locator(".module input.filename").first.fill("size.rego")
    status.filter(has_text="no problems").wait_for()
    page.click("button[name=save]")
    page.wait_for_url(f"{live_server.url}/policies/{policy.pk}/")

    policy = ApprovalPolicy.objects.get(pk=policy.pk)
    assert policy.active_revision.number == 3
    assert [m.filename for m in policy.active_revision.modules.all()] == ["size.rego"]
    assert sorted(m.filename for m in policy.revisions.get(number=2).modules.all()) == [
        "lib/limits.rego",
        "main.rego",
    ]
