"""Explanations through the API: each fired rule of a deny/pending/warn policy with its file, line and the
input paths and values it read (on OPA's trace), stored with the evaluation's outcomes and shown in the
API, beside each message on the deployment page, under the gate's reasons and in approval emails; a
value read at a sensitive path is masked as everywhere else."""

import pytest
from django.core import mail
from django.test import Client

from policies_app.guards.masking import MASK
from policies_app.notifications.approval_emails import send_approval_emails
from policies_app.policies import authoring
from policy_gate import gate
from tests.builders import make_policy
from tests.deployments.test_approval_flow import trigger

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.usefixtures("commits_run_on_commit_callbacks"),
]

PUBLIC_BUCKETS = """package env0

deny contains msg if {
    some change in input.plan.resource_changes
    change.change.after.acl == "public-read"
    msg := sprintf("%s is public", [change.address])
}
"""
TOKEN_IN_USE = """package env0

pending contains "the deploy token is the shared one" if {
    input.variables.environment.DEPLOY_TOKEN == "shared-token-1234"
}
"""


def bucket(address: str, acl: str) -> dict:
    return {
        "address": address,
        "type": "aws_s3_bucket",
        "name": address.split(".")[-1],
        "change": {"actions": ["create"], "before": None, "after": {"acl": acl, "bucket": address}},
    }


PLAN = {
    "format_version": "1.2",
    "resource_changes": [
        bucket("aws_s3_bucket.private", "private"),
        bucket("aws_s3_bucket.logs", "public-read"),
    ],
}


def deploy(world, api) -> dict:
    response = trigger(api(world.bob), world.environment, plan=PLAN)
    assert response.status_code in (200, 201), response.content
    return api(world.bob).get(f"/api/v1/deployments/{response.json()['id']}/").json()


def outcome_of(deployment: dict, policy: str) -> dict:
    outcomes = deployment["evaluations"][-1]["outcomes"]
    return next(outcome for outcome in outcomes if outcome["policy"] == policy)


def test_a_deny_names_its_rule_file_line_and_the_value_it_read(world, api):
    world.platform.approval_policies.add(make_policy("public buckets", PUBLIC_BUCKETS))

    deployment = deploy(world, api)

    assert deployment["decision"] == "deny"
    [explained] = outcome_of(deployment, "public buckets")["explanation"]
    assert explained["message"] == "aws_s3_bucket.logs is public"
    assert (explained["rule"], explained["file"], explained["line"]) == ("deny", "main.rego", 3)
    assert {"path": "input.plan.resource_changes[1].change.after.acl", "value": "public-read"} in explained[
        "reads"
    ]
    assert {"path": "input.plan.resource_changes[1].address", "value": "aws_s3_bucket.logs"} in explained[
        "reads"
    ]

    # The page shows it beside the message, to anyone who may see the deployment.
    client = Client()
    client.force_login(world.bob)
    page = client.get(f"/deployments/{deployment['id']}/").content.decode()
    assert "from deny rule at main.rego:3, read input.plan.resource_changes[1].change.after.acl" in page

    # The gate prints it under the reason.
    printed: list[str] = []
    gate.report_final(deployment, printed.append)
    reason = printed.index("  deny: aws_s3_bucket.logs is public")
    assert printed[reason + 1].startswith(
        '    from deny rule at main.rego:3 read input.plan.resource_changes[1].change.after.acl = "public-read"'
    )


