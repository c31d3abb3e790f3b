"""Approve from Slack: a waiting deployment is posted to the channel with Block Kit buttons through a
real HTTP server answering as Slack's Web API (tests/slack_api.py checks the token and the JSON body);
clicks come back signed exactly as Slack signs them (``v0=`` HMAC-SHA256 of ``v0:{timestamp}:{body}``)
and run the web's use case and checks; a bad or old signature, an unknown email, a user who may not
approve and a self-approval change nothing."""

import hashlib
import hmac
import json
import time
from urllib.parse import urlencode

import pytest

from policies_app.deployments import lifecycle
from policies_app.models import Approval, ProjectMembership, SlackApprovalMessage
from policies_app.notifications import slack
from tests.builders import make_policy, make_user, plan_with
from tests.slack_api import FakeSlack

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]

TOKEN = "xoxb-1111-2222-abcdefghijkl"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
CHANNEL = "C0APPROVALS"
PATH = "/integrations/slack/interactions/"
TWO_APPROVERS = """package env0

pending contains "needs two approvers" if count(input.approvers) < 2
"""


@pytest.fixture
def fake_slack(settings):
    server = FakeSlack(token=TOKEN, emails={"UALICE": "Alice@Example.com", "UBOB": "bob@example.com"})
    settings.SLACK_BOT_TOKEN = TOKEN
    settings.SLACK_SIGNING_SECRET = SIGNING_SECRET
    settings.SLACK_CHANNEL = CHANNEL
    settings.SLACK_API_URL = server.url
    yield server
    server.close()


@pytest.fixture
def waiting(gated, run, fake_slack):
    deployment, _ = run(
        lifecycle.trigger_deployment,
        gated.environment,
        gated.bob,
        plan=plan_with(("aws_s3_bucket.a", ["create"])),
    )
    deployment.refresh_from_db()
    assert deployment.status == "pending_approval"
    return deployment


def signed(body: str, *, at: int | None = None, secret: str = SIGNING_SECRET) -> dict[str, str]:
    timestamp = str(int(time.time()) if at is None else at)
    digest = hmac.new(secret.encode(), f"v0:{timestamp}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"HTTP_X_SLACK_REQUEST_TIMESTAMP": timestamp, "HTTP_X_SLACK_SIGNATURE": f"v0={digest}"}


def click(deployment, slack_user: str, action: str = slack.APPROVE, **user_fields) -> str:
    payload = {
        "type": "block_actions",
        "user": {"id": slack_user, "username": slack_user.lower(), "team_id": "T1", **user_fields},
        "team": {"id": "T1"},
        "container": {"type": "message", "channel_id": CHANNEL, "message_ts": "1700000000.000100"},
        "channel": {"id": CHANNEL},
        "message": {"ts": "1700000000.000100"},
        "response_url": "https://hooks.slack.com/actions/T1/1/abc",
        "actions": [
            {"action_id": action, "block_id": f"deployment_{deployment.pk}", "value": str(deployment.pk)}
        ],
    }
    return urlencode({"payload": json.dumps(payload)})


def post(client, body: str, headers: dict[str, str]):
    return client.post(PATH, data=body, content_type="application/x-www-form-urlencoded", **headers)


def test_a_waiting_deployment_is_posted_to_the_channel_with_approve_and_reject_buttons(waiting, fake_slack):
    [call] = fake_slack.called("chat.postMessage")
    assert call.headers["authorization"] == f"Bearer {TOKEN}"
    assert call.headers["content-type"].startswith("application/json")
    assert call.answer["ok"] is True and call.arguments["channel"] == CHANNEL
    actions = next(block for block in call.arguments["blocks"] if block["type"] == "actions")["elements"]
    assert [(a["action_id"], a.get("value")) for a in actions[:2]] == [
        (slack.APPROVE, str(waiting.pk)),
        (slack.REJECT, str(waiting.pk)),
    ]
    assert actions[2]["url"].endswith(f"/deployments/{waiting.pk}/")
    assert "needs one approver" in call.arguments["blocks"][0]["text"]["text"]
    message = SlackApprovalMessage.objects.get(deployment=waiting)
    assert (message.status, message.channel, message.ts) == ("delivered", CHANNEL, "1700000000.000100")


def test_a_wrong_token_is_refused_by_slack_and_the_message_is_retried_later(gated, run, fake_slack, settings):
    settings.SLACK_BOT_TOKEN = "xoxb-wrong"
    deployment, _ = run(lifecycle.trigger_deployment, gated.environment, gated.bob, plan=plan_with())
    message = SlackApprovalMessage.objects.get(deployment=deployment)
    assert (message.status, message.error, message.attempts) == ("pending", "invalid_auth", 1)
    assert TOKEN not in message.error


def test_a_signed_click_approves_as_the_user_with_that_email_and_updates_the_message(
    waiting, fake_slack, client, gated, django_capture_on_commit_callbacks
):
    body = click(waiting, "UALICE")
    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, body, signed(body))
    assert response.status_code == 200
    assert list(Approval.objects.filter(deployment=waiting).values_list("user__username", "decision")) == [
        ("alice", "approve")
    ]
    [lookup] = fake_slack.called("users.info")
    assert lookup.arguments == {"user": "UALICE"} and lookup.headers["authorization"] == f"Bearer {TOKEN}"
    updates = fake_slack.called("chat.update")
    assert updates, "the message is updated"
    for update in updates:
        assert (update.arguments["channel"], update.arguments["ts"]) == (CHANNEL, "1700000000.000100")
    waiting.refresh_from_db()
    assert waiting.status == "approved"
    # Evaluated with the approval: the message says who approved and the outcome, and offers only the page.
    assert updates[-1].arguments["text"] == "alice approved; now Approved."
    actions = next(block for block in updates[-1].arguments["blocks"] if block["type"] == "actions")[
        "elements"
    ]
    assert [a["action_id"] for a in actions] == ["deployment_open"]


