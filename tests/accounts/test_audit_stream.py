"""The audit log streamed to a SIEM, through the real path: entries written by the use cases, a sender woken
after their commit, signed JSON POSTed to a real local receiver (its signature verified with the
``standardwebhooks`` library, as a SIEM would) or written as RFC 5424 lines to a real syslog collector
over UDP and TCP. A decision arrives with its record (sensitive values masked, the input's hash); a
receiver that is down gets every entry later, in order, from the sweeper; an internal address is refused
unless the operator allows it; with no setting, nothing is sent."""

import hashlib
import json
import time

import pytest
import standardwebhooks
from django.db import transaction
from django.test import Client

from policies_app import audit, tasks
from policies_app.accounts import audit_stream
from policies_app.deployments import stored_inputs
from policies_app.guards import egress
from policies_app.guards.masking import MASK
from policies_app.models import AuditEntry, AuditStreamCursor, Evaluation
from policies_app.models.audit import GENESIS_HASH, entry_hash_of
from policies_app.notifications.webhooks import new_secret
from policies_app.ops import metrics
from tests.builders import make_policy
from tests.deployments.test_approval_flow import trigger
from tests.receiver import Receiver, SyslogListener

pytestmark = pytest.mark.django_db

SECRET = new_secret()
TOKEN_PRINTED = """package env0

pending contains msg if {
    msg := sprintf("the deploy token is %s", [input.variables.environment.DEPLOY_TOKEN])
}
"""


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


@pytest.fixture
def streamed(settings):
    settings.AUDIT_STREAM_SECRET = SECRET
    settings.WEBHOOK_TIMEOUT_SECONDS = 2
    return settings


def verified(received) -> dict:
    """The message as a SIEM reads it: only once its Standard Webhooks signature holds."""
    headers = {name.lower(): value for name, value in received.headers.items()}
    return standardwebhooks.Webhook(SECRET).verify(received.body.decode(), headers)


def verified_line(line) -> dict:
    signed = line.data["signature@32473"]
    headers = {
        "webhook-id": signed["id"],
        "webhook-timestamp": signed["timestamp"],
        "webhook-signature": signed["signature"],
    }
    return standardwebhooks.Webhook(SECRET).verify(line.message, headers)


def assert_chained_in_order(messages: list[dict]) -> None:
    """What a SIEM checks: every entry from the first, none missing, each hash its own and the next's."""
    previous, expected = GENESIS_HASH, 1
    for message in messages:
        entry = dict(message["entry"])
        entry_hash, _ = entry.pop("entry_hash"), entry.pop("id")
        assert (entry["sequence"], entry["previous_hash"]) == (expected, previous)
        assert entry_hash_of(entry) == entry_hash
        previous, expected = entry_hash, expected + 1


def write_entries(world, count: int) -> None:
    with transaction.atomic():
        for number in range(count):
            audit.record(world.admin, f"test.entry.{number}", world.platform, after={"number": number})


def test_a_decision_streams_signed_with_its_record_and_the_sensitive_value_masked(
    world, api, streamed, receiver, loopback_allowed, commits_run_on_commit_callbacks
):
    streamed.AUDIT_STREAM_URL = receiver.url
    world.environment.environment_variables = {"DEPLOY_TOKEN": "shared-token-1234"}
    world.environment.sensitive_variables = {"environment": ["DEPLOY_TOKEN"]}
    world.environment.save()
    world.platform.approval_policies.add(make_policy("token printed", TOKEN_PRINTED))

    response = trigger(api(world.bob), world.environment)
    assert response.status_code == 201, response.content

    messages = [verified(received) for received in receiver.received]
    assert [received.headers["webhook-id"] for received in receiver.received] == [
        f"audit_{number}" for number in range(1, AuditEntry.objects.count() + 1)
    ]
    assert_chained_in_order(messages)
    [decision] = [message for message in messages if message["type"] == "deployment.decision"]
    record = decision["decision"]
    evaluation = Evaluation.objects.get(deployment_id=response.json()["id"])
    assert decision["entry"]["action"] == "deployment.decision.pending"
    assert record["deployment"] == evaluation.deployment_id
    assert record["environment"] == {"id": world.environment.pk, "name": world.environment.name}
    assert (record["result"], record["request_type"], record["engine"]) == (
        "pending",
        evaluation.request_type,
        evaluation.engine,
    )
    [outcome] = record["policies"]
    assert outcome["policy"] == "token printed"
    assert record["messages"]["pending"] == [f"the deploy token is {MASK}"]
    text = stored_inputs.input_of(evaluation)
    assert "shared-token-1234" in text  # the engine saw it...
    assert record["input_sha256"] == hashlib.sha256(text.encode()).hexdigest()
    for received in receiver.received:  # ...the SIEM never does, nor the input or the plan
        assert b"shared-token-1234" not in received.body
        assert b"resource_changes" not in received.body
    assert AuditStreamCursor.objects.get(target="webhook").sequence == AuditEntry.objects.count()


