"""Webhooks are no way into the network (issue 16, findings 5, 12 and 13): an internal address is a 400
naming ``url`` when a webhook is created or changed (the API and the project page, as a project admin:
the lowest role that manages webhooks), a recorded failure of a generic class when it is met at delivery
time, and "send test" runs in a worker and tells no more than the class. Redirects are failures and take
nothing to the other host; requests are signed as Standard Webhooks says; chat text cannot mention
@channel or forge links. Through the real gunicorn and a real Celery worker where the finding was found."""

import json
import socket
import threading
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta

import pytest
import standardwebhooks
from django.urls import reverse

from policies_app.accounts import tokens
from policies_app.guards.egress import REFUSED
from policies_app.models import ProjectMembership, WebhookDelivery
from policies_app.notifications import webhooks
from tests.builders import make_user
from tests.guards.servers import close_listener
from tests.processes import RedisServer, celery_worker, free_port, gunicorn, wait_until
from tests.receiver import Receiver

INTERNAL_URLS = [
    "http://127.0.0.1:{port}/hook",
    "http://[::1]:{port}/hook",
    "http://0x7f000001:{port}/hook",
    "http://2130706433:{port}/hook",
    "http://127.1:{port}/hook",
    "http://[::ffff:127.0.0.1]:{port}/hook",
    "http://localhost:{port}/hook",
    "http://169.254.169.254/latest/meta-data/",
    "http://10.0.0.1/hook",
]


