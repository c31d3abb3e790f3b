"""In a real headless browser (the fixtures of test_browser_flows.py): a project admin adds a webhook and
sees its secret once, sends a test, opens the delivery (body, headers with the signature masked, the
answer) and resends it; "Remove" is a separate section below the settings. Photographed under artifacts/."""

import pytest

from policies_app.models import Webhook
from tests.receiver import Receiver
from tests.web.test_browser_flows import browser, page_for, photograph, site  # noqa: F401 - fixtures

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("loopback_allowed")]


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


def test_an_admin_sees_the_secret_once_opens_a_delivery_and_resends_it(world, page_for, site, receiver):  # noqa: F811
    page = page_for("admin")
    page.goto(f"{site}/projects/{world.payments.pk}/")
    page.click("text=Add a webhook")
    page.fill("#webhook_name", "alerts")
    page.fill("#webhook_url", receiver.url)
    page.click("button:has-text('Add the webhook')")
    secret = page.locator("#new-webhook-secret").inner_text()
    hook = Webhook.objects.get(name="alerts")
    assert secret == hook.secret
    page.goto(f"{site}/projects/{world.payments.pk}/")
    assert secret not in page.content()

    page.click("a:text-is('alerts')")
    page.click("text=Send a test message")
    page.wait_for_selector("text=The test message is on its way")
    photograph(page, "webhook")
    assert (
        page.locator("h2", has_text="Settings").bounding_box()["y"]
        < page.locator("button", has_text="Remove the webhook").bounding_box()["y"]
    )

    delivery = hook.deliveries.get()
    page.click(f"a:text-is('#{delivery.pk}')")
    page.wait_for_selector("#delivery-headers")
    assert "HTTP 200" in page.locator("#delivery-answer").inner_text()
    assert "webhook-signature" in page.locator("#delivery-headers").inner_text()
    assert receiver.received[0].headers["webhook-signature"] not in page.content()
    photograph(page, "webhook-delivery")
    page.click("button:has-text('Resend')")
    page.wait_for_selector("text=Sent again as delivery")
    assert len(receiver.received) == 2
    assert receiver.received[1].body == receiver.received[0].body