def test_an_approval_that_leaves_it_waiting_shows_who_approved_and_keeps_the_buttons(
    gated, run, fake_slack, client, django_capture_on_commit_callbacks
):
    gated.platform.approval_policies.add(make_policy("two approvers", TWO_APPROVERS))
    deployment, _ = run(lifecycle.trigger_deployment, gated.environment, gated.bob, plan=plan_with())
    body = click(deployment, "UALICE")
    with django_capture_on_commit_callbacks(execute=True):
        assert post(client, body, signed(body)).status_code == 200
    deployment.refresh_from_db()
    assert deployment.status == "pending_approval"
    [update] = fake_slack.called("chat.update")
    assert update.arguments["text"] == "alice approved; still waits for approval."
    actions = next(block for block in update.arguments["blocks"] if block["type"] == "actions")["elements"]
    assert [a["action_id"] for a in actions] == [slack.APPROVE, slack.REJECT, "deployment_open"]


def test_a_click_with_the_email_in_the_payload_needs_no_lookup_and_a_reject_is_final(
    waiting, fake_slack, client, django_capture_on_commit_callbacks
):
    body = click(waiting, "UOTHER", slack.REJECT, email="sam@example.com")
    with django_capture_on_commit_callbacks(execute=True):
        assert post(client, body, signed(body)).status_code == 200
    assert not fake_slack.called("users.info")
    waiting.refresh_from_db()
    assert (waiting.status, waiting.decision) == ("rejected", "deny")
    [update] = fake_slack.called("chat.update")
    assert update.arguments["text"] == "sam rejected; now Rejected."


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param(lambda body: signed(body, secret="not-the-secret"), id="wrong secret"),
        pytest.param(lambda body: signed(body, at=int(time.time()) - 301), id="older than five minutes"),
        pytest.param(lambda body: signed(body + "&x=1"), id="body changed after signing"),
        pytest.param(lambda body: {}, id="unsigned"),
        pytest.param(
            lambda body: {**signed(body), "HTTP_X_SLACK_REQUEST_TIMESTAMP": "soon"},
            id="timestamp not a number",
        ),
    ],
)
def test_a_request_not_signed_by_slack_now_is_refused_and_changes_nothing(
    waiting, fake_slack, client, headers
):
    body = click(waiting, "UALICE")
    response = post(client, body, headers(body))
    assert response.status_code == 401
    assert not Approval.objects.filter(deployment=waiting).exists()
    assert [call.method for call in fake_slack.calls] == ["chat.postMessage"]


def test_a_replayed_click_is_refused_after_five_minutes(waiting, fake_slack, client, monkeypatch):
    body = click(waiting, "UALICE")
    headers = signed(body)
    later = time.time() + 301
    monkeypatch.setattr("slack_sdk.signature.Clock.now", lambda self: later)
    assert post(client, body, headers).status_code == 401
    assert not Approval.objects.filter(deployment=waiting).exists()


def refusal(fake_slack) -> str:
    [ephemeral] = fake_slack.called("chat.postEphemeral")
    assert ephemeral.answer["ok"] is True
    return ephemeral.arguments["text"]


def test_an_unknown_email_gets_an_ephemeral_refusal_and_nothing_changes(waiting, fake_slack, client):
    fake_slack.emails["USTRANGER"] = "stranger@elsewhere.example"
    body = click(waiting, "USTRANGER")
    assert post(client, body, signed(body)).status_code == 200
    assert "No platform account has your Slack email" in refusal(fake_slack)
    assert not Approval.objects.filter(deployment=waiting).exists()
    assert not fake_slack.called("chat.update")


def test_an_email_two_platform_users_share_is_refused(waiting, fake_slack, client):
    twin = make_user("alice2")
    twin.email = "ALICE@example.com"
    twin.save(update_fields=["email"])
    body = click(waiting, "UALICE")
    assert post(client, body, signed(body)).status_code == 200
    assert "No platform account" in refusal(fake_slack)
    assert not Approval.objects.filter(deployment=waiting).exists()


