"""The thread on a deployment's page: read by whoever may see the deployment, posted by deployers and up
(POST, redirect, GET; CSRF checked), text escaped with its line breaks, refusals shown where they happen."""

import pytest
from django.test import Client

from policies_app.deployments import comments
from policies_app.models import Deployment, DeploymentComment, Project, ProjectMembership

pytestmark = pytest.mark.django_db


@pytest.fixture
def deployment(world):
    return Deployment.objects.create(
        environment=world.environment, deployer=world.bob, status="pending_approval", decision="pending"
    )


def page(deployment):
    return f"/deployments/{deployment.pk}/"


def test_a_deployer_posts_a_comment_and_lands_on_it(client, world, deployment):
    client.force_login(world.bob)
    answer = client.post(f"/deployments/{deployment.pk}/comments/", {"body": "first line\nsecond line"})
    comment = DeploymentComment.objects.get()
    assert answer.status_code == 302
    assert answer["Location"] == f"/deployments/{deployment.pk}/#comment-{comment.pk}"
    shown = client.get(page(deployment)).content.decode()
    assert "first line<br>second line" in shown
    assert '<time datetime="' in shown.split(f'id="comment-{comment.pk}"')[1].split("</li>")[0]


def test_script_in_a_comment_is_shown_as_text(client, world, deployment):
    comments.post_comment(world.bob, deployment, '<script>alert("x")</script><b>bold</b>')
    client.force_login(world.vera)
    shown = client.get(page(deployment)).content.decode()
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;" in shown
    assert '<script>alert("x")' not in shown


def test_a_viewer_reads_the_thread_without_a_form_and_cannot_post(client, world, deployment):
    comments.post_comment(world.bob, deployment, "looks fine")
    client.force_login(world.vera)
    shown = client.get(page(deployment)).content.decode()
    assert "looks fine" in shown
    assert 'name="body"' not in shown
    refused = client.post(f"/deployments/{deployment.pk}/comments/", {"body": "me too"})
    assert refused.status_code == 403
    assert "Only deployers, approvers and admins" in refused.content.decode()
    assert DeploymentComment.objects.count() == 1


def test_a_user_of_another_project_gets_404(client, world, deployment):
    comments.post_comment(world.bob, deployment, "internal")
    elsewhere = Project.objects.create(name="Elsewhere")
    ProjectMembership.objects.create(project=elsewhere, user=world.charlie, role="admin")
    client.force_login(world.charlie)
    assert client.get(page(deployment)).status_code == 404
    assert client.post(f"/deployments/{deployment.pk}/comments/", {"body": "x"}).status_code == 404
    comment = DeploymentComment.objects.get()
    removal = client.post(f"/deployments/{deployment.pk}/comments/{comment.pk}/remove/")
    assert removal.status_code == 404
    assert DeploymentComment.objects.get().removed_at is None


def test_an_empty_comment_is_refused_beside_its_field_with_the_text_kept(client, world, deployment):
    client.force_login(world.bob)
    answer = client.post(f"/deployments/{deployment.pk}/comments/", {"body": "   "})
    assert answer.status_code == 400
    shown = answer.content.decode()
    assert 'id="id_body_error"' in shown and "cannot be empty" in shown
    long = client.post(f"/deployments/{deployment.pk}/comments/", {"body": "z" * 4001})
    assert long.status_code == 400
    assert "z" * 4001 in long.content.decode()  # kept to be shortened, not lost
    assert not DeploymentComment.objects.exists()


def test_only_the_author_sees_and_uses_remove(client, world, deployment):
    comment = comments.post_comment(world.bob, deployment, "oops, pasted the wrong thing")
    remove = f"/deployments/{deployment.pk}/comments/{comment.pk}/remove/"
    client.force_login(world.alice)
    assert remove not in client.get(page(deployment)).content.decode()
    assert client.post(remove).status_code == 403
    client.force_login(world.bob)
    assert remove in client.get(page(deployment)).content.decode()
    assert client.post(remove).status_code == 302
    shown = client.get(page(deployment)).content.decode()
    assert "oops, pasted" not in shown and "Removed by bob" in shown


def test_posting_needs_the_csrf_token(world, deployment):
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(world.bob)
    assert strict.post(f"/deployments/{deployment.pk}/comments/", {"body": "hi"}).status_code == 403
    assert not DeploymentComment.objects.exists()