def call(base: str, method: str, path: str, token: str, body: dict | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(
        base + path,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as answer:
        return answer.code, json.loads(answer.read() or b"{}")


@pytest.fixture
def pat(world):
    """A project admin of Payments: the lowest role that may add, change and test its webhooks."""
    user = make_user("pat")
    ProjectMembership.objects.create(project=world.payments, user=user, role="admin")
    return user


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


@pytest.mark.django_db(transaction=True)
def test_a_project_admin_cannot_point_a_webhook_at_an_internal_address_through_the_real_server(
    world, pat, receiver, tmp_path
):
    _, key = tokens.create_token(pat, "ci")
    with gunicorn(tmp_path) as base:
        for template in INTERNAL_URLS:
            url = template.format(port=receiver.server.server_address[1])
            status, body = call(
                base,
                "POST",
                "/api/v1/webhooks/",
                key,
                {"project": world.payments.pk, "name": "h", "url": url},
            )
            # Refused by the guard, or already by the URL syntax check (0x7f000001 is no host name to it).
            assert status == 400 and list(body) == ["url"], (url, body)
            assert body["url"] in ([REFUSED], ["Enter a valid URL."]), (url, body)
        hook = webhooks.create_webhook(world.admin, world.payments, name="public", url="http://8.8.8.8/hook")
        status, body = call(base, "PATCH", f"/api/v1/webhooks/{hook.pk}/", key, {"url": "http://[::1]:80/x"})
        assert (status, body) == (400, {"url": [REFUSED]})
    hook.refresh_from_db()
    assert hook.url == "http://8.8.8.8/hook"
    assert receiver.received == []


@pytest.mark.django_db
def test_the_project_page_refuses_an_internal_webhook_address_by_field(client, world, pat):
    client.force_login(pat)
    page = reverse("web:project-detail", args=[world.payments.pk])
    answer = client.post(
        page, {"action": "add_webhook", "name": "meta", "url": "http://169.254.169.254/", "format": "json"}
    )
    assert answer.status_code == 400
    assert "not allowed" in answer.content.decode()
    assert not world.payments.webhooks.exists()


def silent_server() -> tuple[socket.socket, int]:
    """Accepts connections and never answers (a filtered port looks like this from outside)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    return listener, listener.getsockname()[1]


@pytest.mark.django_db(transaction=True)
def test_send_test_runs_in_a_worker_and_tells_only_a_generic_class_through_the_real_server(
    world, pat, receiver, tmp_path
):
    # The operator allows 127.0.0.1 (the receivers' address), so these targets pass the guard: what a
    # project admin learns of them is then only delivered, "could not be reached", or the HTTP status.
    allowed = {"EGRESS_ALLOWED_NETWORKS": "127.0.0.1/32", "WEBHOOK_TIMEOUT_SECONDS": "1"}
    _, key = tokens.create_token(pat, "ci")
    silent, silent_port = silent_server()
    redis = RedisServer(tmp_path)
    redis.start()
    targets = {
        "accepting": receiver.url,
        "closed": f"http://127.0.0.1:{free_port()}/hook",
        "silent": f"http://127.0.0.1:{silent_port}/hook",
    }
    try:
        with gunicorn(tmp_path, CELERY_BROKER_URL=redis.url, **allowed) as base:
            hooks = {}
            for name, url in targets.items():
                status, body = call(
                    base,
                    "POST",
                    "/api/v1/webhooks/",
                    key,
                    {"project": world.payments.pk, "name": name, "url": url},
                )
                assert status == 201, body
                hooks[name] = body["id"]
            # No worker yet: the answer cannot depend on the target at all.
            answers = {
                name: call(base, "POST", f"/api/v1/webhooks/{hook}/test/", key)
                for name, hook in hooks.items()
            }
            for status, body in answers.values():
                assert status == 202 and body["status"] == "pending" and body["error"] == ""
                assert body["response_code"] is None
            with celery_worker(tmp_path, redis.url, **allowed):
                wait_until(
                    lambda: not WebhookDelivery.objects.filter(status="pending").exists(),
                    60,
                    what="the worker sending the three tests",
                )
            history = {
                name: call(base, "GET", f"/api/v1/webhooks/{hook}/deliveries/", key)[1]["results"]
                for name, hook in hooks.items()
            }
    finally:
        redis.stop()
        close_listener(silent)
    [accepted] = history["accepting"]
    assert (accepted["status"], accepted["event"], accepted["response_code"]) == ("delivered", "ping", 200)
    [closed] = history["closed"]
    [silent_answer] = history["silent"]
    # A closed port and a port that never answers read the same: no port scanner.
    for failed in (closed, silent_answer):
        assert (failed["status"], failed["response_code"], failed["error"]) == (
            "failed",
            None,
            webhooks.FAILURES["unreachable"],
        )
    assert len(receiver.received) == 1


@pytest.mark.django_db
def test_an_address_refused_at_delivery_time_is_a_recorded_failure(
    world, receiver, settings, django_capture_on_commit_callbacks
):
    settings.EGRESS_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    hook = webhooks.create_webhook(world.admin, world.payments, name="h", url=receiver.url)
    settings.EGRESS_ALLOWED_NETWORKS = []  # the operator withdrew it (or the name now resolves inside)
    with django_capture_on_commit_callbacks(execute=True):
        delivery = webhooks.send_test(world.admin, hook)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.response_code, delivery.error) == (
        "failed",
        None,
        webhooks.FAILURES["refused"],
    )
    assert receiver.received == []


@pytest.mark.django_db
def test_a_redirect_is_a_failure_and_the_signed_request_never_reaches_the_other_host(
    world, settings, django_capture_on_commit_callbacks
):
    settings.EGRESS_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    elsewhere = Receiver()
    redirecting = Receiver(answers=[307])
    try:
        hook = webhooks.create_webhook(world.admin, world.payments, name="h", url=redirecting.url)
        with django_capture_on_commit_callbacks(execute=True):
            delivery = webhooks.send_test(world.admin, hook)
        delivery.refresh_from_db()
        assert (delivery.status, delivery.response_code, delivery.error) == (
            "failed",
            307,
            webhooks.FAILURES["redirect"],
        )
        assert len(redirecting.received) == 1 and elsewhere.received == []
    finally:
        elsewhere.close()
        redirecting.close()


@pytest.mark.django_db
def test_requests_are_signed_as_standard_webhooks_say_and_a_replay_is_refused(gated, run, receiver, settings):
    settings.EGRESS_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    settings.WEBHOOK_RETRY_BASE_SECONDS = 10
    hook = webhooks.create_webhook(
        gated.admin, gated.payments, name="h", url=receiver.url, statuses=["pending_approval"]
    )
    verifier = standardwebhooks.Webhook(hook.secret)
    receiver.answers = [500]
    from policies_app.deployments import lifecycle

    run(lifecycle.trigger_deployment, gated.environment, gated.bob)
    WebhookDelivery.objects.update(next_attempt_at=datetime.now(UTC))
    webhooks.resend_due_deliveries()
    first, retry = receiver.received
    for message in (first, retry):
        assert verifier.verify(message.body, message.headers)["deployment"]["status"] == "pending_approval"
    assert first.headers["webhook-id"] == retry.headers["webhook-id"], "receivers drop duplicates by id"
    # The timestamp is signed: the same message presented ten minutes later is refused.
    stale = {
        **first.headers,
        "webhook-timestamp": str(int((datetime.now(UTC) - timedelta(minutes=10)).timestamp())),
    }
    with pytest.raises(standardwebhooks.webhooks.WebhookVerificationError):
        verifier.verify(first.body, stale)
    with pytest.raises(standardwebhooks.webhooks.WebhookVerificationError):
        verifier.verify(first.body.replace(b"pending_approval", b"approved"), first.headers)


@pytest.mark.django_db
def test_a_secret_not_in_the_whsec_form_is_refused_by_field_and_a_made_one_is_shown_once(
    api, world, settings
):
    settings.EGRESS_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    admin = api(world.admin)
    fields = {"project": world.payments.pk, "name": "h", "url": "http://127.0.0.1:9/hook"}
    refused = admin.post("/api/v1/webhooks/", {**fields, "secret": "s3cret"}, format="json")
    assert refused.status_code == 400 and list(refused.json()) == ["secret"]
    short = admin.post("/api/v1/webhooks/", {**fields, "secret": "whsec_c2hvcnQ="}, format="json")
    assert short.status_code == 400 and list(short.json()) == ["secret"]
    created = admin.post("/api/v1/webhooks/", fields, format="json")
    secret = created.json()["secret"]
    assert secret.startswith("whsec_") and webhooks.refusal_to_use_secret(secret) is None
    assert secret not in admin.get(f"/api/v1/webhooks/{created.json()['id']}/").content.decode()


@pytest.mark.django_db
def test_chat_text_cannot_mention_everyone_or_forge_a_link(gated, run, receiver, settings):
    settings.EGRESS_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    gated.environment.name = "<!channel> & <https://evil.example/approve|Approve here>"
    gated.environment.save()
    gated.payments.name = "<@U024BE7LH>"
    gated.payments.save()
    webhooks.create_webhook(
        gated.admin,
        gated.platform,
        name="slack",
        url=receiver.url,
        format="chat",
        statuses=["pending_approval"],
    )
    from policies_app.deployments import lifecycle

    run(lifecycle.trigger_deployment, gated.environment, gated.bob)
    [message] = [item.json()["text"] for item in receiver.received]
    # Slack's message formatting: &, < and > escaped; nothing the names hold opens a control sequence.
    assert "<" not in message and ">" not in message.replace("→", "")
    assert "&lt;!channel&gt; &amp; &lt;https://evil.example/approve|Approve here&gt;" in message
    assert "&lt;@U024BE7LH&gt;" in message