def test_a_user_who_may_not_approve_gets_the_webs_refusal_and_nothing_changes(waiting, fake_slack, client):
    body = click(waiting, "UVERA", email="vera@example.com")  # Vera only views Platform
    assert post(client, body, signed(body)).status_code == 200
    assert refusal(fake_slack).startswith("Nothing was recorded:")
    assert not Approval.objects.filter(deployment=waiting).exists()
    waiting.refresh_from_db()
    assert waiting.status == "pending_approval"


def test_self_approval_is_refused_as_on_the_web(waiting, fake_slack, client, gated):
    # Bob deployed it; as an approver of Payments too he may approve others' deployments, not his own.
    ProjectMembership.objects.create(project=gated.payments, user=gated.bob, role="approver")
    body = click(waiting, "UBOB")
    assert post(client, body, signed(body)).status_code == 200
    assert "You may not approve or reject your own deployment." in refusal(fake_slack)
    assert not Approval.objects.filter(deployment=waiting).exists()


def test_a_second_click_on_a_decided_deployment_is_refused(waiting, fake_slack, client):
    first = click(waiting, "UALICE", slack.REJECT)
    post(client, first, signed(first))
    second = click(waiting, "USAM", email="sam@example.com")
    assert post(client, second, signed(second)).status_code == 200
    assert "not pending approval" in refusal(fake_slack)
    assert Approval.objects.filter(deployment=waiting).count() == 1


def test_without_configuration_the_endpoint_is_not_there(client, settings, world):
    settings.SLACK_SIGNING_SECRET = ""
    body = "payload=%7B%7D"
    assert post(client, body, signed(body, secret="x")).status_code == 404


def test_a_web_decision_updates_the_slack_message_too(waiting, fake_slack, gated, run):
    from policies_app.deployments import approvals

    run(approvals.record_approval, waiting, gated.alice, "reject", "not today")
    [update] = fake_slack.called("chat.update")
    assert update.arguments["text"] == "alice rejected; now Rejected."
    assert (update.arguments["channel"], update.arguments["ts"]) == (CHANNEL, "1700000000.000100")


@pytest.mark.django_db(transaction=True)
def test_through_gunicorn_a_signed_click_approves_and_an_unsigned_one_is_refused(
    gated, fake_slack, tmp_path, run
):
    import urllib.error
    import urllib.request

    from tests.processes import gunicorn, wait_until

    deployment, _ = run(lifecycle.trigger_deployment, gated.environment, gated.bob, plan=plan_with())
    deployment.refresh_from_db()
    assert deployment.status == "pending_approval" and fake_slack.called("chat.postMessage")
    environment = {
        "SLACK_BOT_TOKEN": TOKEN,
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "SLACK_CHANNEL": CHANNEL,
        "SLACK_API_URL": fake_slack.url,
        "EGRESS_ALLOWED_NETWORKS": "127.0.0.1/32",
    }

    def send(body: str, headers: dict[str, str]) -> int:
        request = urllib.request.Request(
            base + PATH,
            data=body.encode(),
            method="POST",
            headers={
                "Content-Type": "application/x-www-form-urlencoded",
                **{
                    name.removeprefix("HTTP_").replace("_", "-").title(): value
                    for name, value in headers.items()
                },
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return answer.status
        except urllib.error.HTTPError as refused:
            return refused.code

    with gunicorn(tmp_path, **environment) as base:
        body = click(deployment, "UALICE")
        assert send(body, signed(body, secret="wrong")) == 401
        assert not Approval.objects.filter(deployment=deployment).exists()
        assert send(body, signed(body)) == 200
        wait_until(lambda: len(fake_slack.called("chat.update")) == 2, 20, what="the message updated twice")
    assert list(Approval.objects.filter(deployment=deployment).values_list("user__username", flat=True)) == [
        "alice"
    ]
    deployment.refresh_from_db()
    assert deployment.status == "approved"
    # Without a broker the evaluation runs as the approval commits: both updates (the approval's, the
    # end of the wait's) tell the outcome.
    texts = [call.arguments["text"] for call in fake_slack.called("chat.update")]
    assert texts == ["alice approved; now Approved."] * 2


def test_with_a_workspace_set_a_member_of_another_workspace_is_refused(waiting, fake_slack, client, settings):
    settings.SLACK_TEAM_ID = "TOURS"
    body = click(waiting, "UALICE")  # the payload's user is of team T1
    assert post(client, body, signed(body)).status_code == 200
    assert "own Slack workspace" in refusal(fake_slack)
    assert not Approval.objects.filter(deployment=waiting).exists()
    settings.SLACK_TEAM_ID = "T1"
    assert post(client, body, signed(body)).status_code == 200
    assert Approval.objects.filter(deployment=waiting, user__username="alice").exists()
