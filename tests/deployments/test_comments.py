"""Comments on a deployment through the API, each rule tried with the lowest role that reaches it: a viewer
reads, a deployer posts, the author or an organisation admin removes; another project's user finds nothing."""

import json

import pytest

from policies_app.deployments import comments
from policies_app.models import (
    AuditEntry,
    Deployment,
    DeploymentComment,
    Environment,
    OrganisationMembership,
    Project,
    ProjectMembership,
    WebhookDelivery,
)
from policies_app.notifications import webhooks
from tests.builders import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def deployment(world):
    return Deployment.objects.create(
        environment=world.environment, deployer=world.bob, status="pending_approval", decision="pending"
    )


def thread_url(deployment):
    return f"/api/v1/deployments/{deployment.pk}/comments/"


def test_a_deployer_posts_and_a_viewer_reads_the_thread_oldest_first(world, api, deployment):
    first = api(world.bob).post(thread_url(deployment), {"body": "  plan looks big\nwhy?  "}, format="json")
    assert first.status_code == 201, first.content
    assert first.json()["body"] == "plan looks big\nwhy?"
    assert first.json()["author"] == "bob"
    api(world.alice).post(thread_url(deployment), {"body": "a rename"}, format="json")

    read = api(world.vera).get(thread_url(deployment))

    assert read.status_code == 200
    assert read.json()["count"] == 2
    assert [(c["author"], c["body"]) for c in read.json()["results"]] == [
        ("bob", "plan looks big\nwhy?"),
        ("alice", "a rename"),
    ]


def test_a_viewer_and_an_auditor_may_read_but_not_post(world, api, deployment):
    auditor = make_user("audrey")
    OrganisationMembership.objects.create(user=auditor, role="auditor")
    for reader in (world.vera, auditor):
        answer = api(reader).post(thread_url(deployment), {"body": "hi"}, format="json")
        assert answer.status_code == 403, answer.content
        assert answer.json()["code"] == "may_not_comment"
        assert api(reader).get(thread_url(deployment)).status_code == 200
    assert not DeploymentComment.objects.exists()


def test_a_user_of_another_project_and_an_outsider_find_no_thread(world, api, deployment):
    elsewhere = Project.objects.create(name="Elsewhere")
    ProjectMembership.objects.create(project=elsewhere, user=world.charlie, role="admin")
    comments.post_comment(world.bob, deployment, "secret-ish talk")
    assert api(world.charlie).get(thread_url(deployment)).status_code == 404
    assert api(world.charlie).post(thread_url(deployment), {"body": "x"}, format="json").status_code == 404
    comment = DeploymentComment.objects.get()
    removal = api(world.charlie).delete(f"{thread_url(deployment)}{comment.pk}/")
    assert removal.status_code == 404
    assert DeploymentComment.objects.get().removed_at is None


@pytest.mark.parametrize(
    ("body", "message"),
    [("", "cannot be empty"), ("   \n ", "cannot be empty"), ("x" * 4001, "At most 4000 characters")],
)
def test_an_empty_or_too_long_body_is_refused_on_its_field(world, api, deployment, body, message):
    answer = api(world.bob).post(thread_url(deployment), {"body": body}, format="json")
    assert answer.status_code == 400
    assert message in " ".join(answer.json()["body"])
    assert not DeploymentComment.objects.exists()


def test_a_body_of_exactly_the_limit_is_kept(world, api, deployment):
    answer = api(world.bob).post(thread_url(deployment), {"body": "y" * 4000}, format="json")
    assert answer.status_code == 201


def test_only_the_author_or_an_organisation_admin_removes_a_comment(world, api, deployment):
    comment = comments.post_comment(world.bob, deployment, "mine")
    url = f"{thread_url(deployment)}{comment.pk}/"
    # Another member who may comment, even an approver, may not remove someone else's.
    refused = api(world.alice).delete(url)
    assert refused.status_code == 403
    assert refused.json()["code"] == "not_own_comment"
    assert api(world.bob).delete(url).status_code == 204
    shown = api(world.vera).get(thread_url(deployment)).json()["results"]
    assert shown == [
        {
            "id": comment.pk,
            "author": "bob",
            "body": "",
            "created_at": shown[0]["created_at"],
            "removed_at": shown[0]["removed_at"],
            "removed_by": "bob",
        }
    ]
    assert api(world.bob).delete(url).status_code == 409

    other = comments.post_comment(world.alice, deployment, "approver's")
    organisation_admin = make_user("olga")
    OrganisationMembership.objects.create(user=organisation_admin, role="admin")
    assert api(organisation_admin).delete(f"{thread_url(deployment)}{other.pk}/").status_code == 204


def test_a_comment_of_another_deployment_is_not_found_through_this_one(world, api, deployment):
    other = Deployment.objects.create(environment=world.environment, deployer=world.bob)
    comment = comments.post_comment(world.bob, other, "there")
    assert api(world.bob).delete(f"{thread_url(deployment)}{comment.pk}/").status_code == 404
    assert api(world.bob).delete(f"{thread_url(deployment)}{10**30}/").status_code == 404


def test_posting_and_removing_are_audited_without_the_text(world, api, deployment):
    comment = comments.post_comment(world.bob, deployment, "my password is hunter2")
    comments.remove_comment(world.bob, comment)
    entries = list(AuditEntry.objects.filter(action__startswith="deployment.comment").order_by("pk"))
    assert [e.action for e in entries] == ["deployment.commented", "deployment.comment_removed"]
    assert all(e.project_id == world.payments_eu.pk for e in entries)
    assert entries[1].after["removed_by"] == "bob"
    assert "hunter2" not in json.dumps([e.before for e in entries] + [e.after for e in entries])
    assert "hunter2" not in DeploymentComment.objects.get().body


def test_a_comment_goes_to_the_webhooks_that_send_every_event(world, deployment, loopback_allowed):
    everything = webhooks.create_webhook(world.admin, world.platform, name="all", url="http://127.0.0.1:9/")
    webhooks.create_webhook(
        world.admin, world.platform, name="denials", url="http://127.0.0.1:9/", statuses=["denied"]
    )
    chat = webhooks.create_webhook(
        world.admin, world.payments, name="chat", url="http://127.0.0.1:9/", format="chat"
    )
    comments.post_comment(world.bob, deployment, "<!channel> look")
    deliveries = {d.webhook: d for d in WebhookDelivery.objects.filter(event="deployment.commented")}
    assert set(deliveries) == {everything, chat}
    body = json.loads(deliveries[everything].body)
    assert body["comment"]["body"] == "<!channel> look"
    assert body["deployment"]["id"] == deployment.pk
    text = json.loads(deliveries[chat].body)["text"]
    assert "&lt;!channel&gt; look" in text and "<!channel>" not in text


def test_a_deployer_of_a_sibling_project_finds_no_thread(world, api):
    """The role is read on the deployment's project or above: a deployer of a sibling project sees nothing."""
    sibling = Project.objects.create(name="Sibling", parent=world.platform)
    Environment.objects.create(name="dev", project=sibling, template=world.template)
    dora = make_user("dora")
    ProjectMembership.objects.create(project=sibling, user=dora, role="deployer")
    deployment = Deployment.objects.create(environment=world.environment, deployer=world.bob)
    assert api(dora).get(thread_url(deployment)).status_code == 404
    assert comments.may_comment(world.bob, deployment)