def test_a_value_read_at_a_sensitive_path_is_masked(world, api):
    world.environment.environment_variables = {"DEPLOY_TOKEN": "shared-token-1234"}
    world.environment.sensitive_variables = {"environment": ["DEPLOY_TOKEN"]}
    world.environment.save()
    world.platform.approval_policies.add(make_policy("token in use", TOKEN_IN_USE))

    deployment = deploy(world, api)

    assert deployment["status"] == "pending_approval"
    [explained] = outcome_of(deployment, "token in use")["explanation"]
    assert explained["reads"] == [{"path": "input.variables.environment.DEPLOY_TOKEN", "value": MASK}]
    client = Client()
    client.force_login(world.bob)
    page = client.get(f"/deployments/{deployment['id']}/").content.decode()
    assert "from pending rule at main.rego:3, read input.variables.environment.DEPLOY_TOKEN" in page
    assert "shared-token-1234" not in page
    assert "shared-token-1234" not in str(deployment)

    # The approvers' email says why, in one line, masked too.
    send_approval_emails(deployment["id"])
    assert mail.outbox, "an approver was emailed"
    body = mail.outbox[0].body
    assert "  (from pending rule at main.rego:3, read input.variables.environment.DEPLOY_TOKEN" in body
    assert "shared-token-1234" not in body


def test_an_allowed_deployment_costs_no_explanation(world, api):
    world.platform.approval_policies.add(make_policy("public buckets", PUBLIC_BUCKETS))
    response = trigger(api(world.bob), world.environment)  # one bucket, created without an acl

    deployment = api(world.bob).get(f"/api/v1/deployments/{response.json()['id']}/").json()

    assert "explanation" not in outcome_of(deployment, "public buckets")


PUBLIC_BUCKETS_V0_WITH_A_HELPER = """package env0

deny[msg] {
    change := input.plan.resource_changes[_]
    is_public(change)
    msg := sprintf("%s is public", [change.address])
}

is_public(change) {
    change.change.after.acl == "public-read"
}
"""


def test_what_a_helper_function_read_counts_as_read_by_the_rule_that_called_it(world, api):
    world.platform.approval_policies.add(make_policy("public buckets", PUBLIC_BUCKETS_V0_WITH_A_HELPER, "v0"))

    deployment = deploy(world, api)

    [explained] = outcome_of(deployment, "public buckets")["explanation"]
    assert (explained["rule"], explained["line"], explained["message"]) == (
        "deny",
        3,
        "aws_s3_bucket.logs is public",
    )
    assert explained["reads"] == [
        {"path": "input.plan.resource_changes[1].change.after.acl", "value": "public-read"},
        {"path": "input.plan.resource_changes[1].address", "value": "aws_s3_bucket.logs"},
    ]


def test_a_message_an_enforcement_level_prefixed_keeps_its_explanation(world, api):
    policy = make_policy("public buckets", PUBLIC_BUCKETS)
    authoring.revise_policy(policy, enforcement="advisory")
    world.platform.approval_policies.add(policy)

    deployment = deploy(world, api)

    assert deployment["messages"]["warn"] == ["[advisory] aws_s3_bucket.logs is public"]
    client = Client()
    client.force_login(world.bob)
    page = client.get(f"/deployments/{deployment['id']}/").content.decode()
    assert "from deny rule at main.rego:3, read input.plan.resource_changes[1].change.after.acl" in page
    printed: list[str] = []
    gate.report_final({**deployment, "status": "released"}, printed.append)
    reason = printed.index("  warn: [advisory] aws_s3_bucket.logs is public")
    assert printed[reason + 1].startswith("    from deny rule at main.rego:3 read ")