def test_a_receiver_that_is_down_gets_every_entry_later_from_the_sweeper_in_order(
    world, streamed, receiver, loopback_allowed, run
):
    streamed.AUDIT_STREAM_URL = receiver.url
    streamed.WEBHOOK_RETRY_BASE_SECONDS = 0.5  # the other wake-ups of the commit find the retry not due
    receiver.answers = [503]
    failures = metrics.AUDIT_STREAM_FAILURES.labels(target="webhook", kind="status")
    failed_before = failures._value.get()

    run(write_entries, world, 3)

    assert [received.headers["webhook-id"] for received in receiver.received] == ["audit_1"]
    cursor = AuditStreamCursor.objects.get(target="webhook")
    assert (cursor.sequence, cursor.failures) == (0, 1)
    assert cursor.last_error and "503" not in cursor.last_error
    assert failures._value.get() == failed_before + 1
    streamed.METRICS_TOKEN = "scrape"
    scraped = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer scrape").content.decode()
    assert 'policy_platform_outbox_lag_seconds{work="audit_stream"}' in scraped
    assert 'policy_platform_audit_stream_failures_total{kind="status",target="webhook"}' in scraped

    time.sleep(0.6)  # the retry is due: the sweep makes it
    run(tasks.resend_lost_notifications_task)

    ids = [received.headers["webhook-id"] for received in receiver.received]
    assert ids == ["audit_1"] + [f"audit_{number}" for number in range(1, 4)]
    messages = [verified(received) for received in receiver.received[1:]]
    assert_chained_in_order(messages)
    assert [message["entry"]["action"] for message in messages] == [f"test.entry.{n}" for n in range(3)]
    cursor.refresh_from_db()
    assert (cursor.sequence, cursor.failures, cursor.last_error) == (3, 0, "")


@pytest.mark.parametrize("protocol", ["udp", "tcp"])
def test_syslog_receives_rfc5424_lines_signed_in_structured_data(
    world, streamed, loopback_allowed, run, protocol
):
    listener = SyslogListener(protocol)
    try:
        streamed.AUDIT_STREAM_SYSLOG = listener.url
        run(write_entries, world, 3)
        lines = listener.wait_for(3)
    finally:
        listener.close()

    assert len(lines) == 3
    assert {(line.priority, line.app, line.msgid) for line in lines} == {
        (13 * 8 + 6, "policy-platform", "audit")
    }
    messages = [verified_line(line) for line in lines]
    assert_chained_in_order(messages)
    assert [line.data["signature@32473"]["id"] for line in lines] == ["audit_1", "audit_2", "audit_3"]
    assert lines[0].timestamp == messages[0]["entry"]["created_at"]
    assert AuditStreamCursor.objects.get(target="syslog").sequence == 3


def test_a_collector_on_an_internal_address_is_refused_unless_the_operator_allows_it(world, streamed, run):
    listener = SyslogListener("udp")
    try:
        streamed.AUDIT_STREAM_SYSLOG = listener.url
        streamed.WEBHOOK_RETRY_BASE_SECONDS = 0
        run(write_entries, world, 2)
        assert listener.wait_for(1, seconds=0.5) == []
        cursor = AuditStreamCursor.objects.get(target="syslog")
        assert cursor.sequence == 0
        assert "not allowed" in cursor.last_error and "127.0.0.1" not in cursor.last_error

        streamed.EGRESS_ALLOWED_NETWORKS = ["127.0.0.1/32"]
        run(tasks.resend_lost_notifications_task)
        lines = listener.wait_for(2)
    finally:
        listener.close()
    assert [verified_line(line)["entry"]["sequence"] for line in lines] == [1, 2]


def test_nothing_is_sent_when_the_stream_is_off(world, receiver, loopback_allowed, run, streamed):
    assert not streamed.AUDIT_STREAM_URL and not streamed.AUDIT_STREAM_SYSLOG  # off by default
    run(write_entries, world, 2)
    run(tasks.resend_lost_notifications_task)
    assert audit_stream.configured_targets() == []
    assert receiver.received == []
    assert not AuditStreamCursor.objects.exists()


def test_a_decision_entry_names_its_evaluation(world, api, commits_run_on_commit_callbacks):
    response = trigger(api(world.bob), world.environment)
    entry = AuditEntry.objects.get(action__startswith="deployment.decision.")
    evaluation = Evaluation.objects.get(deployment_id=response.json()["id"])
    assert entry.after["evaluation"] == evaluation.pk
    assert json.dumps(entry.after)  # plain JSON, hashed with the entry


@pytest.mark.parametrize(
    "target",
    [
        "udp://169.254.169.254:514",
        "tcp://[::1]:601",
        "udp://0x7f000001",
        "tcp://10.0.0.8",
        "tcp://[::ffff:127.0.0.1]:601",
        "http://127.0.0.1:514",
        "udp://",
    ],
)
def test_a_syslog_target_is_checked_by_the_egress_guard(target, settings):
    settings.EGRESS_ALLOWED_NETWORKS = []
    with pytest.raises(egress.EgressRefused) as refused:
        egress.send_frames(target, [b"<110>1 - - - - - - x"], timeout_s=1)
    assert "127.0.0.1" not in refused.value.message and "169.254" not in refused.value.message


def test_an_entry_too_large_for_a_datagram_is_sent_shortened_and_does_not_hold_the_stream_back(
    world, streamed, loopback_allowed, run
):
    listener = SyslogListener("udp")
    try:
        streamed.AUDIT_STREAM_SYSLOG = listener.url

        def write():
            with transaction.atomic():
                audit.record(world.admin, "test.large", world.platform, after={"text": "x" * 100_000})
                audit.record(world.admin, "test.small", world.platform, after={"n": 1})

        run(write)
        lines = listener.wait_for(2)
    finally:
        listener.close()
    large, small = (verified_line(line) for line in lines)
    assert (large["truncated"], large["entry"]["action"], "after" in large["entry"]) == (
        True,
        "test.large",
        False,
    )
    assert (small["entry"]["action"], small["entry"]["after"]) == ("test.small", {"n": 1})
    assert "truncated" not in small
