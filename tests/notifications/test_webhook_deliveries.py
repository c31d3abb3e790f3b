"""A webhook's secret is shown once (the create answer), never again; each delivery can be opened (body,
the headers of its last attempt with the signature masked, the answer) and sent again as a new delivery
through the outbox, to a real receiver on loopback; "Remove" is away from "Send a test"."""

import pytest
import standardwebhooks
from django.urls import reverse

from policies_app.models import AuditEntry, WebhookDelivery
from policies_app.notifications import webhooks
from tests.builders import api_client_for
from tests.receiver import Receiver

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


@pytest.fixture
def hook(world, receiver):
    return webhooks.create_webhook(world.admin, world.payments, name="h", url=receiver.url)


def test_the_secret_is_in_the_create_answer_only(world, receiver, client):
    api = api_client_for(world.admin)
    created = api.post(
        "/api/v1/webhooks/", {"project": world.payments.pk, "name": "new", "url": receiver.url}, format="json"
    )
    assert created.status_code == 201
    secret = created.json()["secret"]
    assert secret.startswith("whsec_")
    one = api.get(f"/api/v1/webhooks/{created.json()['id']}/")
    assert "secret" not in one.json() and secret not in one.content.decode()
    assert secret not in api.get("/api/v1/webhooks/").content.decode()
    client.force_login(world.admin)
    page = client.get(reverse("web:webhook-detail", args=[created.json()["id"]])).content.decode()
    assert secret not in page


def test_a_delivery_opens_with_the_headers_sent_signature_masked_and_the_answer(world, hook, receiver, run):
    sent = run(webhooks.send_test, world.admin, hook)
    api = api_client_for(world.admin)
    opened = api.get(f"/api/v1/webhooks/{hook.pk}/deliveries/{sent.pk}/").json()
    [received] = receiver.received
    assert opened["status"] == "delivered" and opened["response_code"] == 200
    assert opened["body"] == received.body.decode()
    shown = opened["request_headers"]
    assert shown["webhook-id"] == received.headers["webhook-id"] == f"msg_{sent.pk}"
    assert shown["webhook-timestamp"] == received.headers["webhook-timestamp"]
    assert shown["webhook-signature"] != received.headers["webhook-signature"]
    assert shown["webhook-signature"].startswith("v1,•")
    assert opened["last_attempt_at"] is not None
    text = api.get(f"/api/v1/webhooks/{hook.pk}/deliveries/{sent.pk}/").content.decode()
    assert hook.secret not in text and received.headers["webhook-signature"].split(",", 1)[1] not in text


def test_a_delivery_of_another_webhook_is_not_found_under_this_one(world, hook, receiver):
    other = webhooks.create_webhook(world.admin, world.payments, name="other", url=receiver.url)
    theirs = WebhookDelivery.objects.create(webhook=other, event="ping", body="{}")
    api = api_client_for(world.admin)
    assert api.get(f"/api/v1/webhooks/{hook.pk}/deliveries/{theirs.pk}/").status_code == 404
    assert api.post(f"/api/v1/webhooks/{hook.pk}/deliveries/{theirs.pk}/resend/").status_code == 404


def test_resend_is_a_new_delivery_of_the_same_body_sent_through_the_outbox(
    world, hook, receiver, django_capture_on_commit_callbacks
):
    receiver.answers = [500]
    with django_capture_on_commit_callbacks(execute=True):
        first = webhooks.send_test(world.admin, hook)
    first.refresh_from_db()
    assert (first.status, first.response_code) == ("failed", 500)
    api = api_client_for(world.admin)
    with django_capture_on_commit_callbacks(execute=True):
        answer = api.post(f"/api/v1/webhooks/{hook.pk}/deliveries/{first.pk}/resend/")
    assert answer.status_code == 202
    again = WebhookDelivery.objects.get(pk=answer.json()["id"])
    assert (again.status, again.response_code, again.resent_from_id) == ("delivered", 200, first.pk)
    original, resent = receiver.received
    assert resent.body == original.body
    assert resent.headers["webhook-id"] == f"msg_{again.pk}" != original.headers["webhook-id"]
    # Signed anew, with the webhook's secret: a receiver checking signatures takes it.
    standardwebhooks.Webhook(hook.secret).verify(resent.body, resent.headers)
    entry = AuditEntry.objects.get(action="webhook.delivery_resent")
    assert entry.actor == world.admin and entry.after == {"delivery": first.pk, "resent_as": again.pk}


def test_only_admins_resend_and_the_page_shows_the_delivery_and_resends_it(
    world, hook, receiver, client, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        sent = webhooks.send_test(world.admin, hook)
    page = reverse("web:webhook-delivery", args=[hook.pk, sent.pk])
    client.force_login(world.alice)  # an approver, not an admin of Payments
    assert client.get(page).status_code == 404
    assert client.post(page, {"action": "resend"}).status_code == 404
    assert hook.deliveries.count() == 1
    client.force_login(world.admin)
    html = client.get(page).content.decode()
    assert "webhook-timestamp" in html and "HTTP 200" in html and "Test message" not in html
    assert "&quot;event&quot;: &quot;ping&quot;" in html and "v1,••" in html
    with django_capture_on_commit_callbacks(execute=True):
        resent = client.post(page, {"action": "resend"}, follow=True)
    again = hook.deliveries.exclude(pk=sent.pk).get()
    assert resent.redirect_chain[-1][0] == reverse("web:webhook-delivery", args=[hook.pk, again.pk])
    assert f"Sent again as delivery #{again.pk}" in resent.content.decode()
    assert f"#{sent.pk}</a>" in resent.content.decode(), "the new delivery links to the one it resends"
    assert len(receiver.received) == 2


def test_remove_is_away_from_send_a_test_on_the_webhook_page(world, hook, client):
    client.force_login(world.admin)
    html = client.get(reverse("web:webhook-detail", args=[hook.pk])).content.decode()
    test_at = html.index('value="test"')
    settings_at = html.index("<h2>Settings</h2>")
    remove_at = html.index('value="delete"')
    assert test_at < settings_at < remove_at
    assert html.index("<h2>Remove this webhook</h2>") < remove_at


def test_a_duplicate_webhook_name_on_the_project_page_is_named_beside_its_field(world, client, receiver):
    # Was a 500: the refusal's field errors were put on the (unbound) settings form.
    client.force_login(world.admin)
    page = reverse("web:project-detail", args=[world.payments.pk])
    data = {"action": "add_webhook", "name": "a", "url": receiver.url, "format": "json", "active": "on"}
    assert client.post(page, data).status_code == 200
    again = client.post(page, data)
    assert again.status_code == 400
    assert "The project already has a webhook of this name." in again.content.decode()
    assert world.payments.webhooks.count() == 1
