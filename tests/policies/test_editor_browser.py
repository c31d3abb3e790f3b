"""The policy editor in a real browser (Playwright driving Debian's Chromium) against the live server:
each module in a code editor (CodeMirror: line numbers, Rego highlighting); the syntax check as one types
names the file, line and column the engine reports, and marks that line in the module; modules are added,
renamed and removed; saving makes a new revision; "Try it" runs the text not saved. Screenshots go to
artifacts/."""

import importlib.util
import shutil
from pathlib import Path

import pytest

from policies_app.deployments import lifecycle
from policies_app.models import ApprovalPolicy, PolicyRevision
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
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
CARET = "RegoEditor.EditorView.findFromDOM(document.querySelector('.module .cm-editor')).state.selection.main.head"


def code(locator):
    """The code editor of a module row (its textarea is hidden, and kept in step as the form field)."""
    return locator.locator(".cm-content")


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

    first = code(page.locator(".module").first)
    first.fill(GOOD.replace("if input.size > 3", "if nosuch(input.size)"))
    problem = page.locator("#syntax-problems li").first
    problem.wait_for()
    assert problem.inner_text() == "main.rego:5:28: undefined function nosuch"
    assert "1 problem" in status.inner_text()
    assert page.locator(".module.has-problem input.filename").input_value() == "main.rego"

    problem.click()  # puts the caret where the engine says the problem is
    caret = page.evaluate(CARET)
    assert GOOD.replace("if input.size > 3", "if nosuch(input.size)")[caret:].startswith("nosuch(")

    first.fill(GOOD)
    status.filter(has_text="no problems").wait_for()

    page.click("#add-module")
    added = page.locator(".module").nth(1)
    added.locator("input.filename").fill("lib/limits.rego")
    code(added).fill("package limits\n\nimport rego.v1\n\nsize := \n")
    page.locator("#syntax-problems li").first.wait_for()
    assert (
        page.locator("#syntax-problems li").first.inner_text() == "lib/limits.rego:6:1: expecting expression"
    )

    code(added).fill("package limits\n\nimport rego.v1\n\nsize := 3\n")
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


TRIED = 'package env0\n\nimport rego.v1\n\ndeny contains "no deploys today" if input.deploymentRequest.type == "deploy"\n'


def photograph(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_the_code_editor_highlights_marks_a_problem_at_its_line_and_tries_the_unsaved_text(
    live_server, browser_page, world
):
    policy = make_policy("size", GOOD)
    world.platform.approval_policies.add(policy)
    deployment, _ = lifecycle.trigger_deployment(world.environment, world.bob, type="deploy")
    page = browser_page
    page.set_viewport_size({"width": 1300, "height": 1000})
    sign_in(page, live_server.url, "admin")
    page.goto(f"{live_server.url}/policies/{policy.pk}/edit/")
    page.locator("#syntax-status").filter(has_text="no problems").wait_for()

    module = page.locator(".module").first
    assert module.locator("textarea").is_hidden(), "the editor stands in for the textarea"
    numbers = module.locator(".cm-lineNumbers .cm-gutterElement").all_inner_texts()
    assert {"1", "2", "3", "4", "5"} <= set(numbers), numbers
    keywords = module.locator(".cm-content .tok-keyword").all_inner_texts()
    assert {"package", "import", "contains", "if"} <= set(keywords)
    assert module.locator(".tok-string", has_text='"look"').count() == 1
    assert module.locator(".tok-number", has_text="3").count() == 1

    # A syntax error typed at the end of line 5: the problem is shown at that line of the module.
    module.locator(".cm-line").nth(4).click()
    page.keyboard.press("End")
    page.keyboard.type(" }")
    marked = module.locator(".cm-lintRange-error")
    marked.first.wait_for()
    line = marked.first.evaluate(
        "node => [...node.closest('.cm-content').querySelectorAll('.cm-line')].indexOf(node.closest('.cm-line'))"
    )
    assert line == 4, "the problem is marked on line 5"
    assert module.locator(".cm-lint-marker-error").count() == 1, "and in the gutter beside it"
    listed = page.locator("#syntax-problems li").first.inner_text()
    assert listed.startswith("main.rego:5:"), listed
    assert module.locator("textarea").input_value().endswith("> 3 }\n"), "the form field follows the editor"
    marked.first.hover()
    page.locator(".cm-tooltip-lint").wait_for()
    photograph(page, "policy-editor-problem")

    page.keyboard.press("Backspace")
    page.keyboard.press("Backspace")
    page.locator("#syntax-status").filter(has_text="no problems").wait_for()
    assert marked.count() == 0

    # "Try it" on the text as it is now, not saved, over the deployment's recorded input.
    code(module).fill(TRIED)
    page.locator("#syntax-status").filter(has_text="no problems").wait_for()
    page.select_option("#try-deployment", str(deployment.pk))
    page.click("#try-unsaved-run")
    decision = page.locator("#try-unsaved-decision")
    decision.wait_for()
    assert decision.inner_text() == "deny", "the saved text only asks for a look (pending)"
    assert "no deploys today" in page.locator("#try-unsaved-result").inner_text()
    page.locator("#try-unsaved").scroll_into_view_if_needed()
    photograph(page, "policy-editor-try-unsaved")
    page.set_viewport_size({"width": 390, "height": 844})
    photograph(page, "policy-editor-390")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1, f"the editor scrolls sideways by {overflow}px on a phone"
    assert PolicyRevision.objects.filter(policy=policy).count() == 1, "trying stores nothing"