def test_the_decision_is_recorded_before_its_explanation_which_a_worker_adds_and_a_sweeper_resends(
    world, api
):
    from datetime import timedelta

    from django.utils import timezone

    from policies_app.deployments.evaluation import judge, pinned_revisions
    from policies_app.deployments.explanations import explain_evaluation, resend_due_explanations
    from policies_app.models import Deployment, Evaluation

    world.platform.approval_policies.add(make_policy("public buckets", PUBLIC_BUCKETS))
    deployment = deploy(world, api)
    evaluation = Evaluation.objects.get(pk=deployment["evaluations"][-1]["id"])
    assert evaluation.explanations_due_at is None  # the woken task explained it after the commit
    assert deployment["evaluations"][-1]["explanations_pending"] is False
    explained = outcome_of(deployment, "public buckets")["explanation"]

    # Judging alone decides without explaining: the explanation is due work, not part of the decision.
    row = Deployment.objects.get(pk=deployment["id"])
    verdict = judge(row, evaluation.request_type, pinned_revisions(row))
    assert verdict.decision == "deny" and verdict.explanations_due
    assert all("explanation" not in outcome for outcome in verdict.outcomes)

    # A lost task: the row still says the explanation is due, the page and the API say it is coming.
    without = [{k: v for k, v in o.items() if k != "explanation"} for o in evaluation.outcomes]
    sent_long_ago = timezone.now() - timedelta(hours=1)
    Evaluation.objects.filter(pk=evaluation.pk).update(outcomes=without, explanations_due_at=sent_long_ago)
    shown = api(world.bob).get(f"/api/v1/deployments/{deployment['id']}/").json()
    assert shown["evaluations"][-1]["explanations_pending"] is True
    assert "explanation" not in outcome_of(shown, "public buckets")
    client = Client()
    client.force_login(world.bob)
    page = client.get(f"/deployments/{deployment['id']}/").content.decode()
    assert "Explanation being prepared." in page

    # The sweeper sends it again; the worker stores it once.
    assert resend_due_explanations() == [evaluation.pk]
    shown = api(world.bob).get(f"/api/v1/deployments/{deployment['id']}/").json()
    assert shown["evaluations"][-1]["explanations_pending"] is False
    assert outcome_of(shown, "public buckets")["explanation"] == explained
    assert explain_evaluation(evaluation.pk) is False  # already done: a redelivered task writes nothing
    assert resend_due_explanations() == []


def test_an_approval_email_sent_before_the_explanation_task_ran_still_says_why(world, api):
    from policies_app.models import ApprovalRequestEmail, Evaluation

    world.platform.approval_policies.add(make_policy("token in use", TOKEN_IN_USE))
    world.environment.environment_variables = {"DEPLOY_TOKEN": "shared-token-1234"}
    world.environment.save()
    deployment = deploy(world, api)
    evaluation = Evaluation.objects.get(pk=deployment["evaluations"][-1]["id"])
    without = [{k: v for k, v in o.items() if k != "explanation"} for o in evaluation.outcomes]
    Evaluation.objects.filter(pk=evaluation.pk).update(
        outcomes=without, explanations_due_at=evaluation.created_at
    )
    ApprovalRequestEmail.objects.filter(deployment_id=deployment["id"]).update(sent_at=None)  # not sent yet
    mail.outbox.clear()

    send_approval_emails(deployment["id"])

    assert mail.outbox, "an approver was emailed"
    assert (
        "  (from pending rule at main.rego:3, read input.variables.environment.DEPLOY_TOKEN"
        in mail.outbox[0].body
    )
    assert Evaluation.objects.get(pk=evaluation.pk).explanations_due_at is None


TOKEN_AS_A_KEY = """package env0

pending contains "checked" if {
    not input.variables.environment[input.variables.environment.DEPLOY_TOKEN]
}
"""


def test_a_sensitive_value_used_as_a_key_is_not_shown_in_a_read_path(world, api):
    """Review: the paths an explanation shows are the input's keys a rule read, and a rule may read at a
    key it computed from a sensitive value; the paths are scrubbed as the values are."""
    world.environment.environment_variables = {"DEPLOY_TOKEN": "shared-token-1234"}
    world.environment.sensitive_variables = {"environment": ["DEPLOY_TOKEN"]}
    world.environment.save()
    world.platform.approval_policies.add(make_policy("token as a key", TOKEN_AS_A_KEY))

    deployment = deploy(world, api)

    assert deployment["status"] == "pending_approval"
    explanation = outcome_of(deployment, "token as a key")["explanation"]
    assert explanation, "explained"
    assert "shared-token-1234" not in str(deployment)
    assert any(MASK in read["path"] for explained in explanation for read in explained["reads"])
    client = Client()
    client.force_login(world.vera)  # a viewer: the lowest role that reads the explanation
    page = client.get(f"/deployments/{deployment['id']}/")
    assert page.status_code == 200 and "shared-token-1234" not in page.content.decode()
    send_approval_emails(deployment["id"])
    assert mail.outbox and all("shared-token-1234" not in message.body for message in mail.outbox)
